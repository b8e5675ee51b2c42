import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils import power
from scipy.stats import binomtest, norm

from tests.conftest import examples


def simulated_rejection_rate(n: int, q: float, difference: float, runs: int = 4000, seed: int = 0) -> float:
    """Share of simulated paired comparisons in which scipy's exact binomial test rejects at 0.05."""
    pi = 0.5 + difference / (2 * q)
    # per-item outcomes: both right, A only, B only, both wrong (the concordant split is arbitrary)
    cells = [0.6 * (1 - q), q * pi, q * (1 - pi), 0.4 * (1 - q)]
    counts = np.random.default_rng(seed).multinomial(n, cells, size=runs)
    a_only, discordant = counts[:, 1], counts[:, 1] + counts[:, 2]
    # one binomtest per distinct (A_only, discordant) outcome rather than per simulated comparison
    pairs, inverse = np.unique(np.stack([a_only, discordant], axis=1), axis=0, return_inverse=True)
    rejects = np.array([m > 0 and binomtest(int(x), int(m), 0.5).pvalue < 0.05 for x, m in pairs])
    return float(rejects[inverse.ravel()].mean())


@pytest.mark.parametrize("n, q", [(100, 0.3), (500, 0.1), (236, 0.25)])
def test_simulated_power_at_the_mdd_is_80_percent(n, q):
    mdd = power.minimum_detectable_difference(n, q)
    assert mdd is not None
    # 4,000 runs: standard error sqrt(0.8 * 0.2 / 4000) = 0.006
    assert simulated_rejection_rate(n, q, mdd) == pytest.approx(0.80, abs=0.03)
    # away from the MDD, the computed power still matches the simulation
    assert simulated_rejection_rate(n, q, -mdd / 2, seed=1) == pytest.approx(
        power.mcnemar_power(n, q, -mdd / 2), abs=0.03
    )


def test_hand_worked_small_cases():
    # one discordant item: the two-sided p-value is 1
    assert power.mcnemar_power(1, 1.0, 1.0) == 0.0
    assert power.minimum_detectable_difference(1, 1.0) is None
    # five discordant items all one way: p = 2 * 0.5**5 = 0.0625, never below 0.05
    assert power.mcnemar_power(5, 1.0, 1.0) == 0.0
    assert power.minimum_detectable_difference(5, 1.0) is None
    # six all one way: p = 2 * 0.5**6 = 0.03125; only 0 or 6 for A rejects
    assert power.mcnemar_power(6, 1.0, 1.0) == pytest.approx(1.0)
    assert power.mcnemar_power(6, 1.0, 0.0) == pytest.approx(2 * 0.5**6)
    assert power.mcnemar_power(6, 1.0, 0.5) == pytest.approx(0.75**6 + 0.25**6)  # pi = 0.75
    # q = 0.5, pi = 1: rejects only when all six items are discordant
    assert power.mcnemar_power(6, 0.5, 0.5) == pytest.approx(0.5**6)


def test_critical_values_match_binomtest():
    m_values = np.arange(61)
    critical = power.mcnemar_critical_values(m_values)
    for m, k in zip(m_values, critical):
        rejected = {x for x in range(m + 1) if binomtest(x, int(m), 0.5).pvalue < 0.05} if m else set()
        assert rejected == {x for x in range(m + 1) if x <= k or x >= m - k}, m
    assert critical[:6].tolist() == [-1] * 6 and critical[6] == 0
    for m in (10_001, 50_000):
        (k,) = power.mcnemar_critical_values([m])
        assert binomtest(int(k), m, 0.5).pvalue < 0.05 <= binomtest(int(k) + 1, m, 0.5).pvalue


@pytest.mark.parametrize("n, q", [(30, 0.5), (100, 0.3), (236, 0.25), (2000, 0.05)])
def test_power_increases_with_the_size_of_the_difference(n, q):
    sizes = np.linspace(0, q, 41)
    powers = np.array([power.mcnemar_power(n, q, d) for d in sizes])
    steps = np.diff(powers)
    # strictly increasing until the power is 1 to within rounding
    assert (steps >= 0).all() and (steps[powers[1:] < 0.999] > 0).all()
    assert powers[0] <= 0.05
    assert [power.mcnemar_power(n, q, -d) for d in sizes] == pytest.approx(powers.tolist())


def test_mdd_halves_as_items_quadruple_and_matches_the_normal_approximation():
    q = 0.2
    mdd = {n: power.minimum_detectable_difference(n, q) for n in (100, 400, 1600)}
    assert mdd[100] / mdd[400] == pytest.approx(2, rel=0.15)
    assert mdd[400] / mdd[1600] == pytest.approx(2, rel=0.15)
    z = norm.ppf(0.975) + norm.ppf(0.80)  # 2.80
    assert mdd[1600] == pytest.approx(z * math.sqrt(q / 1600), rel=0.10)


@settings(max_examples=examples(60), deadline=None)
@given(
    n=st.integers(0, 3000),
    q=st.floats(0, 1),
    share=st.floats(-1, 1),
)
def test_power_is_a_probability_and_mdd_is_the_smallest_difference_reaching_80_percent(n, q, share):
    assert 0.0 <= power.mcnemar_power(n, q, share * q) <= 1.0
    mdd = power.minimum_detectable_difference(n, q)
    if mdd is None:
        assert n == 0 or q == 0 or power.mcnemar_power(n, q, q) < 0.80
    else:
        assert 0 < mdd <= q
        assert power.mcnemar_power(n, q, mdd) >= 0.80
        assert power.mcnemar_power(n, q, max(mdd - 1e-4 * q, 0.0)) < 0.80


