"""Uncertainty for every reported number: stratified bootstrap CIs and paired comparisons of runs.

All functions take per-item arrays. A statistic is a function of an index array (the items of
one resample), so the same machinery serves accuracy, macro accuracy over components, macro-F1,
or any other per-item-decomposable score. Resampling is stratified: each stratum (a component, or
a gold answer) keeps its size in every resample, as the benchmarks' designs fix those sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

N_RESAMPLES = 1000
SEED = 1234
CONFIDENCE = 0.95

Statistic = Callable[[np.ndarray], float]


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its percentile bootstrap confidence interval."""

    value: float
    low: float
    high: float
    n: int
    confidence: float = CONFIDENCE
    n_resamples: int = N_RESAMPLES
    seed: int = SEED

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PairedComparison:
    """Run A minus run B on the same items."""

    difference: Estimate
    p_value: float  # two-sided, from the bootstrap distribution of the difference
    mcnemar_p_value: float | None  # exact McNemar test, when the per-item scores are 0/1
    a_only_correct: int | None
    b_only_correct: int | None

    def as_dict(self) -> dict:
        return {**asdict(self), "difference": self.difference.as_dict()}


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


def resamples(strata: Sequence[Hashable] | None, n: int, n_resamples: int = N_RESAMPLES, seed: int = SEED):
    """Yield ``n_resamples`` index arrays, each drawing every stratum's size with replacement."""
    rng = np.random.default_rng(seed)
    groups = stratum_indices(strata, n)
    for _ in range(n_resamples):
        yield np.concatenate([members[rng.integers(0, len(members), len(members))] for members in groups])


def _interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)


def bootstrap(
    statistic: Statistic,
    n: int,
    strata: Sequence[Hashable] | None = None,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> Estimate:
    """``statistic`` on all ``n`` items, with a stratified percentile bootstrap CI."""
    if n == 0:
        raise ValueError("cannot estimate a statistic over zero items")
    value = float(statistic(np.arange(n)))
    samples = np.fromiter((statistic(idx) for idx in resamples(strata, n, n_resamples, seed)), float, n_resamples)
    low, high = _interval(samples, confidence)
    return Estimate(value, low, high, n, confidence, n_resamples, seed)


def paired_comparison(
    statistic_a: Statistic,
    statistic_b: Statistic,
    n: int,
    strata: Sequence[Hashable] | None = None,
    binary_a: Sequence[float] | None = None,
    binary_b: Sequence[float] | None = None,
    n_resamples: int = N_RESAMPLES,
    seed: int = SEED,
    confidence: float = CONFIDENCE,
) -> PairedComparison:
    """A minus B, both statistics evaluated on the same resampled items.

    ``binary_a``/``binary_b`` (per-item 0/1 correctness, aligned) add the exact McNemar test.
    """
    value = float(statistic_a(np.arange(n)) - statistic_b(np.arange(n)))
    diffs = np.fromiter(
        (statistic_a(idx) - statistic_b(idx) for idx in resamples(strata, n, n_resamples, seed)), float, n_resamples
    )
    low, high = _interval(diffs, confidence)
    p_value = float(min(1.0, 2.0 * min(np.mean(diffs <= 0.0), np.mean(diffs >= 0.0))))
    mcnemar = a_only = b_only = None
    if binary_a is not None and binary_b is not None:
        a, b = np.asarray(binary_a, dtype=bool), np.asarray(binary_b, dtype=bool)
        a_only, b_only = int(np.sum(a & ~b)), int(np.sum(~a & b))
        mcnemar = mcnemar_exact(a_only, b_only)
    return PairedComparison(
        Estimate(value, low, high, n, confidence, n_resamples, seed), p_value, mcnemar, a_only, b_only
    )


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts."""
    from scipy.stats import binomtest

    discordant = a_only + b_only
    return 1.0 if discordant == 0 else float(binomtest(a_only, discordant, 0.5).pvalue)


# ----------------------------------------------------------------------------- statistics


def mean_of(values: Sequence[float]) -> Statistic:
    array = np.asarray(values, dtype=float)
    return lambda idx: float(array[idx].mean())


def macro_mean_of(values: Sequence[float], groups: Sequence[Hashable]) -> Statistic:
    """Unweighted mean over groups of each group's mean (e.g. the paper's macro accuracy).

    Meant for resamples stratified by the same groups, so no group ever goes missing.
    """
    array = np.asarray(values, dtype=float)
    codes, n_groups = _codes(groups)

    def statistic(idx: np.ndarray) -> float:
        sums = np.bincount(codes[idx], weights=array[idx], minlength=n_groups)
        counts = np.bincount(codes[idx], minlength=n_groups)
        present = counts > 0
        return float(np.mean(sums[present] / counts[present]))

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

    def statistic(idx: np.ndarray) -> float:
        matrix = np.bincount(gold_codes[idx] * (k + 1) + pred_codes[idx], minlength=k * (k + 1)).reshape(k, k + 1)
        scores = per_class_scores(matrix, labels)
        return float(np.mean([scores[label]["f1"] for label in labels]))

    return statistic


def bootstrap_description(**context: str) -> dict:
    """How every CI of a report was computed, for its ``bootstrap`` section; ``context`` adds e.g. the unit."""
    return {"method": "percentile", "n_resamples": N_RESAMPLES, "seed": SEED, "confidence": CONFIDENCE, **context}


def format_estimate(estimate: Mapping | None, digits: int = 3, scale: float = 1.0) -> str:
    """``value [low, high]`` of an :meth:`Estimate.as_dict`, or ``n/a``; ``scale=100`` for percentages."""
    if not estimate:
        return "n/a"
    value, low, high = (scale * estimate[key] for key in ("value", "low", "high"))
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"
