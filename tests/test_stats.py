import math
from collections import Counter

import numpy as np
import pytest
from lm_eval_tasks.utils import stats
from sklearn.metrics import f1_score, precision_recall_fscore_support


def test_constant_scores_have_a_degenerate_interval():
    estimate = stats.bootstrap(stats.mean_of([1.0] * 50), 50)
    assert (estimate.value, estimate.low, estimate.high) == (1.0, 1.0, 1.0)


def test_interval_width_matches_the_normal_approximation():
    values = [1.0, 0.0] * 200  # p = 0.5, n = 400: half-width 1.96 * sqrt(0.25 / 400) = 0.049
    estimate = stats.bootstrap(stats.mean_of(values), 400)
    assert estimate.value == 0.5
    assert estimate.high - 0.5 == pytest.approx(0.049, abs=0.006)
    assert 0.5 - estimate.low == pytest.approx(0.049, abs=0.006)


def test_same_seed_same_interval_and_seed_is_recorded():
    values = list(np.random.default_rng(0).integers(0, 2, 100).astype(float))
    a = stats.bootstrap(stats.mean_of(values), 100, seed=7)
    b = stats.bootstrap(stats.mean_of(values), 100, seed=7)
    c = stats.bootstrap(stats.mean_of(values), 100, seed=8)
    assert a == b and a.seed == 7 and a.n_resamples == 1000
    assert (a.low, a.high) != (c.low, c.high)


def test_stratified_resamples_keep_every_stratum_size():
    strata = ["a"] * 5 + ["b"] * 2 + ["c"] * 9
    drawn = stats.resample_indices(strata, len(strata), n_resamples=50, seed=3)
    assert drawn.shape == (50, 16)
    for idx in drawn:
        assert Counter(strata[i] for i in idx) == {"a": 5, "b": 2, "c": 9}


def test_a_resample_set_is_drawn_once_and_reproduces_the_draw_in_order():
    strata = ["x", "y", "x", "y", "y"]
    drawn = stats.resample_indices(strata, 5, n_resamples=20, seed=11)
    weights = stats.resample_weights(strata, 5, n_resamples=20, seed=11)
    assert stats.resample_weights(strata, 5, n_resamples=20, seed=11) is weights  # reused, not redrawn
    assert np.array_equal(weights, [np.bincount(row, minlength=5) for row in drawn])
    rng = np.random.default_rng(11)  # independently: per resample, each stratum in order of first appearance
    x, y = np.array([0, 2]), np.array([1, 3, 4])
    expected = [np.concatenate([x[rng.integers(0, 2, 2)], y[rng.integers(0, 3, 3)]]) for _ in range(20)]
    assert np.array_equal(drawn, np.array(expected))
    stats.forget_resamples()  # let go of: drawn again, the same
    again = stats.resample_weights(strata, 5, n_resamples=20, seed=11)
    assert again is not weights and np.array_equal(again, weights)


def test_resample_sets_are_kept_up_to_the_bytes_allowed_the_least_recently_used_let_go(monkeypatch):
    monkeypatch.setattr(stats, "_DRAWN_BYTES", stats._DRAWN_BYTES)  # set back after the test
    stats.forget_resamples()
    one_set = 50 * 100 * 8  # bytes of a 100-item set of 50 resamples
    stats.keep_resamples(2 * one_set)
    first = stats.resample_weights(None, 100, n_resamples=50, seed=1)
    second = stats.resample_weights(None, 100, n_resamples=50, seed=2)
    assert stats.resample_weights(None, 100, n_resamples=50, seed=1) is first  # both fit
    stats.keep_resamples(one_set)
    third = stats.resample_weights(None, 100, n_resamples=50, seed=3)  # room for one: the other two let go
    assert stats.resample_weights(None, 100, n_resamples=50, seed=3) is third
    again = stats.resample_weights(None, 100, n_resamples=50, seed=2)
    assert again is not second and np.array_equal(again, second)
    stats.forget_resamples()


