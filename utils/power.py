"""Power of the exact McNemar test, and the minimum detectable difference (MDD) of a paired comparison.

Two models answered the same n items; the exact McNemar test (``stats.mcnemar_exact``) asks whether
their accuracies differ. Before reading a non-significant result as "no difference", a researcher
needs to know whether n items could ever have shown one: the MDD is the smallest accuracy difference
that the test detects with power 0.80 at two-sided alpha 0.05.

Model: each item is discordant (exactly one of the two models right) with probability q, the
discordant rate; given that, A is the one right with probability pi, so the accuracy difference is
delta = q * (2 * pi - 1) and |delta| <= q. The number of discordant items M is Binomial(n, q), and
given M = m the test sees A_only ~ Binomial(m, pi). Power is computed exactly over m, with q taken as
known: in practice it is the observed discordant rate of a pair of runs, or the rate 2a(1 - a)
against an independent model of the same accuracy a.
"""

from __future__ import annotations

import math
from functools import lru_cache
from numbers import Integral, Real

import numpy as np
from scipy.special import bdtr, bdtrc, bdtrik, gammaln

ALPHA = 0.05
POWER = 0.80
# Values of M further than this many standard deviations (plus a margin for skewed small counts) from the mean of
# Binomial(n, q) are left out of the power sum: they change it by less than 1e-12, and skipping them keeps
# n = 100,000 to a few thousand terms.
_SPREAD = 8.0
_MARGIN = 12
# Bisection stops when the bracket on |delta| / q is this narrow.
_TOLERANCE = 1e-4
# Per alpha, the critical value of each number of discordant items computed so far (_UNKNOWN where not yet): a
# leaderboard's thousands of pairs share most of their m, and the inverse CDF is the dearest step of a pair.
_CRITICAL: dict[float, np.ndarray] = {}
_UNKNOWN = -2


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 0:
        raise ValueError(f"{name} must be a non-negative whole number, got {value!r}")
    return int(value)


def _rate(name: str, value: object) -> float:
    # `not 0 <= x <= 1` is also true for NaN
    if isinstance(value, bool) or not isinstance(value, Real) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def _alpha(alpha: object) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, Real) or not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    return float(alpha)


def mcnemar_critical_values(discordant: np.ndarray | int, alpha: float = ALPHA) -> np.ndarray:
    """For each number of discordant items m, the largest k with 2 * P(X <= k) < alpha, X ~ Binomial(m, 1/2).

    The exact McNemar test rejects exactly when A_only <= k or A_only >= m - k; k = -1 where no
    outcome of m items can reject.
    """
    alpha = _alpha(alpha)
    m = np.asarray(discordant)
    if m.dtype.kind not in "iu" or (m < 0).any():
        raise ValueError(f"discordant must be non-negative whole numbers, got {discordant!r}")
    # The continuous inverse of the binomial CDF gives k to within one; the two corrections settle it exactly.
    guess = np.nan_to_num(bdtrik(alpha / 2, m, 0.5), nan=-1.0)
    k = np.clip(np.floor(guess), -1, m).astype(np.int64)
    k = np.where((k + 1 <= m) & (2 * _cdf(k + 1, m, 0.5) < alpha), k + 1, k)
    return np.where((k >= 0) & (2 * _cdf(k, m, 0.5) >= alpha), k - 1, k)


def _critical_values(m: np.ndarray, alpha: float) -> np.ndarray:
    """:func:`mcnemar_critical_values` of ``m`` (non-negative whole numbers), each computed once per process."""
    table = _CRITICAL.get(alpha, np.full(0, _UNKNOWN, dtype=np.int64))
    if m.size and m.max() >= len(table):
        table = np.concatenate([table, np.full(m.max() + 1 - len(table), _UNKNOWN, dtype=np.int64)])
    missing = m[table[m] == _UNKNOWN]
    if missing.size:
        table[missing] = mcnemar_critical_values(missing, alpha)
    _CRITICAL[alpha] = table
    return table[m]


