"""Selective prediction (utils/selective.py): AURC and accuracy at a coverage against hand-worked examples and the
definition computed here with fractions, the optimal ordering, and the statistics the data cannot carry."""

import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils import formats, leaderboard, selective, stats
from lm_eval_tasks.utils.calibration import Forecast
from lm_eval_tasks.utils.comparison import compare_runs
from lm_eval_tasks.utils.report import write_report
from lm_eval_tasks.utils.results import score_path

from tests.conftest import examples, read_samples
from tests.runs import evaluated_run


def stated(confidences, correct):
    return [Forecast(c, bool(k)) for c, k in zip(confidences, correct, strict=True)]


def aurc_by_definition(forecasts) -> Fraction:
    """The mean over items of the risk among every item at least as confident as it (ties enter together)."""
    n = len(forecasts)
    total = Fraction(0)
    for item in forecasts:
        covered = [f for f in forecasts if f.confidence >= item.confidence]
        total += Fraction(sum(not f.correct for f in covered), len(covered))
    return total / n


def value(statistic, n, weights=None):
    return float(statistic(np.ones((1, n)) if weights is None else np.asarray(weights, dtype=float)[None, :])[0])


# 0.9 right | 0.8 wrong, 0.8 right (tied: enter together) | 0.5 wrong | 0.3 right
HAND = stated([0.9, 0.8, 0.8, 0.5, 0.3], [1, 0, 1, 0, 1])


def test_hand_worked_aurc_with_a_tie():
    # groups: {0.9} risk 0/1 over 1/5 of coverage; {0.8, 0.8} risk 1/3 over 2/5; {0.5} risk 2/4 over 1/5;
    # {0.3} risk 2/5 over 1/5: 0 + 2/15 + 1/10 + 2/25 = 47/150
    assert aurc_by_definition(HAND) == Fraction(47, 150)
    assert value(selective.aurc_of(HAND), 5) == pytest.approx(47 / 150, abs=1e-15)
    # the order of the tied items does not matter
    swapped = [HAND[0], HAND[2], HAND[1], HAND[3], HAND[4]]
    assert value(selective.aurc_of(swapped), 5) == value(selective.aurc_of(HAND), 5)


def test_hand_worked_accuracy_at_coverage_takes_a_boundary_tie_whole():
    # 50% of 5 items is 2.5: the fewest whole groups reaching it are {0.9} and {0.8, 0.8}: 3 items, 2 right
    assert selective.covered_at(HAND, Fraction(1, 2)).tolist() == [0, 1, 2]
    assert value(selective.accuracy_at_coverage_of(HAND, Fraction(1, 2)), 5) == pytest.approx(2 / 3)
    # 80% is exactly 4 items: the groups down to 0.5, 2 of 4 right
    assert selective.covered_at(HAND, Fraction(4, 5)).tolist() == [0, 1, 2, 3]
    assert value(selective.accuracy_at_coverage_of(HAND, Fraction(4, 5)), 5) == 0.5
    # a resample drawing the 0.9 item 3 times and leaving out the last: 50% of 7 is 3.5, reached at {0.9} x3 plus
    # {0.8, 0.8} (5 draws, 4 right)
    assert value(selective.accuracy_at_coverage_of(HAND, Fraction(1, 2)), 5, [3, 1, 1, 2, 0]) == pytest.approx(4 / 5)


def test_the_curve_has_a_point_per_tie_group_reached():
    points = selective.curve(HAND)
    assert [(p["n_covered"], p["confidence"]) for p in points] == [(1, 0.9), (3, 0.8), (4, 0.5), (5, 0.3)]
    assert [p["risk"] for p in points] == pytest.approx([0, 1 / 3, 1 / 2, 2 / 5])
    assert [p["coverage"] for p in points] == pytest.approx([0.2, 0.6, 0.8, 1.0])


def test_a_large_section_s_curve_keeps_at_most_100_points():
    rng = np.random.default_rng(0)
    forecasts = stated(rng.random(1000).tolist(), (rng.random(1000) < 0.6).tolist())
    points = selective.curve(forecasts)
    assert len(points) == 100 and points[-1]["n_covered"] == 1000
    assert [p["n_covered"] for p in points] == [10 * k for k in range(1, 101)]


@pytest.mark.parametrize(
    ("forecasts", "reason"),
    [
        ([], "0 item(s) with a confidence"),
        (stated([0.7], [1]), "1 item(s) with a confidence"),
        (stated([0.6, 0.6, 0.6], [1, 0, 1]), "every item has the same confidence"),
        (stated([0.9, 0.6, 0.2], [1, 1, 1]), "every answer is right"),
        (stated([0.9, 0.6, 0.2], [0, 0, 0]), "every answer is wrong"),
    ],
)
def test_what_the_data_cannot_carry_says_why(forecasts, reason):
    assert selective.not_computable(forecasts).startswith(reason)


def test_a_ranking_with_both_outcomes_and_two_confidences_is_computable():
    assert selective.not_computable(stated([0.9, 0.6], [1, 0])) is None