def bisected_on_the_whole_sum(n, q, target):
    """The MDD's bisection as its rule reads, every power summed over all its terms."""
    curve = power._PowerCurve(n, q, power.ALPHA)
    if curve(1.0) < target:
        return None
    low, high = 0.0, 1.0
    while high - low > 1e-4:
        middle = (low + high) / 2
        low, high = (low, middle) if curve((1 + middle) / 2) >= target else (middle, high)
    return high * q


@settings(max_examples=examples(200), deadline=None)
@given(n=st.integers(1, 40_000), q=st.floats(0.001, 1), target=st.sampled_from([0.5, 0.8, 0.9, 0.99]))
def test_deciding_from_the_central_terms_gives_the_mdd_of_the_whole_sum(n, q, target):
    # The bisection decides each step from the terms near the mean where the rest cannot change the answer:
    # the same MDD, to the bit, as summing every term at every step.
    power.minimum_detectable_difference.cache_clear()
    assert power.minimum_detectable_difference(n, q, power=target) == bisected_on_the_whole_sum(n, q, target)
    curve = power._PowerCurve(n, q, power.ALPHA)
    for pi in (0.5, 0.6, 0.75, 0.9, 1.0):
        assert curve.reaches(pi, target) == (curve(pi) >= target)


def test_equal_model_discordant_rate():
    # A right and B wrong, or the other way round, with independent errors
    assert power.equal_model_discordant_rate(0.7) == pytest.approx(0.7 * 0.3 + 0.3 * 0.7)
    assert power.equal_model_discordant_rate(1.0) == 0.0
    assert power.equal_model_discordant_rate(0.5) == 0.5


def test_detectable_reports():
    report = power.detectable(236, 20, 39)
    assert report == {
        "n_pairs": 236,
        "discordant_rate": 0.25,
        "minimum_detectable_difference": power.minimum_detectable_difference(236, 0.25),
        "reason": None,
    }
    assert 0 < report["minimum_detectable_difference"] <= 0.25

    too_few = power.detectable(5, 3, 2)
    assert too_few["minimum_detectable_difference"] is None
    assert too_few["reason"] == "no difference on these 5 items reaches 80% power at alpha 0.05"

    no_discordance = power.detectable(10, 0, 0)
    assert no_discordance["discordant_rate"] == 0.0 and no_discordance["minimum_detectable_difference"] is None
    assert no_discordance["reason"].startswith("no discordant items")

    assert power.detectable(0, 0, 0)["discordant_rate"] is None

    equal = power.detectable_against_equal(14_274, 0.7)
    assert equal["discordant_rate"] == pytest.approx(0.42)
    # 2 * 0.7 * 0.3 is 0.42 only to rounding; the bisection's tolerance absorbs that
    assert equal["minimum_detectable_difference"] == pytest.approx(
        power.minimum_detectable_difference(14_274, 0.42), abs=1e-4 * 0.42
    )
    perfect = power.detectable_against_equal(100, 1.0)
    assert perfect["minimum_detectable_difference"] is None and perfect["reason"]

    for description in (power.describe(), report, too_few, no_discordance, equal, perfect):
        assert json.loads(json.dumps(description)) == description
    assert power.describe()["test"] == "exact McNemar"
    assert (power.describe()["alpha"], power.describe()["power"]) == (0.05, 0.8)


@pytest.mark.parametrize(
    "call, argument",
    [
        (lambda: power.mcnemar_power(-1, 0.2, 0.0), "n"),
        (lambda: power.mcnemar_power(10.5, 0.2, 0.0), "n"),
        (lambda: power.mcnemar_power(10, 1.2, 0.0), "discordant_rate"),
        (lambda: power.mcnemar_power(10, math.nan, 0.0), "discordant_rate"),
        (lambda: power.mcnemar_power(10, 0.2, 0.3), "difference"),
        (lambda: power.mcnemar_power(10, 0.2, math.nan), "difference"),
        (lambda: power.mcnemar_power(10, 0.2, 0.1, alpha=0.0), "alpha"),
        (lambda: power.minimum_detectable_difference(10, -0.1), "discordant_rate"),
        (lambda: power.minimum_detectable_difference(10, 0.2, power=0.01), "power"),
        (lambda: power.minimum_detectable_difference(10, 0.2, power=math.nan), "power"),
        (lambda: power.equal_model_discordant_rate(math.nan), "accuracy"),
        (lambda: power.equal_model_discordant_rate(1.5), "accuracy"),
        (lambda: power.detectable(-1, 0, 0), "n_pairs"),
        (lambda: power.detectable(10, -1, 0), "a_only"),
        (lambda: power.detectable(10, 6, 5), "a_only \\+ b_only"),
        (lambda: power.detectable_against_equal(-3, 0.5), "n"),
        (lambda: power.mcnemar_critical_values([-1]), "discordant"),
    ],
)
def test_bad_inputs_raise_naming_the_argument(call, argument):
    with pytest.raises(ValueError, match=f"^{argument}"):
        call()


@settings(max_examples=examples(60), deadline=None)
@given(
    requests=st.lists(st.lists(st.integers(0, 3000), min_size=1, max_size=40), min_size=1, max_size=6),
    alpha=st.sampled_from([0.05, 0.01]),
)
def test_critical_values_computed_once_per_process_are_those_computed_afresh(requests, alpha):
    # Whatever order and overlap the leaderboard's pairs ask for them in, the table gives the values the inverse CDF
    # gives each m on its own.
    power._CRITICAL.clear()
    for m in requests:
        m = np.array(m)
        got = power._critical_values(m, alpha)
        assert got.tolist() == [int(power.mcnemar_critical_values(np.array([x]), alpha)[0]) for x in m.tolist()]
