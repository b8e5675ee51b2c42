"""Uncertainty for every reported number: stratified bootstrap CIs and paired comparisons of runs.

All functions take per-item arrays. A statistic is a vectorised function of item weights: given an
``(..., n)`` array of how often each item was drawn (one row per resample; all ones for the items as
they are) it returns one value per row, so one matrix product evaluates every resample. The same machinery serves accuracy, macro accuracy over components,
macro-F1, or any other per-item-decomposable score. Resampling is stratified: each stratum (a
component, or a gold answer) keeps its size in every resample, as the benchmarks' designs fix those
sizes. A resample set is drawn once per (strata, size, count, seed) and reused by every estimate
and every paired comparison over the same items, so they all see the same resamples.

Where the bootstrap cannot carry a statistic it is not used: a proportion whose outcomes all agree (every
item right, or every item wrong) has no spread to resample, so its interval is Clopper-Pearson's exact one
(:func:`clopper_pearson`), never a zero-width interval; a number that does not vary over the items (a chance
rate) is a constant, with no interval at all; a paired accuracy difference takes the exact interval of the
McNemar test it is tested with (:func:`paired_proportion_difference`).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

N_RESAMPLES = 1000
SEED = 1234
CONFIDENCE = 0.95

# (..., n) item weights (draw counts) -> (...) values
Statistic = Callable[[np.ndarray], np.ndarray]


PERCENTILE = "percentile"  # the percentile bootstrap: every interval unless it names another method
CLOPPER_PEARSON = "clopper-pearson"  # a proportion whose outcomes all agree
EXACT_CONDITIONAL = "exact conditional"  # a paired accuracy difference: McNemar's exact interval


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its confidence interval (percentile bootstrap unless ``method`` says otherwise)."""

    value: float
    low: float
    high: float
    n: int
    confidence: float = CONFIDENCE
    n_resamples: int = N_RESAMPLES
    seed: int = SEED
    method: str = PERCENTILE

    def as_dict(self) -> dict:
        out = asdict(self)
        if self.method == PERCENTILE:  # the report's bootstrap section names the default once
            del out["method"]
        return out


def constant(value: float, n: int) -> dict:
    """A number that is the same on every item (e.g. a chance rate): a constant, shown without an interval."""
    return {"value": float(value), "n": n, "constant": True}


