"""Judges' majority vote and agreement, on hand-worked examples."""

import math

import numpy as np
import pytest
from lm_eval_tasks.utils import stats
from lm_eval_tasks.utils.agreement import agreement, cohen_kappa, krippendorff_alpha, majority


@pytest.mark.parametrize(
    "ratings, vote",
    [
        ([70, 70, 80], 70),
        ([70, 80], None),  # two judges who differ: no majority
        ([70, None, 70], 70),
        ([70, None, None], None),  # one judge of three is not a majority
        ([None, None], None),
        ([0, 0], 0),  # a 0 is a rating, not a missing one
    ],
)
def test_majority_is_more_than_half_of_the_judges(ratings, vote):
    assert majority(ratings) == vote


def test_quadratic_kappa_by_hand():
    # categories 0 < 10 < 20; a = 0,10,20,20 and b = 0,20,20,10.
    # observed weighted disagreement: (1-2)^2 + (2-1)^2 = 2 (in category steps)
    # expected: marginals (1,1,2) and (1,1,2); sum of (i-j)^2 r_i c_j / 4 = (1+8+1+2+8+2) / 4 = 5.5
    # kappa = 1 - 2 / 5.5 = 7/11
    assert cohen_kappa([0, 10, 20, 20], [0, 20, 20, 10], [0, 10, 20]) == pytest.approx(7 / 11)
    result = agreement([[0, 10, 20, 20, None], [0, 20, 20, 10, 30]], scale=(0, 10, 20))
    # the fifth item has one rating: left out; 30 is not rated by both, so not a category either
    assert (result["statistic"], result["items"], result["items_left_out"]) == ("cohen_kappa_quadratic", 4, 1)
    assert result["estimate"]["value"] == pytest.approx(7 / 11)


def test_interval_alpha_by_hand():
    # units (1,1,1), (2,2,2), (1,1,2): n = 9 values. Observed: only the third unit disagrees, its ordered
    # pairs (1,2) x2 and (2,1) x2 give 4, over m_u - 1 = 2: D_o = 2 / 9. Expected: five 1s and four 2s,
    # 5 * 4 * 2 = 40 differing ordered pairs: D_e = 40 / (9 * 8). alpha = 1 - (2/9) / (40/72) = 0.6
    three = np.array([[1, 2, 1], [1, 2, 1], [1, 2, 2]], dtype=float)
    assert krippendorff_alpha(three) == pytest.approx(0.6)
    # the third unit missing one rating: n = 8, D_o = 2 / 8, D_e = (4 * 4 * 2) / (8 * 7); alpha = 9/16
    three[1, 2] = math.nan
    assert krippendorff_alpha(three) == pytest.approx(9 / 16)
    result = agreement([[1, 2, 1, None], [1, 2, None, None], [1, 2, 2, 5]])
    assert (result["statistic"], result["items"], result["items_left_out"]) == ("krippendorff_alpha_interval", 3, 1)
    assert result["estimate"]["value"] == pytest.approx(9 / 16)


def test_the_ci_is_the_stratified_bootstrap_of_the_same_statistic():
    rng = np.random.default_rng(7)
    a = rng.integers(0, 11, 60) * 10.0
    b = np.clip(a + rng.choice([-10.0, 0.0, 0.0, 10.0], 60), 0, 100)
    strata = ["cp", "slp", "af"] * 20
    result = agreement([list(a), list(b)], scale=range(0, 101, 10), strata=strata)
    from sklearn.metrics import cohen_kappa_score

    labels = list(range(0, 101, 10))
    samples = [
        cohen_kappa_score(a[i], b[i], labels=labels, weights="quadratic") for i in stats.resample_indices(strata, 60)
    ]
    low, high = np.percentile(samples, [2.5, 97.5])
    estimate = result["estimate"]
    assert estimate["value"] == pytest.approx(cohen_kappa_score(a, b, labels=labels, weights="quadratic"))
    assert (estimate["low"], estimate["high"]) == (pytest.approx(low), pytest.approx(high))
    assert estimate["low"] < estimate["value"] < estimate["high"]


def test_judges_who_never_vary_have_no_agreement_number():
    result = agreement([[80, 80, 80], [80, 80, 80]], scale=range(0, 101, 10))
    assert result["estimate"] is None and "do not vary" in result["unavailable"]
    assert agreement([[80, None], [None, 70]])["unavailable"] == "no item was rated by enough judges"
    with pytest.raises(ValueError):
        agreement([[1, 2]])
