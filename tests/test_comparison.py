"""The one comparison of two scored runs (utils/comparison.py), as ``compare`` and the leaderboard use it."""

import json
from dataclasses import replace

import numpy as np
import pytest
from lm_eval_tasks.utils import leaderboard, stats
from lm_eval_tasks.utils.comparison import compare_runs, compare_section, holm
from lm_eval_tasks.utils.results import ScoredRun, score_path
from lm_eval_tasks.utils.runs import Run
from lm_eval_tasks.utils.scoring import BenchmarkSpec, Headline, Report, ScoredItem, Stratum
from lm_eval_tasks.utils.section import score_section

from tests.conftest import lm_eval_tasks_cli
from tests.runs import FIVE_BENCHMARKS, evaluated_run


def test_holm_hand_worked():
    # sorted 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04, raised to 0.06: step-down)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # 2 x 0.5 = 1; never above 1, never below an earlier step
    assert holm([0.2]) == [0.2] and holm([]) == []


# ----------------------------------------------------------------------------- constructed cases


def _scored(tmp_path, name, flags_by_component, headline, stratify=Stratum.COMPONENT):
    """A scored run of one hand-made section: per component, one 0/1 flag per item."""
    spec = BenchmarkSpec(
        name="toy",
        title="Toy",
        task_prefix="toy",
        score_sample=None,
        expected_counts={c: len(f) for c, f in flags_by_component.items()},
        report=Report(headline=headline, stratify_by=stratify),
    )
    items = [
        ScoredItem("toy", i, f"{c}-{i}", c, "1", "1" if flag else "0", float(flag), prompt_hash=f"p{c}{i}")
        for c, flags in flags_by_component.items()
        for i, flag in enumerate(flags)
    ]
    run = Run(tmp_path / f"{name}.json", {"n-samples": {}}, {}, {})
    section = score_section(items, spec, run)
    return ScoredRun(run.results_path, {"n_shot": {}}, {"toy": section}, (), ())


def test_a_macro_difference_the_pooled_mcnemar_misses(tmp_path):
    """A is far better on a small component, slightly worse on a large one: pooled over items the discordant
    counts tie (McNemar p = 1), but the macro difference is large and its CI excludes 0."""
    small_a, small_b = [1] * 18 + [0] * 2, [1] * 8 + [0] * 12  # A right on 10 items B misses: 0.9 vs 0.4
    large_a, large_b = [1] * 100 + [0] * 100, [1] * 110 + [0] * 90  # B right on 10 more: 0.50 vs 0.55
    a = _scored(tmp_path, "a", {"small": small_a, "large": large_a}, Headline.ACCURACY_MACRO)
    b = _scored(tmp_path, "b", {"small": small_b, "large": large_b}, Headline.ACCURACY_MACRO)
    pair = compare_section(a, b, "toy")
    assert (pair["a_only_correct"], pair["b_only_correct"]) == (10, 10)
    assert stats.mcnemar_exact(10, 10) == 1.0  # what the old pooled test printed beside this CI
    assert pair["difference"]["value"] == pytest.approx(((0.9 - 0.4) + (0.50 - 0.55)) / 2)
    assert pair["difference"]["low"] > 0 and pair["p_value"] < 0.05
    assert pair["test"] == "paired bootstrap of the accuracy_macro difference, stratified by component"


def test_a_micro_accuracy_is_tested_by_exact_mcnemar(tmp_path):
    a = _scored(tmp_path, "a", {"x": [1] * 70 + [0] * 30}, Headline.ACCURACY_MICRO)
    b = _scored(tmp_path, "b", {"x": [1] * 55 + [0] * 45}, Headline.ACCURACY_MICRO)
    pair = compare_section(a, b, "toy")
    assert (pair["a_only_correct"], pair["b_only_correct"]) == (15, 0)
    assert pair["p_value"] == pytest.approx(2 * 0.5**15) and pair["test"].startswith("exact McNemar")
    assert pair["difference"]["low"] > 0  # the CI agrees