outcomes_and_confidences = st.integers(2, 30).flatmap(
    lambda n: st.tuples(
        st.lists(st.booleans(), min_size=n, max_size=n),
        st.lists(st.sampled_from([0.1, 0.25, 0.5, 0.6, 0.75, 0.9, 1.0]), min_size=n, max_size=n),
        st.lists(st.integers(0, 3), min_size=n, max_size=n),
    )
)


@settings(max_examples=examples(200), deadline=None)
@given(outcomes_and_confidences)
def test_the_vectorised_aurc_is_the_definition_on_every_resample(case):
    correct, confidences, draws = case
    forecasts = stated(confidences, correct)
    assert value(selective.aurc_of(forecasts), len(forecasts)) == pytest.approx(
        float(aurc_by_definition(forecasts)), abs=1e-12
    )
    # a resample's weights are the items repeated as often as drawn
    if sum(draws):
        repeated = [f for f, k in zip(forecasts, draws, strict=True) for _ in range(k)]
        assert value(selective.aurc_of(forecasts), len(forecasts), draws) == pytest.approx(
            float(aurc_by_definition(repeated)), abs=1e-12
        )


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.booleans(), min_size=2, max_size=40), st.randoms(use_true_random=False))
def test_perfect_order_is_optimal_and_reversing_it_can_only_raise_aurc(correct, random):
    n = len(correct)
    ranked = sorted(correct, reverse=True)  # every right answer above every wrong one
    confidences = [1.0 - k / n for k in range(n)]  # distinct, descending
    perfect = value(selective.aurc_of(stated(confidences, ranked)), n)
    optimal = float(aurc_by_definition(stated(confidences, ranked)))
    assert perfect == pytest.approx(optimal, abs=1e-12)
    assert selective.optimal_aurc(n, sum(correct)) == pytest.approx(optimal, abs=1e-12)
    reversed_order = value(selective.aurc_of(stated(confidences, ranked[::-1])), n)
    assert reversed_order >= perfect - 1e-12
    shuffled = list(correct)
    random.shuffle(shuffled)
    assert value(selective.aurc_of(stated(confidences, shuffled)), n) >= perfect - 1e-12
    if 0 < sum(correct) < n:  # with both outcomes, the worst order is strictly worse
        assert reversed_order > perfect


# ----------------------------------------------------------------------------- in a report


@pytest.fixture(scope="module")
def report(demo_data_dir, tmp_path_factory):
    run_dir = evaluated_run(
        tmp_path_factory.mktemp("selective") / "run", demo_data_dir, ["pubmedqa_atlas_n100"], limit=None
    )
    _, written = write_report(run_dir)
    folder = written[0].parent
    return json.loads((folder / "report.json").read_text(encoding="utf-8")), folder, run_dir


def _forecasts_of(run_dir):
    """Each logged item's confidence and correctness, recomputed from its log-likelihoods, and its gold answer."""
    samples = sorted(read_samples(run_dir, "pubmedqa_atlas_n100"), key=lambda s: s["doc_id"])
    out = []
    for sample in samples:
        lls = np.asarray([float(pair[0]) for pair in sample["filtered_resps"]])
        probabilities = np.exp(lls - lls.max()) / np.exp(lls - lls.max()).sum()
        choice = int(np.argmax(lls))
        correct = ["yes", "no", "maybe"][choice] == sample["doc"]["final_decision"]
        out.append(Forecast(float(probabilities[choice]), correct))
    return out, [s["doc"]["final_decision"] for s in samples]


def test_a_log_likelihood_section_s_aurc_recomputed_from_the_samples(report):
    data, folder, run_dir = report
    sel = data["benchmarks"]["pubmedqa_atlas_n100"]["selective"]
    forecasts, golds = _forecasts_of(run_dir)
    assert sel["n"] == len(forecasts) == 100 and sel["reason"] is None
    assert sel["aurc"]["value"] == pytest.approx(float(aurc_by_definition(forecasts)), abs=1e-12)
    # the CI: the bootstrap stratified by gold answer, as the headline's, of the definition on each resample
    looped = stats.bootstrap(
        stats.per_resample(lambda index: float(aurc_by_definition([forecasts[i] for i in index]))),
        len(forecasts),
        strata=golds,
    )
    assert (sel["aurc"]["low"], sel["aurc"]["high"]) == pytest.approx((looped.low, looped.high), abs=1e-12)
    right = sum(f.correct for f in forecasts)
    assert sel["aurc_optimal"] == pytest.approx(selective.optimal_aurc(100, right))
    assert sel["aurc_optimal"] <= sel["aurc"]["value"]
    ranked = sorted(forecasts, key=lambda f: -f.confidence)
    for label, share in (("50%", 0.5), ("80%", 0.8)):
        entry = sel["accuracy_at_coverage"][label]
        threshold = ranked[int(share * 100) - 1].confidence
        covered = [f for f in forecasts if f.confidence >= threshold]
        assert entry["n_covered"] == len(covered) and entry["coverage"] == len(covered) / 100
        assert entry["accuracy"]["value"] == pytest.approx(sum(f.correct for f in covered) / len(covered))
    assert sel["curve"][-1]["n_covered"] == 100
    assert sel["curve"][-1]["risk"] == pytest.approx(1 - right / 100)