@pytest.mark.parametrize("kind", ["mean", "macro", "f1"])
def test_vectorised_statistics_equal_their_definition_on_every_resample(kind):
    rng = np.random.default_rng(2)
    values = rng.integers(0, 2, 60).astype(float)
    groups = list(rng.choice(["a", "b", "c"], 60))
    gold, pred = list(rng.choice(["yes", "no"], 60)), list(rng.choice(["yes", "no", "INVALID"], 60))
    statistic, reference = {
        "mean": (stats.mean_of(values), lambda idx: values[idx].mean()),
        "macro": (
            stats.macro_mean_of(values, groups),
            lambda idx: np.mean([values[[i for i in idx if groups[i] == g]].mean() for g in sorted(set(groups))]),
        ),
        "f1": (
            stats.macro_f1_of(gold, pred, ["yes", "no"]),
            lambda idx: f1_score(
                [gold[i] for i in idx], [pred[i] for i in idx], labels=["yes", "no"], average="macro", zero_division=0
            ),
        ),
    }[kind]
    drawn = stats.resample_indices(groups, 60, n_resamples=40, seed=5)
    weights = stats.resample_weights(groups, 60, n_resamples=40, seed=5)
    assert statistic(weights) == pytest.approx([reference(idx) for idx in drawn])
    assert stats.per_resample(reference)(weights) == pytest.approx(statistic(weights))  # order within a row is free


def test_macro_mean_is_the_unweighted_mean_of_group_means():
    values = [1, 1, 0, 0, 0, 1, 1, 1, 1, 1]
    groups = ["a", "a", "a", "b", "b", "b", "c", "c", "c", "c"]
    # a: 2/3, b: 1/3, c: 1 -> macro 2/3; micro 7/10
    assert stats.macro_mean_of(values, groups)(np.ones(10)) == pytest.approx(2 / 3)
    assert stats.mean_of(values)(np.ones(10)) == pytest.approx(0.7)


def test_per_class_scores_from_a_hand_worked_matrix():
    # rows gold SUPPORT, NEI, CONTRADICT; columns SUPPORT, NEI, CONTRADICT, INVALID
    matrix = np.array([[1, 0, 0, 1], [0, 1, 1, 0], [1, 0, 2, 0]])
    scores = stats.per_class_scores(matrix, ["SUPPORT", "NEI", "CONTRADICT"])
    assert scores["SUPPORT"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}
    assert scores["NEI"] == pytest.approx({"precision": 1.0, "recall": 0.5, "f1": 2 / 3, "support": 2})
    assert scores["CONTRADICT"] == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3, "support": 3})


def test_macro_f1_and_per_class_agree_with_scikit_learn():
    rng = np.random.default_rng(1)
    labels = ["yes", "no", "maybe"]
    gold = list(rng.choice(labels, 300))
    pred = list(rng.choice(labels + ["INVALID"], 300, p=[0.5, 0.25, 0.15, 0.1]))
    expected = f1_score(gold, pred, labels=labels, average="macro", zero_division=0)
    assert stats.macro_f1_of(gold, pred, labels)(np.ones(300)) == pytest.approx(expected)
    matrix = stats.confusion_matrix(gold, pred, labels, labels + ["INVALID"])
    p, r, f, s = precision_recall_fscore_support(gold, pred, labels=labels, zero_division=0)
    ours = stats.per_class_scores(matrix, labels)
    assert [ours[label]["precision"] for label in labels] == pytest.approx(list(p))
    assert [ours[label]["recall"] for label in labels] == pytest.approx(list(r))
    assert [ours[label]["f1"] for label in labels] == pytest.approx(list(f))


def test_always_one_class_macro_f1():
    # always "yes" on 276/169/55: F1(yes) = 2*.552*1/(1.552), others 0 -> 0.2370 (PubMedQA's always-yes)
    gold = ["yes"] * 276 + ["no"] * 169 + ["maybe"] * 55
    value = stats.macro_f1_of(gold, ["yes"] * 500, ["yes", "no", "maybe"])(np.ones(500))
    assert value == pytest.approx(2 * 0.552 / 1.552 / 3)
    assert round(value, 3) == 0.237


def test_mcnemar_exact_values():
    assert stats.mcnemar_exact(5, 0) == pytest.approx(2 * 0.5**5)
    assert stats.mcnemar_exact(3, 3) == pytest.approx(1.0)
    assert stats.mcnemar_exact(0, 0) == 1.0
    # binomial two-sided for 8 vs 2 of 10: 2 * P(X <= 2) = 2 * (1 + 10 + 45) / 1024
    assert stats.mcnemar_exact(8, 2) == pytest.approx(2 * 56 / 1024)


