"""MillerQA through lm-eval's real evaluator with a scripted model: prompts, exact metrics, groups, report."""

import json

import pytest
from lm_eval import simple_evaluate
from lm_eval.tasks import TaskManager
from lm_eval_tasks.utils import report as report_mod
from lm_eval_tasks.utils.data import DataError
from lm_eval_tasks.utils.millerqa import constants, medbullets, prompts, tasks

from lm_eval_tasks import tasks_dir
from tests.conftest import build_report
from tests.runs import save_run
from tests.scripted_lm import ScriptedLM

LABEL = "gpt-4o"
LEGAL = [f"{code}_legalbench" for code in ("ipi", "lhb", "lhh", "oad", "odr", "ods", "ofp", "otp", "tos")]


def task_manager(data_dir, **metadata):
    return TaskManager(
        include_path=tasks_dir(),
        include_defaults=False,
        metadata={"data_dir": str(data_dir), "millerqa_model_label": LABEL, **metadata},
    )


def evaluate(lm, data_dir, tasks, metadata=None, **kwargs):
    return simple_evaluate(
        model=lm,
        tasks=tasks,
        task_manager=task_manager(data_dir, **(metadata or {})),
        bootstrap_iters=0,
        log_samples=True,
        **kwargs,
    )


def docs(data_dir, benchmark, label=LABEL, release=constants.CURATED):
    return list(tasks.custom_dataset(benchmark, release, data_dir=str(data_dir), millerqa_model_label=label)["test"])


def test_every_task_and_group_is_registered():
    names = set(TaskManager(include_path=tasks_dir(), include_defaults=False).all_tasks)
    for family in constants.FAMILIES:
        assert {f"{family.prefix}_{b}" for b in constants.BENCHMARKS} <= names
        assert {
            family.prefix,
            f"{family.prefix}_with_medbullets",
            f"{family.prefix}_medical_knowledge_with_medbullets",
            *(f"{family.prefix}_{d}" for d in constants.DIMENSIONS),
        } <= names
    assert "millerqa_tos_legalbench" in names and "millerqa_preqc_cupcase" in names


@pytest.mark.oldest
def test_chat_prompt_is_the_authors_system_and_user_message(shared_data):
    lm = ScriptedLM(reply=lambda prompt: "{}")
    evaluate(lm, shared_data, ["millerqa_hle"], limit=2, apply_chat_template=True)
    for prompt, doc in zip(lm.prompts, docs(shared_data, "hle")):
        assert json.loads(prompt) == [
            {"role": "system", "content": prompts.SYSTEM_PROMPT},
            {"role": "user", "content": prompts.user_prompt(doc["question"], doc["shuffled_options"])},
        ]
    assert lm.gen_kwargs[0] == {"until": [], "do_sample": False, "temperature": 0.0, "max_gen_toks": 512}


@pytest.mark.oldest
def test_plain_prompt_puts_a_blank_line_after_the_system_prompt(shared_data):
    lm = ScriptedLM(reply=lambda prompt: "")
    evaluate(lm, shared_data, ["millerqa_preqc_triage"], limit=1)
    doc = docs(shared_data, "triage", release=constants.PRE_QC)[0]
    assert lm.prompts == [
        prompts.SYSTEM_PROMPT + "\n\n" + prompts.user_prompt(doc["question"], doc["shuffled_options"])
    ]


def test_choice_only_withholds_the_question(shared_data):
    lm = ScriptedLM(reply=lambda prompt: "")
    evaluate(lm, shared_data, ["millerqa_choiceonly_mhqa"], limit=2, apply_chat_template=True)
    for prompt, doc in zip(lm.prompts, docs(shared_data, "mhqa")):
        user = json.loads(prompt)[-1]["content"]
        assert user == prompts.choice_only_prompt(doc["shuffled_options"]) and doc["question"] not in user