def _cdf(k: np.ndarray, n: np.ndarray | int, p: float) -> np.ndarray:
    """P(X <= k) for X ~ Binomial(n, p): 0 below 0, 1 from n on."""
    k = np.asarray(k)
    inside = bdtr(np.clip(k, 0, None), n, p)
    return np.where(k < 0, 0.0, np.where(k >= n, 1.0, inside))


def _sf(k: np.ndarray, n: np.ndarray | int, p: float) -> np.ndarray:
    """P(X > k) for X ~ Binomial(n, p)."""
    k = np.asarray(k)
    inside = bdtrc(np.clip(k, 0, None), n, p)
    return np.where(k < 0, 1.0, np.where(k >= n, 0.0, inside))


def _pmf(m: np.ndarray, n: int, q: float) -> np.ndarray:
    """P(M = m) for M ~ Binomial(n, q), from log-gamma (no overflow at n = 100,000)."""
    if q in (0.0, 1.0):
        return (m == (n if q else 0)).astype(float)
    log = gammaln(n + 1) - gammaln(m + 1) - gammaln(n - m + 1) + m * np.log(q) + (n - m) * np.log1p(-q)
    return np.exp(log)


# :meth:`_PowerCurve.reaches` first sums the terms within these many standard deviations of the mean (each a
# fraction of the whole sum's terms): the weight outside bounds what the rest can add. _SLACK covers the rounding
# of either sum (a few ulps per term).
_CORE_SPREADS = (2.0, 4.0)
_SLACK = 1e-9


class _PowerCurve:
    """Power as a function of pi for fixed n, q and alpha; the parts that do not depend on pi are computed once."""

    def __init__(self, n: int, q: float, alpha: float):
        sd = math.sqrt(n * q * (1 - q))
        mean, spread = n * q, _SPREAD * sd + _MARGIN
        m = np.arange(max(0, math.floor(mean - spread)), min(n, math.ceil(mean + spread)) + 1)
        k = _critical_values(m, alpha)
        can_reject = k >= 0
        self.m, self.k = m[can_reject], k[can_reject]
        self.weights = _pmf(self.m, n, q)
        # (weights, m, k) of each core, with the weight of the terms outside it; a core holding most terms is none.
        self.cores = []
        for width in _CORE_SPREADS:
            inside = np.abs(self.m - mean) <= width * sd + _MARGIN
            if inside.sum() < 0.8 * len(self.m):
                outside = float(self.weights[~inside].sum())
                self.cores.append((self.weights[inside], self.m[inside], self.k[inside], outside))

    def __call__(self, pi: float) -> float:
        return float(min(1.0, self.weights @ _rejection(self.m, self.k, pi)))

    def reaches(self, pi: float, target: float) -> bool:
        """``self(pi) >= target`` (``target`` below 1), from the central terms alone where the weight of the others
        cannot change the answer: each term's rejection probability is in [0, 1], so the whole sum lies between the
        core's sum and that plus the weight outside the core."""
        for weights, m, k, outside in self.cores:
            partial = float(weights @ _rejection(m, k, pi))
            if partial - _SLACK >= target:
                return True
            if partial + outside + _SLACK < target:
                return False
        return self(pi) >= target


def _rejection(m: np.ndarray, k: np.ndarray, pi: float) -> np.ndarray:
    """P(A_only <= k) + P(A_only >= m - k) for A_only ~ Binomial(m, pi): the chance the test rejects given m."""
    return _cdf(k, m, pi) + _sf(m - k - 1, m, pi)


def mcnemar_power(n: int, discordant_rate: float, difference: float, alpha: float = ALPHA) -> float:
    """Probability that the exact McNemar test on n paired items rejects at two-sided alpha.

    ``difference`` is the accuracy difference A minus B; power depends on its size only.
    """
    n = _count("n", n)
    q = _rate("discordant_rate", discordant_rate)
    alpha = _alpha(alpha)
    if isinstance(difference, bool) or not isinstance(difference, Real) or not abs(difference) <= q:
        raise ValueError(f"difference must be a number with |difference| <= discordant_rate = {q}, got {difference!r}")
    pi = 0.5 + abs(difference) / (2 * q) if q > 0 else 0.5
    return _PowerCurve(n, q, alpha)(pi)


