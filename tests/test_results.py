"""The scored run (utils/results.py): provenance, one scoring per run, the same numbers every time."""

import json
import shutil

import pytest
from lm_eval_tasks.utils import stats
from lm_eval_tasks.utils.accuracy import metric_statistic
from lm_eval_tasks.utils.results import score_path
from lm_eval_tasks.utils.runs import recorded_dtype
from lm_eval_tasks.utils.scoring import AccuracyMetric, Average

from tests.hand_runs import HEALTHVER, SCIFACT, write_run


def _with(folder, **fields):
    results_file = next(folder.glob("results_*.json"))
    results = json.loads(results_file.read_text(encoding="utf-8"))
    for key, value in fields.items():
        if key == "config":
            results["config"].update(value)
        else:
            results[key] = value
    results_file.write_text(json.dumps(results), encoding="utf-8")
    return folder


def test_the_dtype_is_what_lm_eval_recorded_never_a_folder_read_later():
    assert recorded_dtype({"model_dtype": "torch.bfloat16", "model_args": "pretrained=m,dtype=auto"}) == "bfloat16"
    assert recorded_dtype({"model_args": "pretrained=m,dtype=float32"}) == "float32"
    assert recorded_dtype({"model_args": {"pretrained": "m", "torch_dtype": "float16"}}) == "float16"
    assert recorded_dtype({"model_args": "pretrained=m,dtype=auto"}) == "unknown"
    assert recorded_dtype({"model_args": "model=gpt-4o,base_url=http://x/v1"}) == "unknown"


def test_reporting_twice_with_the_model_folder_changed_between_gives_the_same_report(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"dtype": "float32"}), encoding="utf-8")
    folder = write_run(
        tmp_path / "run", {"medfact_bench_scifact": SCIFACT}, model_args=f"pretrained={model},dtype=auto"
    )
    first = score_path(folder).report()
    (model / "config.json").write_text(json.dumps(["a", "list"]), encoding="utf-8")  # changed, and not a mapping
    assert score_path(folder).report() == first
    shutil.rmtree(model)
    assert score_path(folder).report() == first and first["run"]["dtype"] == "unknown"


def test_the_run_section_records_what_can_move_a_score(tmp_path):
    folder = _with(
        write_run(tmp_path, {"medfact_bench_scifact": SCIFACT}),
        config={
            "model_dtype": "torch.float32",
            "model_revision": "main",
            "batch_size": 4,
            "device": "cpu",
            "random_seed": 0,
            "numpy_seed": 1234,
            "torch_seed": 1234,
            "fewshot_seed": 1234,
            "gen_kwargs": "temperature=0,api_key=sk-abcdefghijklmnopqrstuv",
        },
        **{
            "n-shot": {"medfact_bench_scifact": 0},
            "task_hashes": {"medfact_bench_scifact": "h1"},
            "date": 1764590400.0,
            "total_evaluation_time_seconds": "12.5",
            "transformers_version": "5.24.0",
            "pretty_env_info": "PyTorch version: 2.13.0+cpu\nIs debug build: False",
            "system_instruction": None,
        },
    )
    run = score_path(folder).provenance
    assert run["dtype"] == "float32" and run["batch_size"] == 4 and run["device"] == "cpu"
    assert run["seeds"] == {"random_seed": 0, "numpy_seed": 1234, "torch_seed": 1234, "fewshot_seed": 1234}
    assert run["n_shot"] == {"medfact_bench_scifact": 0} and run["task_hashes"] == {"medfact_bench_scifact": "h1"}
    assert run["date"] == "2025-12-01T12:00:00+00:00" and run["evaluation_time_seconds"] == 12.5
    assert run["torch_version"] == "2.13.0+cpu" and run["transformers_version"] == "5.24.0"
    assert "sk-abcdefghijklmnopqrstuv" not in json.dumps(run) and "temperature=0" in run["gen_kwargs"]
    import hashlib

    results_file = next(folder.glob("results_*.json"))
    assert run["results_sha256"] == hashlib.sha256(results_file.read_bytes()).hexdigest()
    (samples,) = folder.glob("samples_*.jsonl")
    assert run["samples_sha256"] == {"medfact_bench_scifact": hashlib.sha256(samples.read_bytes()).hexdigest()}