@pytest.mark.parametrize("headline", [Headline.ACCURACY_MACRO, Headline.ACCURACY_MICRO])
def test_the_p_value_is_below_005_exactly_when_the_ci_excludes_0(tmp_path, headline):
    rng = np.random.default_rng(8)
    agree = 0
    cases = 0
    for case in range(12):
        shift = 0.02 * case
        flags_a = {c: list((rng.random(120) < 0.5 + shift).astype(int)) for c in ("c1", "c2", "c3")}
        flags_b = {c: list((rng.random(120) < 0.5).astype(int)) for c in ("c1", "c2", "c3")}
        pair = compare_section(
            _scored(tmp_path, "a", flags_a, headline), _scored(tmp_path, "b", flags_b, headline), "toy"
        )
        excludes = pair["difference"]["low"] > 0 or pair["difference"]["high"] < 0
        if abs(pair["p_value"] - 0.05) < 0.015:  # at the boundary resampling noise decides
            continue
        cases += 1
        agree += (pair["p_value"] < 0.05) == excludes
    assert cases >= 8 and agree == cases


# ----------------------------------------------------------------------------- runs of all five benchmarks


@pytest.fixture(scope="module")
def five_benchmark_runs(demo_data_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return (
        evaluated_run(root / "a", demo_data_dir, FIVE_BENCHMARKS, "a", "model-a"),
        evaluated_run(root / "b", demo_data_dir, FIVE_BENCHMARKS, "b", "model-b"),
    )


def test_compare_and_leaderboard_give_the_same_pairs_for_every_section(five_benchmark_runs, tmp_path):
    a, b = five_benchmark_runs
    compared = json.loads(lm_eval_tasks_cli("compare", a, b, "--json").stdout)["benchmarks"]
    board = leaderboard.build([a, b])[0]
    sections = {"medfact_bench", "medexqa_logit", "medexqa", "pubmedqa_atlas_n100", "millerqa", "millerqa_ll"}
    assert sections <= set(compared) and set(compared) == set(board["benchmarks"])
    for name, pair in compared.items():
        (listed,) = board["benchmarks"][name]["comparisons"]
        for key in ("difference", "p_value", "holm_p_value", "n_paired_items", "reasons", "test", "a_only_correct"):
            assert listed[key] == pair[key], (name, key)
    # MillerQA's docs differ per model label; its items are paired by id, and the label is per model by design.
    for name in ("millerqa", "millerqa_ll"):
        assert compared[name]["n_paired_items"] == 12 and compared[name]["comparable"], compared[name]["reasons"]
    assert compared["pubmedqa_atlas_n100"]["test"].startswith("exact McNemar")
    # 12 items with a handful of discordant ones: the macro's bootstrap cannot carry a p-value, the exact test does.
    medfact = compared["medfact_bench"]
    assert medfact["a_only_correct"] + medfact["b_only_correct"] < stats.MIN_DISCORDANT
    assert medfact["test"].startswith("exact McNemar") and "discordant items" in medfact["interval_reason"]
    assert medfact["p_value"] == stats.mcnemar_exact(medfact["a_only_correct"], medfact["b_only_correct"])
    assert medfact["difference"]["low"] is None and medfact["difference"]["high"] is None


def test_the_same_run_twice_is_a_null_comparison(five_benchmark_runs):
    a, _ = five_benchmark_runs
    compared = compare_runs(score_path(a), score_path(a))["benchmarks"]
    for pair in compared.values():
        assert pair["comparable"] and pair["difference"]["value"] == 0.0 and pair["p_value"] == 1.0


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"num_fewshot": 3}, "n-shot"),
        ({"system_instruction": "You are a careful physician."}, "system instruction"),
    ],
)
def test_another_protocol_is_not_comparable_nor_paper_comparable(demo_data_dir, tmp_path, change, reason):
    tasks = ("medexqa_logit_be",)
    plain = score_path(evaluated_run(tmp_path / "plain", demo_data_dir, tasks, limit=4))
    other = score_path(evaluated_run(tmp_path / "other", demo_data_dir, tasks, limit=4, **change))
    pair = compare_section(plain, other, "medexqa_logit")
    assert not pair["comparable"] and any(r.startswith(reason) for r in pair["reasons"]), pair["reasons"]
    assert pair["p_value"] is None
    reasons = other.sections["medexqa_logit"].numbers["paper_comparable"]["reasons"]
    assert any(reason in r for r in reasons), reasons