def test_the_model_label_comes_from_the_model_arguments(shared_data):
    """lm-eval merges --model_args into the metadata; pretrained=<folder> gives the folder's name."""
    lm = ScriptedLM(reply=lambda prompt: "")
    tm = TaskManager(
        include_path=tasks_dir(),
        include_defaults=False,
        metadata={"data_dir": str(shared_data), "pretrained": "/models/llama-3-1-8b/"},
    )
    out = simple_evaluate(
        model=lm, tasks=["millerqa_hle"], task_manager=tm, bootstrap_iters=0, log_samples=True, limit=1
    )
    doc = out["samples"]["millerqa_hle"][0]["doc"]
    # PROVENANCE test vector: hle id 16 for llama-3-1-8b
    assert (doc["id"], doc["model_label"], doc["permutation"], doc["correct_letter"]) == (
        "16",
        "llama-3-1-8b",
        [0, 3, 1, 4, 2],
        "C",
    )
    assert doc["model_label_derived"] is True


@pytest.mark.parametrize("name", ["model_label", "shuffle_seed"])
def test_a_setting_meant_for_another_benchmark_does_not_reach_millerqa(shared_data, name):
    """--metadata shuffle=true,shuffle_seed=7 for MedExQA used to change MillerQA's shuffle seed too."""
    lm = ScriptedLM(reply=lambda prompt: "")
    with pytest.raises(DataError, match=rf"use millerqa_{name}="):
        evaluate(lm, shared_data, ["millerqa_hle"], metadata={"shuffle": True, name: 7}, limit=1)
    scoped = evaluate(lm, shared_data, ["millerqa_hle"], metadata={"millerqa_shuffle_seed": 7}, limit=1)
    doc = scoped["samples"]["millerqa_hle"][0]["doc"]
    assert (doc["shuffle_seed"], doc["permutation"]) == (7, prompts.permutation("16", LABEL, 5, seed=7))
    assert scoped["configs"]["millerqa_hle"]["metadata"]["version"] == 2.0


# Reply kinds per doc: C correct JSON, W wrong JSON, F fenced correct, K truncated (regex key) correct,
# N no letter, T unclosed think.
PATTERNS = {
    "ipi_legalbench": "CWNCKT",
    "lhb_legalbench": "CFCFCC",
    "lhh_legalbench": "WWWWNN",
    "oad_legalbench": "NNNNNC",
}
DEFAULT_PATTERN = "CWCWCW"


def reply_for(doc, kind):
    n = len(doc["shuffled_options"])
    right, wrong = doc["correct_letter"], constants.LETTERS[(doc["correct_position"] + 1) % n]

    def answer(letter):
        return json.dumps({"selected_answer": letter, "explanation": f"because {doc['id']}", "confidence": 80})

    return {
        "C": answer(right),
        "W": answer(wrong),
        "F": f"```json\n{answer(right)}\n```",
        "K": f'{{"selected_answer": "{right}", "confidence": 40, "explanation": "trunc',
        "N": "no idea",
        "T": f"<think>{answer(right)}",
    }[kind]


def scripted_legal_replies(data_dir):
    by_user_prompt = {}
    for benchmark in LEGAL:
        pattern = PATTERNS.get(benchmark, DEFAULT_PATTERN)
        for doc, kind in zip(docs(data_dir, benchmark), pattern):
            by_user_prompt[prompts.user_prompt(doc["question"], doc["shuffled_options"])] = reply_for(doc, kind)
    return lambda prompt: by_user_prompt[json.loads(prompt)[-1]["content"]]


@pytest.fixture(scope="module")
def legal_run(shared_data):
    lm = ScriptedLM(reply=scripted_legal_replies(shared_data))
    return evaluate(lm, shared_data, ["millerqa_legal_regulatory"], limit=6, apply_chat_template=True)