# Asked once per pair of runs by the leaderboard, where pairs on the same items repeat the same (n, discordant rate).
@lru_cache(maxsize=65536)
def minimum_detectable_difference(
    n: int, discordant_rate: float, alpha: float = ALPHA, power: float = POWER
) -> float | None:
    """The smallest |difference| in (0, discordant_rate] whose power reaches ``power``, to within 1e-4 * discordant_rate.

    None when even the largest possible difference (every discordant item going A's way) falls
    short, e.g. n = 5, where no outcome gives p < 0.05, or when there are no items or no discordance.
    """
    n = _count("n", n)
    q = _rate("discordant_rate", discordant_rate)
    alpha = _alpha(alpha)
    # the exact test's size is at most alpha, so a target at or below it would be met by difference 0
    if isinstance(power, bool) or not isinstance(power, Real) or not alpha < power < 1.0:
        raise ValueError(f"power must be a number in (alpha, 1) = ({alpha}, 1), got {power!r}")
    if n == 0 or q == 0.0:
        return None
    curve = _PowerCurve(n, q, alpha)
    if not curve.reaches(1.0, power):
        return None
    # bisect on s = |difference| / q, pi = (1 + s) / 2; power is increasing in s
    low, high = 0.0, 1.0
    while high - low > _TOLERANCE:
        middle = (low + high) / 2
        if curve.reaches((1 + middle) / 2, power):
            high = middle
        else:
            low = middle
    return high * q


def equal_model_discordant_rate(accuracy: float) -> float:
    """Discordant rate 2a(1 - a) against a model of the same accuracy a whose errors are independent of this one's."""
    a = _rate("accuracy", accuracy)
    return 2 * a * (1 - a)


def describe() -> dict:
    """The method, in words, for reports (JSON-able)."""
    return {
        "test": "exact McNemar",
        "alpha": ALPHA,
        "power": POWER,
        "method": (
            "Each of n paired items is discordant (exactly one model right) with probability q, the discordant rate, "
            "and A is the one right on a discordant item with probability (1 + d/q)/2, so the accuracy difference is d; "
            "power sums, over the Binomial(n, q) number of discordant items, the chance that the exact McNemar test "
            f"rejects at two-sided alpha {ALPHA}, and the minimum detectable difference is the smallest |d| reaching "
            f"power {POWER:.2f}."
        ),
        "equal_model": (
            "Against an equal model, q is 2a(1 - a): the discordant rate of a model with the same accuracy a "
            "whose errors are independent of this one's."
        ),
    }


def _report(n: int, q: float | None, no_discordance: str) -> dict:
    if n == 0:
        mdd, reason = None, "no paired items"
    elif q == 0.0:
        mdd, reason = None, no_discordance
    else:
        mdd = minimum_detectable_difference(n, q)
        reason = (
            None if mdd is not None else f"no difference on these {n} items reaches {POWER:.0%} power at alpha {ALPHA}"
        )
    return {"n_pairs": n, "discordant_rate": q, "minimum_detectable_difference": mdd, "reason": reason}


def detectable(n_pairs: int, a_only: int, b_only: int) -> dict:
    """The MDD of a pair of runs on n_pairs items, at their observed discordant rate (a_only + b_only) / n_pairs."""
    n = _count("n_pairs", n_pairs)
    a = _count("a_only", a_only)
    b = _count("b_only", b_only)
    if a + b > n:
        raise ValueError(f"a_only + b_only = {a + b} exceeds n_pairs = {n}")
    return _report(
        n,
        (a + b) / n if n else None,
        "no discordant items: the discordant rate, and so the detectable difference, cannot be estimated",
    )


def detectable_against_equal(n: int, accuracy: float) -> dict:
    """The smallest difference n items could show against an independent model of the same accuracy."""
    n = _count("n", n)
    q = equal_model_discordant_rate(accuracy)
    return _report(
        n, q, f"at accuracy {accuracy:g} an equal independent model never disagrees, so no difference can show"
    )