def test_a_shuffled_run_is_not_comparable_nor_paper_comparable(demo_data_dir, tmp_path):
    tasks = ("medexqa_logit_be",)
    plain = score_path(evaluated_run(tmp_path / "plain", demo_data_dir, tasks, limit=4))
    shuffled = score_path(
        evaluated_run(tmp_path / "shuffled", demo_data_dir, tasks, limit=4, metadata={"medexqa_shuffle": True})
    )
    pair = compare_section(plain, shuffled, "medexqa_logit")
    assert not pair["comparable"] and any(r.startswith("benchmark settings") for r in pair["reasons"])
    plain_paper, shuffled_paper = (
        run.sections["medexqa_logit"].numbers["paper_comparable"]["reasons"] for run in (plain, shuffled)
    )
    assert any(r.startswith("setting shuffle") for r in shuffled_paper), shuffled_paper
    assert not any(r.startswith("setting shuffle") for r in plain_paper)


def test_a_section_only_one_run_has_is_listed_with_its_reason(five_benchmark_runs, tmp_path):
    a, _ = five_benchmark_runs
    scored = score_path(a)
    fewer = replace(scored, sections={k: v for k, v in scored.sections.items() if k != "medfact_bench"})
    listed = compare_runs(scored, fewer)["benchmarks"]["medfact_bench"]
    assert listed["n_paired_items"] == 0 and listed["reasons"] == ["only A ran this section"]


def _reprompted(folder, template_sha):
    """The run at ``folder`` with every prompt_hash changed and the given chat template sha."""
    for samples in folder.glob("samples_*.jsonl"):
        rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
        samples.write_text("".join(json.dumps({**r, "prompt_hash": "other-" + r["prompt_hash"]}) + "\n" for r in rows))
    results_file = next(folder.glob("results_*.json"))
    results = json.loads(results_file.read_text(encoding="utf-8"))
    results_file.write_text(json.dumps({**results, "chat_template_sha": template_sha}), encoding="utf-8")
    return folder


def test_prompts_rendered_by_each_models_own_chat_template_are_comparable(tmp_path):
    from tests.hand_runs import SCIFACT, write_run

    plain = score_path(write_run(tmp_path / "a", {"medfact_bench_scifact": SCIFACT}))  # chat template sha "abc"
    other_model = score_path(_reprompted(write_run(tmp_path / "b", {"medfact_bench_scifact": SCIFACT}), "def"))
    same_template = score_path(_reprompted(write_run(tmp_path / "c", {"medfact_bench_scifact": SCIFACT}), "abc"))
    assert compare_section(plain, other_model, "medfact_bench")["reasons"] == []
    assert compare_section(plain, same_template, "medfact_bench")["reasons"] == [
        "different prompts (lm-eval prompt_hash) on 4 of 4 shared items"
    ]


# ----------------------------------------------------------------------------- small n and precision


def test_one_paired_item_gives_no_p_value_below_what_it_can_carry(tmp_path):
    # One item, A right and B wrong: the bootstrap sees 1.0 in every resample; the exact McNemar test gives 1.
    for headline in (Headline.ACCURACY_MACRO, Headline.ACCURACY_MICRO):
        a = _scored(tmp_path, "a", {"only": [1]}, headline)
        b = _scored(tmp_path, "b", {"only": [0]}, headline)
        pair = compare_section(a, b, "toy")
        assert pair["difference"]["value"] == 1.0 and pair["p_value"] == 1.0 and pair["small"] is True
        assert pair["detectable"]["minimum_detectable_difference"] is None
        low, high = pair["difference"]["low"], pair["difference"]["high"]
        if headline is Headline.ACCURACY_MACRO:
            assert (low, high) == (None, None) and "1 discordant items" in pair["interval_reason"]
        else:  # the exact conditional interval: 2 * [0.025, 1] - 1
            assert low == pytest.approx(-0.95) and high == 1.0 and pair["difference"]["method"] == "exact conditional"


def test_a_discordant_item_alone_in_its_stratum_falls_back_to_the_exact_test(tmp_path):
    # 20 discordant items in a large component (10 each way), and one more alone in a component of its own.
    big_a, big_b = [1] * 10 + [0] * 10 + [1] * 20, [0] * 10 + [1] * 10 + [1] * 20
    a = _scored(tmp_path, "a", {"big": big_a, "solo": [1]}, Headline.ACCURACY_MACRO)
    b = _scored(tmp_path, "b", {"big": big_b, "solo": [0]}, Headline.ACCURACY_MACRO)
    pair = compare_section(a, b, "toy")
    assert (pair["a_only_correct"], pair["b_only_correct"]) == (11, 10)
    assert "a stratum of 1 items" in pair["interval_reason"] and pair["test"].startswith("exact McNemar")
    assert pair["p_value"] == pytest.approx(stats.mcnemar_exact(11, 10)) and pair["p_value"] > 0.5
    assert pair["difference"]["value"] == pytest.approx(0.5)  # (0 + 1) / 2: the solo component decides it