def test_scripted_group_run_gives_exact_task_and_group_values(legal_run):
    results = legal_run["results"]
    # (acc over answered, acc_all, answered) per task, worked out from the reply patterns
    expected = {
        "ipi_legalbench": (3 / 4, 3 / 6, 4 / 6),
        "lhb_legalbench": (1.0, 1.0, 1.0),
        "lhh_legalbench": (0.0, 0.0, 4 / 6),
        "oad_legalbench": (1.0, 1 / 6, 1 / 6),
    }
    expected |= {b: (0.5, 0.5, 1.0) for b in LEGAL if b not in expected}
    for benchmark, (acc, acc_all, answered) in expected.items():
        row = results[f"millerqa_{benchmark}"]
        assert (row["acc,none"], row["acc_all,none"], row["answered,none"]) == pytest.approx((acc, acc_all, answered))
        assert row["acc_all_micro,none"] == pytest.approx(acc_all)
    group = results["millerqa_legal_regulatory"]
    assert group["acc,none"] == pytest.approx(sum(v[0] for v in expected.values()) / 9)  # macro: 5.25 / 9
    assert group["acc_all,none"] == pytest.approx(sum(v[1] for v in expected.values()) / 9)
    assert group["answered,none"] == pytest.approx(sum(v[2] for v in expected.values()) / 9)
    assert group["acc_all_micro,none"] == pytest.approx(25 / 54)  # pooled over the 54 items
    assert group["answered_micro,none"] == pytest.approx(45 / 54)


def test_each_sample_logs_its_shuffle_and_the_unanswered_as_null(legal_run):
    samples = legal_run["samples"]["millerqa_ipi_legalbench"]
    assert [s["acc"] for s in samples] == [1.0, 0.0, None, 1.0, 1.0, None]
    first = samples[0]
    assert first["target"] == first["doc"]["correct_letter"]
    assert first["doc"]["permutation"] == prompts.permutation(first["doc"]["id"], LABEL, 3)
    assert first["doc"]["model_label"] == LABEL