def test_the_report_files_show_selective_prediction(report):
    data, folder, _ = report
    sel = data["benchmarks"]["pubmedqa_atlas_n100"]["selective"]
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    assert f"- AURC (lower is better): {stats.format_estimate(sel['aurc'])}" in markdown
    assert f"- accuracy at 50% coverage ({sel['accuracy_at_coverage']['50%']['n_covered']} items" in markdown
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert f'data-value="{sel["aurc"]["value"]!r}"' in page and 'class="aurc"' in page
    assert "risk-coverage curve of" in page and 'class="accuracy-at-coverage"' in page
    assert (folder / "risk_coverage_pubmedqa_atlas_n100.png").read_bytes().startswith(b"\x89PNG")


# ----------------------------------------------------------------------------- compare and the leaderboard


def test_compare_gives_the_paired_aurc_difference(report, demo_data_dir, tmp_path):
    _, _, run_a = report
    run_b = evaluated_run(tmp_path / "b", demo_data_dir, ["pubmedqa_atlas_n100"], salt="b", limit=None)
    a, b = score_path(run_a), score_path(run_b)
    pair = compare_runs(a, b)["benchmarks"]["pubmedqa_atlas_n100"]
    aurc = pair["aurc_difference"]
    forecasts_a, gold = _forecasts_of(run_a)
    forecasts_b, _ = _forecasts_of(run_b)
    assert pair["comparable"] and aurc["n_paired_items"] == 100 and aurc["reason"] is None
    want = aurc_by_definition(forecasts_a) - aurc_by_definition(forecasts_b)
    assert aurc["difference"]["value"] == pytest.approx(float(want), abs=1e-12)
    # both AURCs by the definition on the same resamples (stratified by gold answer, as the section's bootstrap)
    looped = stats.bootstrap_distribution(
        stats.per_resample(
            lambda index: float(
                aurc_by_definition([forecasts_a[i] for i in index])
                - aurc_by_definition([forecasts_b[i] for i in index])
            )
        ),
        100,
        strata=gold,
    )
    assert (aurc["difference"]["low"], aurc["difference"]["high"]) == pytest.approx(
        (looped.estimate.low, looped.estimate.high), abs=1e-12
    )
    other_side = min(np.sum(looped.distribution <= 0), np.sum(looped.distribution >= 0))
    assert aurc["p_value"] == pytest.approx(max(min(1.0, 2 * other_side / 1000), 1 / 1001))
    # B minus A is the negation; a run against itself differs by exactly 0 on every resample
    reverse = compare_runs(b, a)["benchmarks"]["pubmedqa_atlas_n100"]["aurc_difference"]["difference"]
    assert reverse["value"] == pytest.approx(-aurc["difference"]["value"], abs=1e-15)
    itself = compare_runs(a, a)["benchmarks"]["pubmedqa_atlas_n100"]["aurc_difference"]["difference"]
    assert (itself["value"], itself["low"], itself["high"]) == (0.0, 0.0, 0.0)


def test_a_pair_that_is_not_comparable_gets_the_aurc_difference_without_a_p_value(report, demo_data_dir, tmp_path):
    _, _, run_a = report
    run_b = evaluated_run(
        tmp_path / "b", demo_data_dir, ["pubmedqa_atlas_n100"], salt="b", limit=None, system_instruction="Be brief."
    )
    pair = compare_runs(score_path(run_a), score_path(run_b))["benchmarks"]["pubmedqa_atlas_n100"]
    assert not pair["comparable"]
    assert pair["aurc_difference"]["difference"] is not None and pair["aurc_difference"]["p_value"] is None


def test_the_leaderboard_shows_each_run_s_aurc(report):
    data, _, run_a = report
    board = leaderboard.build([run_a])[0]
    assert board["schema_version"] == "2.6"
    entry = board["benchmarks"]["pubmedqa_atlas_n100"]["runs"]["run-1"]
    assert entry["aurc"] == data["benchmarks"]["pubmedqa_atlas_n100"]["selective"]["aurc"]
    rows = [line for line in formats.to_markdown(board).splitlines() if "(run-1)" in line]
    assert rows and rows[0].split(" | ")[6] == stats.format_estimate(entry["aurc"])


def test_compare_prints_the_aurc_difference(report, demo_data_dir, tmp_path):
    _, _, run_a = report
    run_b = evaluated_run(tmp_path / "b", demo_data_dir, ["pubmedqa_atlas_n100"], salt="b", limit=None)
    comparison = compare_runs(score_path(run_a), score_path(run_b))
    aurc = comparison["benchmarks"]["pubmedqa_atlas_n100"]["aurc_difference"]
    text = formats.compare_markdown(comparison)
    assert (
        f"- pubmedqa_atlas_n100: {stats.format_estimate(aurc['difference'])} on 100 shared items; "
        f"p {formats.p_text(aurc)}"
    ) in text
