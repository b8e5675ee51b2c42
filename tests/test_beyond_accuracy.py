"""Beyond accuracy in the scored run, the report and the leaderboard: calibration, subgroups, paired language
differences and reply lengths (issue 17), each number recomputed here from the logged samples."""

import json
import math
import re
import shutil
from collections import defaultdict

import numpy as np
import pytest
from lm_eval_tasks.utils import calibration, formats, leaderboard, lengths, stats
from lm_eval_tasks.utils.accuracy import SMALL_GROUP
from lm_eval_tasks.utils.benchmarks import report_specs
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.report import write_report
from lm_eval_tasks.utils.results import score_path
from lm_eval_tasks.utils.runs import Run
from lm_eval_tasks.utils.scoring import INVALID, ScoredItem
from lm_eval_tasks.utils.section import score_section
from sklearn.metrics import brier_score_loss

from tests.by_definition import hand_binned_ece
from tests.conftest import read_samples
from tests.hand_runs import REPLIES, write_run
from tests.runs import evaluated_run
from tests.tiny_model import tiny_tokenizer

TASKS = ("pubmedqa_atlas_n100", "medexqa_logit_be", "millerqa_triage", "millerqa_ll_global_mmlu")


@pytest.fixture(scope="module")
def run_dir(demo_data_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("beyond")
    # every item of each task (global_mmlu: 47 questions in 15 languages), so the language pairs are complete
    return evaluated_run(root / "run", demo_data_dir, TASKS, limit=None)


@pytest.fixture(scope="module")
def report(run_dir):
    scored, written = write_report(run_dir)
    folder = written[0].parent
    return json.loads((folder / "report.json").read_text(encoding="utf-8")), folder, scored


def softmax(values):
    values = np.asarray(values, dtype=float)
    exp = np.exp(values - values.max())
    return exp / exp.sum()


def _loglikelihood_forecasts(run_dir, task, gold_index):
    """(confidence, correct, probabilities, gold) per logged sample, recomputed from filtered_resps."""
    rows = []
    for sample in read_samples(run_dir, task):
        lls = [float(pair[0]) for pair in sample["filtered_resps"]]
        probabilities = softmax(lls)
        gold = gold_index(sample["doc"])
        predicted = int(np.argmax(lls))  # numpy's argmax also takes the first of a tie
        rows.append((probabilities[predicted], predicted == gold, probabilities, gold))
    return rows


@pytest.mark.parametrize(
    "section, task, gold_index",
    [
        ("pubmedqa_atlas_n100", "pubmedqa_atlas_n100", lambda doc: ["yes", "no", "maybe"].index(doc["final_decision"])),
        ("medexqa_logit", "medexqa_logit_be", lambda doc: "ABCD".index(doc["answer"])),
        ("millerqa_ll", "millerqa_ll_global_mmlu", lambda doc: doc["permutation"].index(doc["target"])),
    ],
)
def test_loglikelihood_calibration_recomputed_from_the_samples(report, run_dir, section, task, gold_index):
    cal = report[0]["benchmarks"][section]["calibration"]
    rows = _loglikelihood_forecasts(run_dir, task, gold_index)
    confidences, correct = [r[0] for r in rows], [r[1] for r in rows]
    brier = np.mean([np.sum((r[2] - np.eye(len(r[2]))[r[3]]) ** 2) for r in rows])
    assert cal["source"] == "choice_probabilities" and cal["brier_kind"] == "multiclass"
    assert cal["n"] == len(rows) and cal["left_out"] == {"invalid": 0}
    assert cal["ece"]["value"] == pytest.approx(hand_binned_ece(confidences, correct))
    assert cal["brier"]["value"] == pytest.approx(brier)
    for estimate in (cal["ece"], cal["brier"]):
        assert estimate["low"] <= estimate["value"] <= estimate["high"] and estimate["low"] < estimate["high"]
    counts = [b["n"] for b in cal["reliability"]]
    assert counts == np.bincount(np.minimum((np.asarray(confidences) * 10).astype(int), 9), minlength=10).tolist()


def test_the_calibration_ci_is_stratified_as_the_headline(report, run_dir):
    """PubMedQA resamples keep the gold counts: the ECE CI is the bootstrap stratified by gold answer, over the
    items in (task, doc_id) order."""
    cal = report[0]["benchmarks"]["pubmedqa_atlas_n100"]["calibration"]
    samples = sorted(read_samples(run_dir, "pubmedqa_atlas_n100"), key=lambda s: s["doc_id"])
    confidences, correct = [], []
    for sample in samples:
        lls = [float(pair[0]) for pair in sample["filtered_resps"]]
        confidences.append(softmax(lls).max())
        correct.append(["yes", "no", "maybe"][int(np.argmax(lls))] == sample["doc"]["final_decision"])
    confidences, correct = np.asarray(confidences), np.asarray(correct)
    looped = stats.bootstrap(
        stats.per_resample(lambda index: hand_binned_ece(confidences[index], correct[index])),
        len(samples),
        strata=[s["doc"]["final_decision"] for s in samples],
    )
    assert (cal["ece"]["value"], cal["ece"]["low"], cal["ece"]["high"]) == pytest.approx(
        (looped.value, looped.low, looped.high)
    )


def test_an_invalid_item_is_left_out_of_calibration_and_counted(run_dir, tmp_path):
    """A NaN log-likelihood (an fp16 overflow) makes an item INVALID: no forecast, counted under left_out."""
    spec = next(s for s in report_specs() if s.name == "pubmedqa_atlas_n100")
    samples = sorted(read_samples(run_dir, "pubmedqa_atlas_n100"), key=lambda s: s["doc_id"])
    samples[0]["filtered_resps"][1] = ["nan", "False"]
    items = [spec.score_sample("pubmedqa_atlas_n100", sample) for sample in samples]
    cal = score_section(items, spec, Run(tmp_path / "r.json", {"n-samples": {}}, {}, {})).numbers["calibration"]
    assert items[0].pred == INVALID and items[0].forecast is None
    assert cal["left_out"] == {"invalid": 1} and cal["n"] == 99 == sum(b["n"] for b in cal["reliability"])
    rest = samples[1:]
    lls = [[float(pair[0]) for pair in sample["filtered_resps"]] for sample in rest]
    confidences = [softmax(values).max() for values in lls]
    correct = [["yes", "no", "maybe"][int(np.argmax(v))] == s["doc"]["final_decision"] for v, s in zip(lls, rest)]
    assert cal["ece"]["value"] == pytest.approx(hand_binned_ece(confidences, correct))


@pytest.mark.parametrize("name", ["pubmedqa_atlas", "pubmedqa_lm_eval_builtin"])
def test_every_pubmedqa_choice_spec_forecasts_from_its_three_loglikelihoods(name):
    """yes / no / maybe at -1, -2, -3 nats: p = e^-1, e^-2, e^-3 over their sum; gold no: Brier
    p_yes^2 + (p_no - 1)^2 + p_maybe^2."""
    spec = next(s for s in report_specs() if s.name == name)
    sample = {
        "doc_id": 0,
        "doc": {"final_decision": "no"},
        "filtered_resps": [["-1", "False"], ["-2", "False"], ["-3", "False"]],
    }
    forecast = spec.score_sample(next(iter(spec.task_names)), sample).forecast
    total = math.exp(-1) + math.exp(-2) + math.exp(-3)
    p = [math.exp(-1) / total, math.exp(-2) / total, math.exp(-3) / total]
    assert forecast.probabilities == pytest.approx(p) and forecast.confidence == pytest.approx(p[0])
    assert forecast.correct is False and forecast.gold_choice == 1
    assert calibration.brier_values([forecast])[0] == pytest.approx(p[0] ** 2 + (p[1] - 1) ** 2 + p[2] ** 2)


def test_stated_confidence_calibration_of_the_generative_millerqa(report):
    _, folder, _ = report
    cal = report[0]["benchmarks"]["millerqa"]["calibration"]
    records = [json.loads(line) for line in (folder / "items_millerqa.jsonl").read_text().splitlines()]
    answered = [r for r in records if r["is_correct"] is not None]
    given = [r for r in answered if r["confidence"] is not None]
    confidence = [r["confidence"] / 100 for r in given]
    correct = [int(r["is_correct"]) for r in given]
    assert cal["source"] == "stated_confidence" and cal["brier_kind"] == "binary"
    assert cal["left_out"] == {
        "invalid": len(records) - len(answered),
        "no_stated_confidence": len(answered) - len(given),
    }
    assert cal["n"] == len(given) > 20
    assert cal["brier"]["value"] == pytest.approx(brier_score_loss(correct, confidence))
    assert cal["ece"]["value"] == pytest.approx(hand_binned_ece(confidence, correct))


def test_subgroups_pubmedqa_by_gold_answer_are_each_answers_recall(report):
    bench = report[0]["benchmarks"]["pubmedqa_atlas_n100"]
    groups = bench["subgroups"]
    assert set(groups) == {"gold yes", "gold no", "gold maybe"}
    for label in ("yes", "no", "maybe"):
        entry = groups[f"gold {label}"]
        assert entry["accuracy"]["value"] == pytest.approx(bench["per_class"][label]["recall"])
        assert entry["n"] == bench["per_class"][label]["support"]
        assert entry["small"] == (entry["n"] < SMALL_GROUP)
    assert groups["gold maybe"]["n"] == 11 and groups["gold maybe"]["small"]  # 55 / 34 / 11 in n100
    assert not groups["gold yes"]["small"]


def test_millerqa_subgroups_are_the_items_kind(report, run_dir):
    groups = report[0]["benchmarks"]["millerqa_ll"]["subgroups"]
    by_language = defaultdict(list)
    for sample in read_samples(run_dir, "millerqa_ll_global_mmlu"):
        doc = sample["doc"]
        by_language[doc["kind"]].append(
            float(doc["permutation"][int(np.argmax([float(p[0]) for p in sample["filtered_resps"]]))] == doc["target"])
        )
    assert set(groups) == {f"global_mmlu / {kind}" for kind in by_language}
    assert len(groups) == 15
    for kind, flags in by_language.items():
        assert groups[f"global_mmlu / {kind}"]["n"] == 47
        assert groups[f"global_mmlu / {kind}"]["accuracy"]["value"] == pytest.approx(np.mean(flags))


def test_global_mmlu_language_gaps_are_paired_on_the_same_questions(report, run_dir):
    paired = report[0]["benchmarks"]["millerqa_ll"]["paired_variants"]
    correct = {}
    for sample in read_samples(run_dir, "millerqa_ll_global_mmlu"):
        doc = sample["doc"]
        question, language = doc["id"].rsplit("/", 1)
        chosen = doc["permutation"][int(np.argmax([float(p[0]) for p in sample["filtered_resps"]]))]
        correct[language, question] = float(chosen == doc["target"])
    questions = sorted(q for lang, q in correct if lang == "en")
    assert paired["reference"] == "en" and paired["metric"] == "accuracy" and len(paired["variants"]) == 14
    for language, entry in paired["variants"].items():
        diffs = np.asarray([correct[language, q] - correct["en", q] for q in questions])
        assert entry["n_pairs"] == 47 and entry["unpaired"] == entry["reference_unpaired"] == 0 and not entry["small"]
        assert entry["difference"]["value"] == pytest.approx(diffs.mean())
        looped = stats.bootstrap(stats.per_resample(lambda index, d=diffs: d[index].mean()), len(diffs))
        assert (entry["difference"]["low"], entry["difference"]["high"]) == pytest.approx((looped.low, looped.high))


def _millerqa_item(question, language, correct, answered=True, component="global_mmlu"):
    return ScoredItem(
        task="millerqa_global_mmlu",
        doc_id=hash((question, language)) % 10**6,
        doc_hash="",
        component=component,
        gold="0",
        pred=("0" if correct else "1") if answered else INVALID,
        correct=float(correct and answered),
        details={
            "id": f"professional_medicine/test/{question}/{language}",
            "kind": f"professional_medicine | {language}",
        },
    )


def test_hand_worked_paired_language_difference_counts_unanswered_wrong_and_unpaired_items(tmp_path):
    """en right on q1, q2; fr right on q1 only, q3 unanswered; fr's q4 has no English twin; de has no pair at all.

    fr - en on q1..q3: (1-1) + (0-1) + (0-0) = -1 over 3 pairs."""
    spec = next(s for s in report_specs() if s.name == "millerqa")
    items = [
        _millerqa_item(1, "en", True),
        _millerqa_item(2, "en", True),
        _millerqa_item(3, "en", False),
        _millerqa_item(1, "fr", True),
        _millerqa_item(2, "fr", False),
        _millerqa_item(3, "fr", False, answered=False),
        _millerqa_item(4, "fr", True),
        _millerqa_item(9, "de", True),
        _millerqa_item(1, "x", True, component="triage"),  # no variant: not global_mmlu
    ]
    run = Run(tmp_path / "r.json", {"n-samples": {}}, {}, {})
    numbers = score_section(items, spec, run).numbers
    paired = numbers["paired_variants"]
    assert paired["metric"] == "accuracy_all"
    assert set(paired["variants"]) == {"fr", "de"}
    fr = paired["variants"]["fr"]
    assert (fr["n_pairs"], fr["unpaired"], fr["reference_unpaired"], fr["small"]) == (3, 1, 0, True)
    assert fr["difference"]["value"] == pytest.approx(-1 / 3)
    assert (fr["accuracy"], fr["reference_accuracy"]) == pytest.approx((1 / 3, 2 / 3))
    assert paired["variants"]["de"] == {"n_pairs": 0, "small": True, "unpaired": 1, "reference_unpaired": 3}
    # subgroups: the items' kind within their benchmark, accuracy over answered items for the generative protocol
    fr_group = numbers["subgroups"]["global_mmlu / professional_medicine | fr"]
    assert fr_group["n"] == 4 and fr_group["accuracy"]["value"] == pytest.approx(2 / 3)
    assert fr_group["accuracy_all"]["value"] == pytest.approx(2 / 4)


def test_without_the_reference_language_the_differences_say_why(tmp_path):
    spec = next(s for s in report_specs() if s.name == "millerqa_ll")
    items = [_millerqa_item(1, "fr", True), _millerqa_item(1, "de", False)]
    paired = score_section(items, spec, Run(tmp_path / "r.json", {"n-samples": {}}, {}, {})).numbers["paired_variants"]
    assert paired["variants"] == {} and "'en'" in paired["reason"]


def test_components_say_how_small_they_are(report):
    components = report[0]["benchmarks"]["medexqa_logit"]["components"]
    assert components["BE"]["n"] == 143 and components["BE"]["small"] is False
    triage = report[0]["benchmarks"]["millerqa"]["components"]["triage"]
    assert triage["small"] is False and triage["n"] == 84


# ----------------------------------------------------------------------------- reply lengths


def test_reply_lengths_are_in_words_without_tokenizer_even_when_the_run_s_folder_loads(tmp_path, tiny_model_dir):
    run = write_run(
        tmp_path / "run" / "m", {"medfact_bench_scifact": REPLIES}, model_args={"pretrained": str(tiny_model_dir)}
    )
    numbers = score_path(run).sections["medfact_bench"].numbers["reply_lengths"]
    # words: 7 ("<think>The ... mortality.</think><score>2</score>" splits at 6 spaces), 3, 0
    assert numbers["unit"] == "words" and numbers["unit_source"].startswith("words: no --tokenizer given")
    assert (numbers["n"], numbers["min"], numbers["median"], numbers["max"]) == (3, 0.0, 3.0, 7.0)
    assert numbers["mean"] == pytest.approx(10 / 3)
    assert numbers["hit_max_gen_toks"] is None and numbers["max_gen_toks"] == [1024]


def test_reply_lengths_in_tokens_of_the_run_s_tokenizer_and_replies_that_reached_max_gen_toks(tmp_path, tiny_model_dir):
    counts = tiny_tokenizer(tiny_model_dir, tmp_path / "tok")
    budget = sorted(counts)[1]  # the middle reply reaches it exactly, the longest passes it, the empty one does not
    generation = {"until": [], "max_gen_toks": budget, "do_sample": False}
    run = write_run(
        tmp_path / "run" / "m",
        {"medfact_bench_scifact": REPLIES},
        model_args={"pretrained": str(tmp_path / "tok")},
        generation=generation,
    )
    results = json.loads(next(run.glob("results_*.json")).read_text())
    results["total_evaluation_time_seconds"] = "12.5"
    next(run.glob("results_*.json")).write_text(json.dumps(results))
    numbers = score_path(run, lengths.RUN).sections["medfact_bench"].numbers["reply_lengths"]
    assert numbers["unit"] == "tokens" and numbers["unit_source"] == f"tokens: the tokenizer of {tmp_path / 'tok'}"
    assert (numbers["min"], numbers["max"]) == (float(min(counts)), float(max(counts)))
    assert numbers["mean"] == pytest.approx(np.mean(counts))
    assert numbers["hit_max_gen_toks"] == {"n": 2, "of": 3, "share": pytest.approx(2 / 3)}
    assert numbers["max_gen_toks"] == [budget] and "evaluation_time_seconds" not in numbers  # the run's, once
    assert score_path(run).provenance["evaluation_time_seconds"] == 12.5
    # A named tokenizer counts the same, whatever the run names.
    other = write_run(tmp_path / "other" / "m", {"medfact_bench_scifact": REPLIES}, generation=generation)
    named = score_path(other, str(tmp_path / "tok")).sections["medfact_bench"].numbers["reply_lengths"]
    assert {k: v for k, v in named.items() if k != "unit_source"} == {
        k: v for k, v in numbers.items() if k != "unit_source"
    }


def test_a_tokenizer_that_cannot_be_loaded_is_an_error_naming_it(tmp_path, tiny_model_dir):
    tiny_tokenizer(tiny_model_dir, tmp_path / "tok")
    run = write_run(
        tmp_path / "run" / "m", {"medfact_bench_scifact": REPLIES}, model_args={"pretrained": str(tmp_path / "tok")}
    )
    shutil.rmtree(tmp_path / "tok")  # the run's model folder is gone since the run: an error, never words
    with pytest.raises(
        DataError, match=re.escape(f"--tokenizer 'run': cannot load the tokenizer '{tmp_path / 'tok'}'")
    ):
        score_path(run, lengths.RUN)
    with pytest.raises(DataError, match="--tokenizer 'no/such-model': cannot load the tokenizer 'no/such-model'"):
        score_path(run, "no/such-model")
    with pytest.raises(DataError, match="--tokenizer: no name given"):
        score_path(run, " ")
    nameless = write_run(tmp_path / "api" / "m", {"medfact_bench_scifact": REPLIES}, model_args={"model": "gpt-x"})
    with pytest.raises(DataError, match="the run's model_args name no tokenizer= or pretrained="):
        score_path(nameless, lengths.RUN)
    assert score_path(nameless).sections["medfact_bench"].numbers["reply_lengths"]["unit"] == "words"


@pytest.mark.parametrize(
    "name, shown",
    [
        ("https://user:PASSWORD@host/x", "'https://user:***@host/x'"),
        ("x" * 300, "'" + "x" * 300 + "'"),  # longer than a file name may be: the same error, not an OSError
        ("a\nb", "'a\\nb'"),  # on one line
    ],
)
def test_the_error_names_the_tokenizer_masked_on_one_line(tmp_path, capsys, name, shown):
    from lm_eval_tasks.__main__ import main

    run = write_run(tmp_path / "run" / "m", {"medfact_bench_scifact": REPLIES})
    assert main(["report", str(run), "--tokenizer", name]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and f"cannot load the tokenizer {shown} offline" in error
    assert "PASSWORD" not in error and not (run / "report").exists()


def test_a_password_in_the_tokenizer_s_name_reaches_no_file(tmp_path, tiny_model_dir, monkeypatch, capsys):
    from lm_eval_tasks.__main__ import main

    # A folder the name reaches as a path ("https:/user:PASSWORD@host/x"), so the tokenizer loads.
    tiny_tokenizer(tiny_model_dir, tmp_path / "https:" / "user:PASSWORD@host" / "x")
    monkeypatch.chdir(tmp_path)
    run = write_run(tmp_path / "run" / "m", {"medfact_bench_scifact": REPLIES})
    assert main(["report", str(run), "--tokenizer", "https://user:PASSWORD@host/x"]) == 0
    lengths_ = json.loads((run / "report" / "report.json").read_text())["benchmarks"]["medfact_bench"]["reply_lengths"]
    assert (lengths_["unit"], lengths_["unit_source"]) == ("tokens", "tokens: the tokenizer of https://user:***@host/x")
    assert not [path for path in (run / "report").iterdir() if b"PASSWORD" in path.read_bytes()]
    assert "PASSWORD" not in capsys.readouterr().out


def test_a_tokenizer_is_loaded_once_per_command_and_only_for_a_generative_section(
    tmp_path, tiny_model_dir, demo_data_dir, monkeypatch
):
    from transformers import AutoTokenizer

    tiny_tokenizer(tiny_model_dir, tmp_path / "tok")
    loads = []
    real = AutoTokenizer.from_pretrained
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", lambda name, **kw: loads.append(name) or real(name, **kw))
    runs = [write_run(tmp_path / f"run{i}" / "m", {"medfact_bench_scifact": REPLIES}) for i in range(3)]
    scored = list(leaderboard.score_runs(runs, workers=1, tokenizer=str(tmp_path / "tok")))
    assert loads == [str(tmp_path / "tok")]  # three runs, one load
    assert [run.sections["medfact_bench"].numbers["reply_lengths"]["unit"] for run in scored] == ["tokens"] * 3
    # A run with no generative section loads nothing: a tokenizer that does not exist is never asked for.
    logit = evaluated_run(tmp_path / "logit", demo_data_dir, ("pubmedqa_atlas_n100",), limit=3)
    assert "reply_lengths" not in score_path(logit, "no/such-model").sections["pubmedqa_atlas_n100"].numbers
    assert loads == [str(tmp_path / "tok")]


def test_a_request_without_a_logged_budget_is_counted_not_guessed():
    counter = lengths.LengthCounter(lengths.TOKENS, len, "characters standing in for tokens")
    out = lengths.summary([5, 9, 2], [5, None, 8], counter)
    assert out["hit_max_gen_toks"] == {"n": 1, "of": 2, "share": 0.5}
    assert out["n_max_gen_toks_not_logged"] == 1 and out["max_gen_toks"] == [5, 8]
    assert lengths.summary([], [], counter)["mean"] is None


def test_loglikelihood_sections_have_no_reply_lengths(report):
    assert "reply_lengths" not in report[0]["benchmarks"]["pubmedqa_atlas_n100"]
    assert report[0]["benchmarks"]["millerqa"]["reply_lengths"]["n"] == 84


# ----------------------------------------------------------------------------- views


def test_report_files_show_calibration_subgroups_gaps_and_lengths(report):
    data, folder, _ = report
    assert data["schema_version"] == "2.6"
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    ece = data["benchmarks"]["pubmedqa_atlas_n100"]["calibration"]["ece"]
    assert f"- ECE: {stats.format_estimate(ece)}" in markdown
    assert "| gold maybe | 11 (small: n < 30) |" in markdown
    assert "Each variant minus `en` on the same questions" in markdown
    assert "Reply lengths in words" in markdown
    assert {p.name for p in folder.glob("reliability_*.png")} == {
        f"reliability_{name}.png" for name in ("pubmedqa_atlas_n100", "medexqa_logit", "millerqa", "millerqa_ll")
    }
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert f'data-value="{ece["value"]!r}"' in page and 'class="ece"' in page
    assert "reliability diagram of" in page and 'class="paired-difference"' in page
    assert "Reply lengths (words)" in page


def test_the_leaderboard_shows_each_runs_ece(run_dir, report):
    board = leaderboard.build([run_dir])[0]
    assert board["schema_version"] == "2.6"
    ece = report[0]["benchmarks"]["medexqa_logit"]["calibration"]["ece"]
    assert board["benchmarks"]["medexqa_logit"]["runs"]["run-1"]["ece"] == ece
    assert "ECE [95% CI]" in formats.to_markdown(board)
    assert f"| {stats.format_estimate(ece)} |" in formats.to_markdown(board)
    rows = [line.split(",") for line in formats.to_csv(board).splitlines()]
    medexqa = next(row for row in rows if row[:2] == ["run", "medexqa_logit"])
    assert rows[0][-1] == "ece" and float(medexqa[-1]) == pytest.approx(ece["value"])


def test_a_tokenizer_with_its_own_code_never_runs_it_nor_asks(tmp_path, tiny_model_dir):
    # A run folder's tokenizer_config.json with an auto_map: transformers would ask on the terminal, then run it.
    import shutil
    import subprocess
    import sys

    folder = tmp_path / "tok"
    shutil.copytree(tiny_model_dir, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["auto_map"] = {"AutoTokenizer": [None, "planted.PlantedTokenizer"]}
    config["tokenizer_class"] = "PlantedTokenizer"
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    marker = tmp_path / "ran"
    (folder / "planted.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "from transformers import PreTrainedTokenizerFast\nclass PlantedTokenizer(PreTrainedTokenizerFast):\n    pass\n"
    )
    code = f"from lm_eval_tasks.utils import lengths; print(lengths.counter({str(folder)!r}, None).count('a b'))"
    done = subprocess.run([sys.executable, "-c", code], input="y\n", capture_output=True, text=True, timeout=300)
    assert not marker.exists(), done.stdout + done.stderr
    # Its own class is loaded without the planted code (or the load is refused): never a question on the terminal.
    assert "trust_remote_code" not in done.stdout and (done.returncode == 0 or "cannot load" in done.stderr)