def test_the_compared_metric_is_typed_and_named_as_report_json_names_it():
    from lm_eval_tasks.utils.benchmarks import report_specs
    from lm_eval_tasks.utils.scoring import Headline

    compared = {spec.name: spec.compared_metric for spec in report_specs()}
    # MillerQA's generative sections score answered items only: two runs are compared with unanswered items wrong.
    assert compared["millerqa"] == AccuracyMetric(Average.MACRO, all_items=True)
    assert compared["millerqa"].value == "accuracy_all_macro"
    assert compared["millerqa_ll"].value == "accuracy_macro" and compared["pubmedqa_atlas"].value == "accuracy_micro"
    assert compared["factbench"] is None
    assert [h.metric and h.metric.value for h in Headline] == ["accuracy_macro", "accuracy_micro", None]


def test_a_spec_owns_its_task_names_or_its_task_prefix_never_both():
    from lm_eval_tasks.utils.scoring import BenchmarkSpec

    by_prefix = BenchmarkSpec(name="b", title="B", score_sample=None, expected_counts={}, task_prefix="bench")
    assert [by_prefix.owns(t) for t in ("bench", "bench_x", "benchx", "other_bench")] == [True, True, False, False]
    for owners in ({}, {"task_prefix": "bench", "task_names": frozenset({"bench"})}):
        with pytest.raises(ValueError, match="exactly one of task_names and task_prefix"):
            BenchmarkSpec(name="b", title="B", score_sample=None, expected_counts={}, **owners)


def test_the_compared_metric_is_the_headline_on_the_same_resamples(tmp_path):
    scored = score_path(write_run(tmp_path, {"medfact_bench_scifact": SCIFACT, "medfact_bench_healthver": HEALTHVER}))
    section = scored.sections["medfact_bench"]
    assert section.spec.compared_metric.value == "accuracy_macro"
    assert section.compared.estimate.as_dict() == section.numbers["accuracy_macro"]  # one computation
    statistic = metric_statistic(AccuracyMetric(Average.MACRO), section.items)
    strata = [item.component for item in section.items]
    drawn = stats.resample_indices(strata, len(strata))
    by_hand = [
        sum(section.items[i].correct for i in row if strata[i] == c) / sum(strata[i] == c for i in row)
        for row in drawn
        for c in ("scifact", "healthver")
    ]
    assert section.compared.distribution == pytest.approx([(x + y) / 2 for x, y in zip(by_hand[::2], by_hand[1::2])])
    assert statistic is not None


def test_a_partial_run_says_every_reason_it_is_not_paper_comparable(tmp_path):
    folder = _with(
        write_run(tmp_path, {"medfact_bench_scifact": SCIFACT}, generation={"until": ["</score>"], "max_gen_toks": 64}),
        system_instruction="Be brief.",
    )
    comparable = score_path(folder).sections["medfact_bench"].numbers["paper_comparable"]
    assert comparable["value"] is None
    assert comparable["reasons"] == [
        "not every published item was scored (see coverage)",
        "a system instruction was added (--system_instruction); the paper's prompt has none",
        "setting paper_generation = false (the paper's: true)",
    ]


def test_declared_settings_are_named_as_the_user_gives_them():
    from lm_eval_tasks.utils.benchmarks import discover
    from lm_eval_tasks.utils.results import declared_settings

    sections = {spec.name: None for b in discover() for spec in b.report_specs}
    declared = declared_settings(sections)
    assert {s["name"] for s in declared["medexqa"]} >= {"medexqa_shuffle", "medexqa_shuffle_seed", "medexqa_split"}
    assert {s["name"] for s in declared["factbench"]} == {"factbench_sample_size", "factbench_bioasq_path"}
    assert all(s["moves"] and s["kind"] for entries in declared.values() for s in entries)
    assert "medfact_bench" not in declared  # it declares none