def test_p_below_005_exactly_when_the_micro_interval_excludes_0():
    from scipy.stats import binomtest

    for n in (20, 60):
        for a_only in range(0, 15):
            for b_only in range(0, 15 - a_only):
                estimate = stats.paired_proportion_difference(a_only, b_only, n)
                p = stats.mcnemar_exact(a_only, b_only)
                assert (p < 0.05) == (estimate.low > 0 or estimate.high < 0), (n, a_only, b_only)
                assert estimate.value == pytest.approx((a_only - b_only) / n)
                if a_only + b_only:
                    ci = binomtest(a_only, a_only + b_only).proportion_ci(method="exact")
                    scale = (a_only + b_only) / n
                    assert estimate.low == pytest.approx(scale * (2 * ci.low - 1))
                    assert estimate.high == pytest.approx(scale * (2 * ci.high - 1))
                else:
                    assert estimate.low < 0 < estimate.high  # no discordant item: never a zero-width interval


@pytest.mark.parametrize(
    ("dtypes_a", "dtypes_b", "expected"),
    [
        (("bfloat16", None), ("float32", None), 'model dtype: "bfloat16" vs "float32"'),
        (("unknown", None), ("float32", None), 'model dtype: "unknown" vs "float32"'),
        (("bfloat16", None), ("bfloat16", "float32"), 'softmax dtype: null vs "float32"'),
        (("float32", None), ("float32", None), None),
    ],
)
def test_runs_in_another_precision_are_not_comparable(tmp_path, dtypes_a, dtypes_b, expected):
    a = _scored(tmp_path, "a", {"c": [1, 0] * 20}, Headline.ACCURACY_MICRO)
    b = _scored(tmp_path, "b", {"c": [0, 1] * 20}, Headline.ACCURACY_MICRO)
    a = replace(a, provenance={**a.provenance, "dtype": dtypes_a[0], "softmax_dtype": dtypes_a[1]})
    b = replace(b, provenance={**b.provenance, "dtype": dtypes_b[0], "softmax_dtype": dtypes_b[1]})
    pair = compare_section(a, b, "toy")
    if expected is None:
        assert pair["comparable"] and pair["p_value"] is not None
    else:
        assert not pair["comparable"] and expected in pair["reasons"] and pair["p_value"] is None


def test_four_all_wrong_items_have_an_interval_above_0(tmp_path):
    numbers = _scored(tmp_path, "a", {"c": [0, 0, 0, 0]}, Headline.ACCURACY_MACRO).sections["toy"].numbers
    for metric in ("accuracy_macro", "accuracy_micro"):
        estimate = numbers[metric]
        assert (estimate["value"], estimate["low"]) == (0.0, 0.0) and estimate["high"] == pytest.approx(1 - 0.025**0.25)
    assert numbers["components"]["c"]["accuracy"]["high"] > 0 and numbers["components"]["c"]["small"] is True
    assert numbers["detectable"]["minimum_detectable_difference"] is None  # an equal model never disagrees


def test_compare_prints_a_table_and_json_on_request(five_benchmark_runs):
    a, b = five_benchmark_runs
    table = lm_eval_tasks_cli("compare", a, b).stdout
    compared = json.loads(lm_eval_tasks_cli("compare", a, b, "--json").stdout)["benchmarks"]
    rows = {line.split(" | ")[0].lstrip("| "): line for line in table.splitlines() if line.startswith("| ")}
    assert table.splitlines()[0].startswith("A: model-a (") and table.splitlines()[1].startswith("B: model-b (")
    for name, pair in compared.items():
        (row,) = [line for key, line in rows.items() if key.split(" (")[0] == name]
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert cells[1] == stats.format_estimate(pair.get("a_estimate")) and cells[4] == stats.format_estimate(
            pair["difference"]
        )
        assert cells[3].startswith(str(pair["n_paired_items"]))
        assert cells[7] == ("yes" if pair["comparable"] else "no: " + "; ".join(pair["reasons"]))
    assert len(table.splitlines()) < 20  # a table, not 400 lines of JSON