def test_the_report_recomputes_the_scripted_run(legal_run, tmp_path):
    scored, files = report_mod.write_report(
        save_run(legal_run, tmp_path / "run", model_args="pretrained=scripted"), tmp_path / "report"
    )
    report = scored.report()
    bench = report["benchmarks"]["millerqa"]
    assert bench["n_items"] == 54 and bench["n_invalid"] == 9
    assert bench["accuracy_micro"]["value"] == pytest.approx(25 / 45)  # exact pooled accuracy over answered items
    assert bench["accuracy_macro"]["value"] == pytest.approx(5.25 / 9)
    assert bench["accuracy_all_micro"]["value"] == pytest.approx(25 / 54)
    assert bench["answered"]["value"] == pytest.approx(45 / 54)
    assert bench["rates"]["chance"]["value"] == pytest.approx((48 / 3 + 6 / 9) / 54)  # eight 3-option sets, tos 9
    assert bench["components"]["lhh_legalbench"]["accuracy"]["value"] == 0.0
    assert bench["components"]["oad_legalbench"]["answered"]["value"] == pytest.approx(1 / 6)
    legal = bench["component_groups"]["Legal and Regulatory"]
    assert legal["accuracy_macro"]["value"] == pytest.approx(5.25 / 9) and legal["n"] == 54
    assert "Clinical Judgment" not in bench["component_groups"]
    assert bench["coverage"]["tos_legalbench"] == {"expected": 298, "loaded": 298, "scored": 6, "complete": False}
    assert bench["paper_comparable"]["value"] is None
    for key in ("accuracy_micro", "accuracy_macro", "accuracy_all_micro", "answered"):
        assert bench[key]["low"] <= bench[key]["value"] <= bench[key]["high"]
    items = [
        json.loads(line)
        for line in (tmp_path / "report" / "items_millerqa.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    ipi = [i for i in items if i["benchmark"] == "ipi_legalbench"]
    assert [i["parse_step"] for i in ipi] == ["json", "json", "none", "json", "regex_key", "unclosed_think"]
    assert [i["parse_step"] for i in items if i["benchmark"] == "lhb_legalbench"][:2] == ["json", "fenced"]
    assert [i["is_correct"] for i in ipi] == [True, False, None, True, True, None]
    assert ipi[0]["confidence"] == 80 and ipi[0]["explanation"] == f"because {ipi[0]['id']}"
    assert ipi[4]["confidence"] == 40 and ipi[4]["parse_failed"] is True
    markdown = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "| Legal and Regulatory | ipi_legalbench, lhb_legalbench" in markdown
    assert "answered (coverage): 0.833 [" in markdown
    # The settings that built the docs, as the report's run section lists them.
    settings = {"release": "curated", "model_label": LABEL, "model_label_derived": False, "shuffle_seed": 42}
    assert report["run"]["benchmark_settings"]["millerqa"] == [settings]
    assert f"- millerqa settings: {json.dumps(settings)}" in markdown


def test_the_report_command_on_a_run_with_no_answered_reply(shared_data, tmp_path, capsys):
    """The headline is None when nothing was answered; the command used to crash printing it."""
    from lm_eval_tasks.__main__ import main as cli

    unanswered = evaluate(ScriptedLM(reply=lambda prompt: "no idea"), shared_data, ["millerqa_triage"], limit=2)
    run = save_run(unanswered, tmp_path / "run", model_args="pretrained=scripted")
    assert cli(["report", str(run), "--out", str(tmp_path / "report")]) == 0
    report = json.loads((tmp_path / "report" / "report.json").read_text(encoding="utf-8"))
    assert report["benchmarks"]["millerqa"]["n_invalid"] == 2
    assert "millerqa: accuracy_macro" in capsys.readouterr().out


def test_the_report_keeps_an_explanation_with_a_lone_surrogate(shared_data, tmp_path):
    """A reply's JSON escape \\ud800 decodes to a lone surrogate, which strict UTF-8 cannot write."""
    reply = '{"selected_answer": "A", "explanation": "odd \\ud800 text"}'
    out = evaluate(ScriptedLM(reply=lambda prompt: reply), shared_data, ["millerqa_triage"], limit=1)
    report_mod.write_report(save_run(out, tmp_path / "run", model_args="pretrained=scripted"), tmp_path / "report")
    (item,) = [
        json.loads(line)
        for line in (tmp_path / "report" / "items_millerqa.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert item["explanation"] == "odd \ud800 text"


def ll_scores(data_dir, benchmark, favour_correct):
    """Log-likelihoods that favour the correct letter on the listed docs and the next letter otherwise."""
    best = {}
    for i, doc in enumerate(docs(data_dir, benchmark)):
        n = len(doc["shuffled_options"])
        best[prompts.loglikelihood_prompt(doc["question"], doc["shuffled_options"])] = (
            doc["correct_position"] if i in favour_correct else (doc["correct_position"] + 1) % n
        )
    return lambda context, continuation: (
        -1.0 if constants.LETTERS.index(continuation.strip()) == best[context] else -5.0
    )


@pytest.mark.oldest
@pytest.mark.parametrize("chat", [False, True], ids=["plain", "chat"])
def test_loglikelihood_variant(shared_data, tmp_path, chat):
    lm = ScriptedLM(loglikelihood=ll_scores(shared_data, "medcalc", favour_correct={0, 2, 3}))
    requests = []
    original = lm.loglikelihood
    lm.loglikelihood = lambda reqs: (requests.extend(r.args for r in reqs), original(reqs))[1]
    if chat:  # the scripted model sees the chat messages; score on the user message
        scorer = ll_scores(shared_data, "medcalc", favour_correct={0, 2, 3})
        lm._loglikelihood = lambda context, continuation: scorer(json.loads(context)[-1]["content"], continuation)
    out = evaluate(lm, shared_data, ["millerqa_ll_medcalc"], limit=4, apply_chat_template=chat)
    assert out["results"]["millerqa_ll_medcalc"]["acc,none"] == pytest.approx(3 / 4)
    delimiter = "" if chat else " "
    assert sorted({continuation for _, continuation in requests}) == [delimiter + letter for letter in "ABCDE"]
    report = build_report(save_run(out, tmp_path / "run", model_args="pretrained=scripted"))["benchmarks"][
        "millerqa_ll"
    ]
    assert report["accuracy_micro"]["value"] == pytest.approx(3 / 4) and report["n_invalid"] == 0


def test_the_whole_suite_runs_and_reports_every_dimension(shared_data):
    lm = ScriptedLM(reply=lambda prompt: '{"selected_answer": "A"}')
    results = evaluate(lm, shared_data, ["millerqa"], limit=1, apply_chat_template=True)["results"]
    assert {"millerqa", *(f"millerqa_{d}" for d in constants.DIMENSIONS)} <= set(results)
    leaves = [f"millerqa_{b}" for b in constants.BENCHMARKS if b != constants.MEDBULLETS]
    assert set(leaves) <= set(results) and "millerqa_medbullets" not in results
    assert results["millerqa"]["acc,none"] == pytest.approx(sum(results[t]["acc,none"] for t in leaves) / 23)


def test_always_a_is_not_rewarded_on_cupcase(shared_data):
    """cupcase lists the correct answer first; after the shuffle answering A scores about chance."""
    lm = ScriptedLM(reply=lambda prompt: '{"selected_answer": "A"}')
    acc = evaluate(lm, shared_data, ["millerqa_cupcase"], apply_chat_template=True)["results"]["millerqa_cupcase"][
        "acc,none"
    ]
    expected = sum(d["correct_letter"] == "A" for d in docs(shared_data, "cupcase")) / 700
    assert acc == pytest.approx(expected) and 0.15 < acc < 0.35


def test_medbullets_tasks_fail_with_the_rebuild_instructions(shared_data):
    lm = ScriptedLM(reply=lambda prompt: "")
    for task in ("millerqa_medbullets", "millerqa_with_medbullets"):
        with pytest.raises(DataError, match="millerqa-rebuild-medbullets"):
            evaluate(lm, shared_data, [task], limit=1)


def test_the_full_suite_with_a_rebuilt_medbullets(tmp_path, shared_data):
    from tests.millerqa.medbullets_source import medbullets_source_rows, write_csv

    data_dir = tmp_path / "data"
    (data_dir / "millerqa").mkdir(parents=True)
    for entry in (shared_data / "millerqa").iterdir():
        if entry.name not in ("curated", "pre_qc"):
            (data_dir / "millerqa" / entry.name).symlink_to(entry)
    for release in ("curated", "pre_qc"):
        (data_dir / "millerqa" / release).mkdir()
        for source in (shared_data / "millerqa" / release).iterdir():
            if source.name != "medbullets":
                (data_dir / "millerqa" / release / source.name).symlink_to(source)
        (data_dir / "millerqa" / release / "medbullets").mkdir()
        (data_dir / "millerqa" / release / "medbullets" / "item_ids.csv").symlink_to(
            shared_data / "millerqa" / release / "medbullets" / "item_ids.csv"
        )
    medbullets.rebuild_medbullets(write_csv(medbullets_source_rows(), tmp_path / "op5.csv"), data_dir)
    lm = ScriptedLM(reply=lambda prompt: '{"selected_answer": "B"}')
    results = evaluate(lm, data_dir, ["millerqa_medical_knowledge_with_medbullets"], limit=2, apply_chat_template=True)[
        "results"
    ]
    assert results["millerqa_medbullets"]["answered,none"] == 1.0
    preqc = evaluate(lm, data_dir, ["millerqa_preqc_medbullets"], limit=1)["results"]["millerqa_preqc_medbullets"]
    assert preqc["answered,none"] == 1.0