def test_tied_best_loglikelihoods_give_the_range_and_expectation_of_other_tie_breaks(demo_data_dir, tmp_path):
    from scipy.stats import beta

    from tests.runs import evaluated_run
    from tests.scripted_lm import ScriptedLM

    # " yes" and " no" share the best log-likelihood on every item: each is a tie, decided by answer order (yes).
    def loglikelihood(context, continuation):
        return -1.0 if continuation.strip() in ("yes", "no") else -3.0

    folder = evaluated_run(
        tmp_path / "run",
        demo_data_dir,
        ["pubmedqa_atlas_n100"],
        limit=12,
        model=ScriptedLM(loglikelihood=loglikelihood),
    )
    scored = score_path(folder).sections["pubmedqa_atlas_n100"]
    numbers, golds = scored.numbers, [item.gold for item in scored.items]
    ties = numbers["ties"]
    n, n_yes, n_no = 12, golds.count("yes"), golds.count("no")
    assert 0 < n_yes < n and n_yes + n_no < n  # a mix of golds, some of them outside the tie (maybe)
    assert ties["n_tied"] == n and "earliest choice" in ties["rule"] and ties["metric"] == "accuracy_micro"
    assert ties["n_tied_counted_correct"] == n_yes  # answer order gives "yes"
    assert numbers["accuracy_micro"]["value"] == pytest.approx(n_yes / n)
    # Every tied item wrong: 0 of 12, with the exact interval (never zero-width).
    assert ties["lowest"]["value"] == 0.0 and ties["lowest"]["low"] == 0.0
    assert (
        ties["lowest"]["high"] == pytest.approx(beta.ppf(0.975, 1, n)) and ties["lowest"]["method"] == "clopper-pearson"
    )
    # Right wherever the gold is among the tied choices (yes or no); a random tie-break: half of those.
    assert ties["highest"]["value"] == pytest.approx((n_yes + n_no) / n)
    assert ties["expected"]["value"] == pytest.approx((n_yes + n_no) / 2 / n)
    for name in ("highest", "expected"):
        assert ties[name]["low"] <= ties[name]["value"] <= ties[name]["high"]
    headline = numbers["accuracy_micro"]
    reach = max(headline["value"] - 0.0, ties["highest"]["value"] - headline["value"])
    assert ties["could_move_headline"] is (reach > (headline["high"] - headline["low"]) / 2) is True
    assert "n_tied" not in numbers and "tie_rule" not in numbers  # one place: the ties object


def test_tie_outcomes_of_one_item_by_hand():
    from lm_eval_tasks.utils.accuracy import tie_outcomes
    from lm_eval_tasks.utils.calibration import from_loglikelihoods
    from lm_eval_tasks.utils.samples import HIGHEST_LOGLIKELIHOOD, HIGHEST_LOGLIKELIHOOD_TIED
    from lm_eval_tasks.utils.scoring import ScoredItem

    def item(lls, gold, step):
        forecast = from_loglikelihoods(lls, gold)
        pred = max(range(len(lls)), key=lambda i: (lls[i], -i))
        return ScoredItem(
            "t",
            0,
            "",
            "c",
            str(gold),
            str(pred),
            float(pred == gold),
            parse_step=step,
            loglikelihoods=tuple(lls),
            forecast=forecast,
        )

    # Three choices tied, the gold the third of them: wrong by answer order, right with probability 1/3.
    assert tie_outcomes(item([-1.0, -1.0, -5.0, -1.0], 3, HIGHEST_LOGLIKELIHOOD_TIED)) == (0.0, 1.0, 1 / 3)
    # The gold outside the tie: wrong whatever the tie-break.
    assert tie_outcomes(item([-1.0, -1.0, -5.0], 2, HIGHEST_LOGLIKELIHOOD_TIED)) == (0.0, 0.0, 0.0)
    # No tie: its own outcome.
    assert tie_outcomes(item([-1.0, -2.0], 0, HIGHEST_LOGLIKELIHOOD)) == (1.0, 1.0, 1.0)