def _paired(a, b, strata=None):
    n = len(a)
    return stats.paired_difference(
        stats.bootstrap_distribution(stats.mean_of(a), n, strata),
        stats.bootstrap_distribution(stats.mean_of(b), n, strata),
    )


def test_paired_difference_of_identical_runs_is_null():
    values = [1.0, 0.0, 1.0, 1.0] * 25
    result = _paired(values, values)
    assert (result.difference.value, result.difference.low, result.difference.high) == (0.0, 0.0, 0.0)
    assert result.p_value == 1.0 and not result.p_value_is_bound


def test_paired_difference_detects_a_clear_difference_and_never_prints_zero():
    a = [1.0] * 80 + [0.0] * 20
    b = [1.0] * 50 + [0.0] * 50  # a is right on 30 items where b is wrong, never the reverse
    result = _paired(a, b)
    assert result.difference.value == pytest.approx(0.3) and result.difference.low > 0.15
    # No resample has a difference <= 0: the p-value is the bound 1 / (B + 1), flagged as a bound.
    assert result.p_value == pytest.approx(1 / 1001) and result.p_value_is_bound


def test_paired_difference_p_value_agrees_with_the_interval():
    rng = np.random.default_rng(3)
    for shift in (0.0, 0.05, 0.1, 0.15, 0.2):
        a = (rng.random(200) < 0.5 + shift).astype(float)
        b = (rng.random(200) < 0.5).astype(float)
        result = _paired(a, b)
        excludes_zero = result.difference.low > 0 or result.difference.high < 0
        if abs(result.p_value - 0.05) > 0.01:  # away from the boundary, where percentile interpolation decides
            assert (result.p_value < 0.05) == excludes_zero


def test_paired_difference_needs_the_same_resamples():
    with pytest.raises(ValueError):
        stats.paired_difference(
            stats.bootstrap_distribution(stats.mean_of([1.0, 0.0]), 2),
            stats.bootstrap_distribution(stats.mean_of([1.0, 0.0, 1.0]), 3),
        )


def test_zero_items_is_an_error():
    with pytest.raises(ValueError):
        stats.bootstrap(stats.mean_of([]), 0)
    assert not math.isnan(stats.bootstrap(stats.mean_of([0.0]), 1).value)


def test_the_one_estimate_formatter():
    estimate = {"value": 0.5, "low": 0.25, "high": 0.75}
    assert stats.format_estimate(estimate) == "0.500 [0.250, 0.750]"
    assert stats.format_estimate(estimate, digits=1, scale=100) == "50.0 [25.0, 75.0]"
    assert stats.format_estimate({"value": 0.5, "low": None, "high": None}) == "0.500"
    assert stats.format_estimate(None) == stats.format_estimate({"value": True}) == stats.format_estimate("x") == "n/a"


def test_proportions_whose_outcomes_all_agree_get_the_exact_interval():
    from scipy.stats import beta

    # Four items, all wrong: 0 [0, 1 - 0.025 ** (1 / 4)], never 0.000 [0.000, 0.000].
    wrong = stats.bootstrap(stats.mean_of([0.0] * 4), 4, outcomes=[0.0] * 4)
    assert (wrong.value, wrong.low) == (0.0, 0.0) and wrong.high == pytest.approx(1 - 0.025**0.25)
    assert wrong.high == pytest.approx(beta.ppf(0.975, 1, 4)) and wrong.method == "clopper-pearson"
    right = stats.bootstrap(stats.mean_of([1.0] * 11), 11, outcomes=[1.0] * 11)
    assert right.high == 1.0 and right.low == pytest.approx(0.025 ** (1 / 11))
    # Mixed outcomes keep the percentile bootstrap, and its dict does not repeat the default method.
    mixed = stats.bootstrap(stats.mean_of([0.0, 1.0] * 5), 10, outcomes=[0.0, 1.0] * 5)
    assert mixed.method == "percentile" and "method" not in mixed.as_dict() and mixed.low < 0.5 < mixed.high


def test_a_constant_is_shown_without_an_interval():
    assert stats.format_estimate(stats.constant(0.25, 84)) == "0.250 (constant)"
    assert stats.format_estimate(stats.agreed_proportion([0.0] * 4).as_dict()) == "0.000 [0.000, 0.602]"