def clopper_pearson(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a binomial proportion: never zero-width for n > 0."""
    from scipy.special import betaincinv  # the beta distribution's quantile (scipy.stats costs a second to import)

    if not 0 <= successes <= n or n <= 0:
        raise ValueError(f"{successes} successes of {n}")
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if successes == 0 else float(betaincinv(successes, n - successes + 1, tail))
    high = 1.0 if successes == n else float(betaincinv(successes + 1, n - successes, 1.0 - tail))
    return low, high


def all_agree(outcomes: Sequence[float]) -> bool:
    """Every outcome is 1, or every outcome is 0: a proportion the bootstrap cannot give an interval."""
    values = np.asarray(outcomes, dtype=float)
    return len(values) > 0 and bool(np.all(values == values[0])) and float(values[0]) in (0.0, 1.0)


def exact_proportion(successes: int, n: int, confidence: float = CONFIDENCE) -> Estimate:
    """``successes`` of ``n`` as a proportion with its exact (Clopper-Pearson) interval."""
    low, high = clopper_pearson(successes, n, confidence)
    return Estimate(successes / n, low, high, n, confidence, method=CLOPPER_PEARSON)


def agreed_proportion(outcomes: Sequence[float], confidence: float = CONFIDENCE) -> Estimate:
    """A proportion whose outcomes all agree (:func:`all_agree`), with its Clopper-Pearson interval over the items.

    A macro mean of such items equals the same 0 or 1, and takes the same interval (the items, not the groups,
    are what was observed to agree)."""
    n = len(outcomes)
    return exact_proportion(n if float(outcomes[0]) == 1.0 else 0, n, confidence)


def paired_proportion_difference(a_only: int, b_only: int, n: int, confidence: float = CONFIDENCE) -> Estimate:
    """Accuracy A minus B over ``n`` paired items, from the discordant counts, with the exact conditional interval
    of the McNemar test: given m = a_only + b_only discordant items, a_only ~ Binomial(m, pi) and the difference
    is m / n * (2 pi - 1), so the Clopper-Pearson interval of pi maps onto the difference. It excludes 0 exactly
    when the exact McNemar p-value is below 1 - confidence. With no discordant item the difference is 0 and the
    interval is +-(the Clopper-Pearson upper bound of the discordant rate, 0 of n)."""
    if n <= 0 or a_only < 0 or b_only < 0 or a_only + b_only > n:
        raise ValueError(f"{a_only} + {b_only} discordant of {n} paired items")
    discordant = a_only + b_only
    if discordant == 0:
        bound = clopper_pearson(0, n, confidence)[1]
        return Estimate(0.0, -bound, bound, n, confidence, method=EXACT_CONDITIONAL)
    low, high = clopper_pearson(a_only, discordant, confidence)
    scale = discordant / n
    return Estimate(
        (a_only - b_only) / n, scale * (2 * low - 1), scale * (2 * high - 1), n, confidence, method=EXACT_CONDITIONAL
    )


@dataclass(frozen=True)
class Bootstrapped:
    """An estimate and its bootstrap distribution (the statistic on each resample, in the resample set's order)."""

    estimate: Estimate
    distribution: np.ndarray


@dataclass(frozen=True)
class PairedDifference:
    """A minus B on the same items, from the two statistics on the same resamples."""

    difference: Estimate
    p_value: float  # two-sided bootstrap p; never 0: at least 1 / (n_resamples + 1)
    p_value_is_bound: bool  # True: no resample fell on the other side of 0; the p-value is below the bound


def stratum_indices(strata: Sequence[Hashable] | None, n: int) -> list[np.ndarray]:
    """Item indices of each stratum, strata in order of first appearance (one stratum if None)."""
    if strata is None:
        return [np.arange(n)]
    if len(strata) != n:
        raise ValueError(f"{len(strata)} stratum labels for {n} items")
    groups: dict[Hashable, list[int]] = {}
    for index, label in enumerate(strata):
        groups.setdefault(label, []).append(index)
    return [np.asarray(members) for members in groups.values()]


_DRAWN: OrderedDict[tuple, np.ndarray] = OrderedDict()
# Bytes of resample sets kept in memory (a 14,274-item set of 1,000 resamples is 114 MB of weights): the least
# recently used are let go first; a set larger than this alone is kept alone.
_DRAWN_BYTES = 128 * 1024**2


def keep_resamples(limit: int) -> int:
    """Keep up to ``limit`` bytes of resample sets in this process from now on (128 MiB otherwise): for a process
    that scores run after run of the same items, which draw the same sets. Gives back the limit it replaces."""
    global _DRAWN_BYTES
    previous, _DRAWN_BYTES = _DRAWN_BYTES, limit
    return previous


def forget_resamples() -> None:
    """Let go of the resample sets :func:`resample_weights` keeps (hundreds of MB over a large run): for a command
    that has computed every interval it will write."""
    _DRAWN.clear()


def _drawn_rows(groups: Sequence[np.ndarray], n: int, n_resamples: int, seed: int):
    """Each resample's item indices, one row at a time: every stratum's size drawn with replacement, stratum by
    stratum, from one generator seeded with ``seed`` (the same strata give the same rows in every call)."""
    rng = np.random.default_rng(seed)
    row = np.empty(n, dtype=np.int64)
    for _ in range(n_resamples):
        start = 0
        for members in groups:
            row[start : start + len(members)] = members[rng.integers(0, len(members), len(members))]
            start += len(members)
        yield row


def resample_indices(
    strata: Sequence[Hashable] | None, n: int, n_resamples: int = N_RESAMPLES, seed: int = SEED
) -> np.ndarray:
    """``(n_resamples, n)`` item indices, each row drawing every stratum's size with replacement."""
    groups = stratum_indices(strata, n)
    return np.array([row.copy() for row in _drawn_rows(groups, n, n_resamples, seed)]).reshape(n_resamples, n)


def resample_weights(
    strata: Sequence[Hashable] | None, n: int, n_resamples: int = N_RESAMPLES, seed: int = SEED
) -> np.ndarray:
    """``(n_resamples, n)``: how often each item is drawn in each row of :func:`resample_indices`.

    Drawn once per (strata, n, n_resamples, seed) and reused (read-only) by every estimate and every
    paired comparison over the same items; counted row by row, so nothing larger than the weights is held.
    """
    groups = stratum_indices(strata, n)
    layout = hashlib.sha256()
    for members in groups:
        layout.update(np.asarray(members, dtype=np.int64).tobytes() + b"|")
    key = (layout.hexdigest(), n, n_resamples, seed)
    if key in _DRAWN:
        _DRAWN.move_to_end(key)
        return _DRAWN[key]
    # Room made before the new set is allocated, so that the sets kept and the new one never exceed the bound.
    while _DRAWN and sum(kept.nbytes for kept in _DRAWN.values()) + n_resamples * n * 8 > _DRAWN_BYTES:
        _DRAWN.popitem(last=False)
    weights = np.empty((n_resamples, n))
    for index, row in enumerate(_drawn_rows(groups, n, n_resamples, seed)):
        weights[index] = np.bincount(row, minlength=n)
    weights.setflags(write=False)
    _DRAWN[key] = weights
    return weights


def _interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)


def bootstrap_distribution(
    statistic: Statistic,
    n: int,
    strata: Sequence[Hashable] | None = None,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Bootstrapped:
    """``statistic`` on all ``n`` items, with a stratified percentile bootstrap CI and its distribution."""
    if n == 0:
        raise ValueError("cannot estimate a statistic over zero items")
    value = float(np.asarray(statistic(np.ones((1, n))))[0])
    distribution = np.asarray(statistic(resample_weights(strata, n, n_resamples, seed)), dtype=float)
    low, high = _interval(distribution, confidence)
    return Bootstrapped(Estimate(value, low, high, n, confidence, n_resamples, seed), distribution)


def bootstrap(
    statistic: Statistic,
    n: int,
    strata: Sequence[Hashable] | None = None,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
    outcomes: Sequence[float] | None = None,
) -> Estimate:
    """``statistic`` on all ``n`` items, with a stratified percentile bootstrap CI.

    ``outcomes``: the items' 0/1 outcomes when the statistic is a proportion of them (an accuracy, micro or
    macro); where they all agree the interval is Clopper-Pearson's (:func:`agreed_proportion`)."""
    if outcomes is not None and all_agree(outcomes):
        return agreed_proportion(outcomes, confidence)
    return bootstrap_distribution(statistic, n, strata, n_resamples, seed, confidence).estimate


def per_resample(statistic: Callable[[np.ndarray], float]) -> Statistic:
    """A vectorised statistic from one that takes the 1-D index array of one resample (e.g. a scikit-learn score)."""

    def vectorised(weights: np.ndarray) -> np.ndarray:
        rows = np.asarray(weights).reshape(-1, np.shape(weights)[-1])
        items = np.arange(rows.shape[-1])
        values = (statistic(np.repeat(items, row.astype(np.int64))) for row in rows)
        return np.fromiter(values, float, len(rows)).reshape(np.shape(weights)[:-1])

    return vectorised


def paired_difference(a: Bootstrapped, b: Bootstrapped) -> PairedDifference:
    """A minus B, from two bootstraps over the same items and the same resample set.

    The p-value is two-sided from the bootstrap distribution of the difference, so it is below 0.05
    exactly when the percentile 95% CI excludes 0 (up to the interpolation of the percentiles).
    """
    ea, eb = a.estimate, b.estimate
    if (ea.n, ea.n_resamples, ea.seed, ea.confidence) != (eb.n, eb.n_resamples, eb.seed, eb.confidence):
        raise ValueError("a paired difference needs two bootstraps over the same items and resamples")
    diffs = a.distribution - b.distribution
    low, high = _interval(diffs, ea.confidence)
    other_side = int(min(np.sum(diffs <= 0.0), np.sum(diffs >= 0.0)))
    bound = 1.0 / (ea.n_resamples + 1)
    p_value = min(1.0, 2.0 * other_side / ea.n_resamples)
    difference = Estimate(ea.value - eb.value, low, high, ea.n, ea.confidence, ea.n_resamples, ea.seed)
    return PairedDifference(difference, max(p_value, bound), p_value < bound)


# Fewer discordant items than this and a paired bootstrap's p-value is not trusted (its resamples of the difference
# take a handful of values, and its p reaches below what the exact test on those items could ever give): the exact
# test on the discordant items is used instead.
MIN_DISCORDANT = 10


def bootstrap_test_refused(
    differences: Sequence[float], strata: Sequence[Hashable] | None = None, groups: Sequence[np.ndarray] | None = None
) -> str | None:
    """Why a paired bootstrap cannot carry a p-value for these per-item differences (A minus B; None: it can);
    ``groups``: the strata's :func:`stratum_indices`, when the caller has them.

    With few discordant items its resamples take few distinct values, and a stratum whose items are all discordant
    the same way (one item alone in its stratum, say) is the same in every resample: the bootstrap then reports a
    certainty the items do not hold."""
    values = np.asarray(differences, dtype=float)
    discordant = int(np.count_nonzero(values))
    if discordant < MIN_DISCORDANT:
        return f"{discordant} discordant items, fewer than {MIN_DISCORDANT}: the bootstrap cannot carry a p-value"
    for members in stratum_indices(strata, len(values)) if groups is None else groups:
        own = values[members]
        if own[0] != 0 and np.all(own == own[0]):
            return (
                f"a stratum of {len(members)} items, every one discordant the same way, is the same in every "
                "resample: the bootstrap cannot carry a p-value"
            )
    return None


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts."""
    from scipy.stats import binomtest

    discordant = a_only + b_only
    return 1.0 if discordant == 0 else float(binomtest(a_only, discordant, 0.5).pvalue)


# ----------------------------------------------------------------------------- statistics


def mean_of(values: Sequence[float]) -> Statistic:
    array = np.asarray(values, dtype=float)
    return lambda weights: (weights @ array) / weights.sum(axis=-1)


def _one_hot(codes: np.ndarray, n_groups: int) -> np.ndarray:
    matrix = np.zeros((len(codes), n_groups))
    matrix[np.arange(len(codes)), codes] = 1.0
    return matrix


def macro_mean_of(values: Sequence[float], groups: Sequence[Hashable]) -> Statistic:
    """Unweighted mean over groups of each group's mean (e.g. the paper's macro accuracy).

    Meant for resamples stratified by the same groups, so no group ever goes missing; a group
    absent from a resample is left out of that resample's mean.
    """
    array = np.asarray(values, dtype=float)
    codes, n_groups = _codes(groups)
    members = _one_hot(codes, n_groups)
    weighted = members * array[:, None]

    def statistic(weights: np.ndarray) -> np.ndarray:
        sums, counts = weights @ weighted, weights @ members
        means = np.divide(sums, counts, out=np.full_like(sums, np.nan), where=counts > 0)
        return np.nanmean(means, axis=-1)

    return statistic


def _codes(labels: Sequence[Hashable]) -> tuple[np.ndarray, int]:
    order: dict[Hashable, int] = {}
    codes = np.fromiter((order.setdefault(label, len(order)) for label in labels), dtype=np.int64, count=len(labels))
    return codes, len(order)


def confusion_matrix(
    gold: Sequence[str], pred: Sequence[str], gold_labels: Sequence[str], pred_labels: Sequence[str]
) -> np.ndarray:
    """Counts with rows = gold labels, columns = predicted labels (which may add e.g. INVALID)."""
    row = {label: i for i, label in enumerate(gold_labels)}
    col = {label: j for j, label in enumerate(pred_labels)}
    matrix = np.zeros((len(gold_labels), len(pred_labels)), dtype=np.int64)
    for g, p in zip(gold, pred, strict=True):
        matrix[row[g], col[p]] += 1
    return matrix


def per_class_scores(matrix: np.ndarray, labels: Sequence[str]) -> dict[str, dict[str, float]]:
    """Precision, recall, F1 and support per gold label from a confusion matrix.

    Columns beyond the gold labels (INVALID) count against recall only. A class never predicted
    has precision 0, as in scikit-learn with ``zero_division=0``.
    """
    k = len(labels)
    true_pos = np.diag(matrix[:, :k]).astype(float)
    predicted = matrix[:, :k].sum(axis=0).astype(float)
    support = matrix.sum(axis=1).astype(float)
    precision = np.divide(true_pos, predicted, out=np.zeros(k), where=predicted > 0)
    recall = np.divide(true_pos, support, out=np.zeros(k), where=support > 0)
    denom = precision + recall
    f1 = np.divide(2 * precision * recall, denom, out=np.zeros(k), where=denom > 0)
    return {
        label: {
            "precision": float(precision[i]),
            "recall": float(recall[i]),
            "f1": float(f1[i]),
            "support": int(support[i]),
        }
        for i, label in enumerate(labels)
    }


def macro_f1_of(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> Statistic:
    """Macro-F1 over ``labels`` (the gold classes); predictions outside them are simply wrong.

    Equal to ``sklearn.metrics.f1_score(gold, pred, labels=labels, average="macro", zero_division=0)``.
    """
    k = len(labels)
    index = {label: i for i, label in enumerate(labels)}
    gold_codes = np.fromiter((index[g] for g in gold), dtype=np.int64, count=len(gold))
    pred_codes = np.fromiter((index.get(p, k) for p in pred), dtype=np.int64, count=len(pred))
    cells = _one_hot(gold_codes * (k + 1) + pred_codes, k * (k + 1))

    def statistic(weights: np.ndarray) -> np.ndarray:
        counts = (weights @ cells).reshape(*np.shape(weights)[:-1], k, k + 1)
        true_pos = np.diagonal(counts[..., :k], axis1=-2, axis2=-1)
        predicted, support = counts[..., :k].sum(axis=-2), counts.sum(axis=-1)
        precision = np.divide(true_pos, predicted, out=np.zeros_like(true_pos), where=predicted > 0)
        recall = np.divide(true_pos, support, out=np.zeros_like(true_pos), where=support > 0)
        denom = precision + recall
        f1 = np.divide(2 * precision * recall, denom, out=np.zeros_like(denom), where=denom > 0)
        return f1.mean(axis=-1)

    return statistic


ALL_AGREE_RULE = (
    "a proportion whose outcomes all agree (every item right, or every item wrong) takes the Clopper-Pearson "
    "interval over its items (its estimate says method clopper-pearson); a number equal on every item is a "
    "constant, without an interval"
)


def bootstrap_description(**context: str) -> dict:
    """How every CI of a report was computed, for its ``bootstrap`` section; ``context`` adds e.g. the unit."""
    return {
        "method": PERCENTILE,
        "n_resamples": N_RESAMPLES,
        "seed": SEED,
        "confidence": CONFIDENCE,
        "all_agree": ALL_AGREE_RULE,
        **context,
    }


def format_estimate(estimate: Any, digits: int = 3, scale: float = 1.0) -> str:
    """``value [low, high]`` of an :meth:`Estimate.as_dict` (``scale=100`` for percentages); ``n/a`` for anything
    that is no estimate, the interval left out where it is missing, ``(constant)`` after a :func:`constant` (the one
    formatter of every page and file)."""
    if not isinstance(estimate, Mapping) or _number(estimate.get("value")) is None:
        return "n/a"
    value, low, high = (_number(estimate.get(key)) for key in ("value", "low", "high"))
    interval = f" [{scale * low:.{digits}f}, {scale * high:.{digits}f}]" if low is not None and high is not None else ""
    if estimate.get("constant") is True:
        interval = " (constant)"
    return f"{scale * value:.{digits}f}{interval}"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def format_ties(ties: Any) -> list[str]:
    """A log-likelihood section's ties in words (every page and the console): how many, how lm-eval decided them,
    the range another tie-break allows and the expectation of a random one; and, when the ties could move the
    headline by more than its CI's half-width, a warning saying so. Empty when nothing was tied."""
    if not isinstance(ties, Mapping) or not ties.get("n_tied"):
        return []
    lines = [
        f"tied best log-likelihoods: {ties['n_tied']} items, decided by answer order ({ties.get('rule')}); "
        f"{ties.get('n_tied_counted_correct')} of them counted right"
    ]
    if isinstance(ties.get("lowest"), Mapping):
        lines.append(
            f"{ties['metric']} with every tied item counted wrong: {format_estimate(ties['lowest'])}; counted right "
            f"where its gold is tied: {format_estimate(ties['highest'])}; expected under a random tie-break: "
            f"{format_estimate(ties['expected'])}"
        )
    if ties.get("could_move_headline"):
        lines.append(
            f"the ties could move {ties['metric']} by more than its 95% CI's half-width: this number depends on the "
            "answer order (a float32 run has no such ties)"
        )
    return lines


def format_detectable(detectable: Any, against: str = "") -> str:
    """The minimum detectable difference of a comparison (:mod:`.power`) in words; ``against`` names the other side
    (e.g. "an equal model")."""
    if not isinstance(detectable, Mapping):
        return "n/a"
    what = f" against {against}" if against else ""
    mdd = _number(detectable.get("minimum_detectable_difference"))
    if mdd is None:
        return f"no detectable difference{what}: {detectable.get('reason')}"
    return f"smallest difference detectable{what} at 80% power, alpha 0.05: {mdd:.3f}"
