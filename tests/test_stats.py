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
    for idx in stats.resamples(strata, len(strata), n_resamples=50, seed=3):
        assert Counter(strata[i] for i in idx) == {"a": 5, "b": 2, "c": 9}


def test_macro_mean_is_the_unweighted_mean_of_group_means():
    values = [1, 1, 0, 0, 0, 1, 1, 1, 1, 1]
    groups = ["a", "a", "a", "b", "b", "b", "c", "c", "c", "c"]
    # a: 2/3, b: 1/3, c: 1 -> macro 2/3; micro 7/10
    assert stats.macro_mean_of(values, groups)(np.arange(10)) == pytest.approx(2 / 3)
    assert stats.mean_of(values)(np.arange(10)) == pytest.approx(0.7)


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
    assert stats.macro_f1_of(gold, pred, labels)(np.arange(300)) == pytest.approx(expected)
    matrix = stats.confusion_matrix(gold, pred, labels, labels + ["INVALID"])
    p, r, f, s = precision_recall_fscore_support(gold, pred, labels=labels, zero_division=0)
    ours = stats.per_class_scores(matrix, labels)
    assert [ours[label]["precision"] for label in labels] == pytest.approx(list(p))
    assert [ours[label]["recall"] for label in labels] == pytest.approx(list(r))
    assert [ours[label]["f1"] for label in labels] == pytest.approx(list(f))


def test_always_one_class_macro_f1():
    # always "yes" on 276/169/55: F1(yes) = 2*.552*1/(1.552), others 0 -> 0.2370 (PubMedQA's always-yes)
    gold = ["yes"] * 276 + ["no"] * 169 + ["maybe"] * 55
    value = stats.macro_f1_of(gold, ["yes"] * 500, ["yes", "no", "maybe"])(np.arange(500))
    assert value == pytest.approx(2 * 0.552 / 1.552 / 3)
    assert round(value, 3) == 0.237


def test_mcnemar_exact_values():
    assert stats.mcnemar_exact(5, 0) == pytest.approx(2 * 0.5**5)
    assert stats.mcnemar_exact(3, 3) == pytest.approx(1.0)
    assert stats.mcnemar_exact(0, 0) == 1.0
    # binomial two-sided for 8 vs 2 of 10: 2 * P(X <= 2) = 2 * (1 + 10 + 45) / 1024
    assert stats.mcnemar_exact(8, 2) == pytest.approx(2 * 56 / 1024)


def test_paired_comparison_of_identical_runs_is_null():
    values = [1.0, 0.0, 1.0, 1.0] * 25
    result = stats.paired_comparison(
        stats.mean_of(values), stats.mean_of(values), 100, binary_a=values, binary_b=values
    )
    assert (result.difference.value, result.difference.low, result.difference.high) == (0.0, 0.0, 0.0)
    assert result.p_value == 1.0 and result.mcnemar_p_value == 1.0
    assert (result.a_only_correct, result.b_only_correct) == (0, 0)


def test_paired_comparison_detects_a_clear_difference():
    a = [1.0] * 80 + [0.0] * 20
    b = [1.0] * 50 + [0.0] * 50  # a is right on 30 items where b is wrong, never the reverse
    result = stats.paired_comparison(stats.mean_of(a), stats.mean_of(b), 100, binary_a=a, binary_b=b)
    assert result.difference.value == pytest.approx(0.3)
    assert result.difference.low > 0.15 and result.p_value < 0.01
    assert (result.a_only_correct, result.b_only_correct) == (30, 0)
    assert result.mcnemar_p_value == pytest.approx(2 * 0.5**30)


def test_zero_items_is_an_error():
    with pytest.raises(ValueError):
        stats.bootstrap(stats.mean_of([]), 0)
    assert not math.isnan(stats.bootstrap(stats.mean_of([0.0]), 1).value)
