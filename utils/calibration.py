"""Calibration: how sure a model is when it answers, against how often it is right.

Two sources of confidence, one set of measures:

- log-likelihood protocols: the probabilities are the softmax over the choices' logged log-likelihoods,
  the confidence is the probability of the predicted choice (the most likely one);
- a stated confidence (a model asked for a 0-100 confidence in its answer): confidence / 100.

ECE (expected calibration error, Guo et al. 2017) uses 10 equal-width bins over the confidence,
[0, 0.1), [0.1, 0.2), ..., [0.8, 0.9), [0.9, 1.0] (the last closed): the sum over bins of the bin's share
of items times |accuracy - mean confidence| in it. The Brier score is the multi-class one over the
choices' probabilities (mean over items of the sum over choices of (p - 1[gold])^2, 0 to 2), or for a
stated confidence the binary one of the answer being right ((confidence - correct)^2, 0 to 1).

Every statistic here is vectorised over item weights, as :mod:`.stats` expects, so a bootstrap evaluates
all resamples in one matrix product. No lm-eval import: the report calls it per section.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import stats
from .samples import choice_probabilities, choose_by_loglikelihood

N_BINS = 10
# k / 10 exactly (not linspace, whose 0.30000000000000004 would put a confidence of 0.3 in the bin below).
BIN_EDGES = tuple(k / N_BINS for k in range(N_BINS + 1))
BIN_LABELS = tuple(
    f"[{low:.1f}, {high:.1f}{']' if k == N_BINS - 1 else ')'}"
    for k, (low, high) in enumerate(zip(BIN_EDGES, BIN_EDGES[1:]))
)


@dataclass(frozen=True)
class Forecast:
    """One answered item's confidence and whether the answer was right; with the choices' probabilities and the
    gold choice for a log-likelihood item (multi-class Brier), none for a stated confidence (binary Brier)."""

    confidence: float
    correct: bool
    probabilities: tuple[float, ...] = ()
    gold_choice: int | None = None


def from_loglikelihoods(loglikelihoods: Sequence[float], gold_choice: int) -> Forecast | None:
    """The forecast of a log-likelihood item: the probability of the choice it is read as
    (:func:`.samples.choose_by_loglikelihood`); None for an item without an answer."""
    choice = choose_by_loglikelihood(loglikelihoods, len(loglikelihoods))
    if choice.index is None:
        return None
    probabilities = tuple(choice_probabilities(choice.loglikelihoods))
    return Forecast(probabilities[choice.index], choice.index == gold_choice, probabilities, gold_choice)


def from_stated(confidence_percent: float | None, correct: bool) -> Forecast | None:
    """The forecast of a stated 0-100 confidence in the selected answer; None when none was stated (or not a
    finite number in 0-100)."""
    if confidence_percent is None or isinstance(confidence_percent, bool):
        return None
    value = float(confidence_percent)
    if not 0.0 <= value <= 100.0:  # also NaN
        return None
    return Forecast(value / 100.0, bool(correct))


def bin_of(confidences: Sequence[float]) -> np.ndarray:
    """The bin index (0-9) of each confidence in [0, 1]: [k/10, (k+1)/10), the last bin closed at 1."""
    return np.searchsorted(np.asarray(BIN_EDGES[1:-1]), np.asarray(confidences, dtype=float), side="right")


def _bin_matrix(forecasts: Sequence[Forecast]) -> np.ndarray:
    members = np.zeros((len(forecasts), N_BINS))
    members[np.arange(len(forecasts)), bin_of([f.confidence for f in forecasts])] = 1.0
    return members


def ece_of(forecasts: Sequence[Forecast]) -> stats.Statistic:
    """ECE over item weights: sum over bins of (n_b / n) |acc_b - conf_b| = sum over bins of
    |sum correct - sum confidence| / n, so every resample is two matrix products."""
    members = _bin_matrix(forecasts)
    gap = members * np.asarray([float(f.correct) - f.confidence for f in forecasts])[:, None]

    def statistic(weights: np.ndarray) -> np.ndarray:
        return np.abs(weights @ gap).sum(axis=-1) / weights.sum(axis=-1)

    return statistic


def brier_values(forecasts: Sequence[Forecast]) -> np.ndarray:
    """Each item's Brier term: multi-class (sum over choices) with probabilities, binary without."""
    values = []
    for forecast in forecasts:
        if forecast.probabilities:
            target = np.zeros(len(forecast.probabilities))
            target[forecast.gold_choice] = 1.0
            values.append(float(np.sum((np.asarray(forecast.probabilities) - target) ** 2)))
        else:
            values.append((forecast.confidence - float(forecast.correct)) ** 2)
    return np.asarray(values, dtype=float)


def brier_kind(forecasts: Sequence[Forecast]) -> str:
    kinds = {bool(f.probabilities) for f in forecasts}
    if len(kinds) > 1:
        raise ValueError("a Brier score mixes choice probabilities with stated confidences")
    return "multiclass" if kinds == {True} else "binary"


def reliability(forecasts: Sequence[Forecast]) -> list[dict]:
    """Per bin: its edges, items, mean confidence and accuracy (None in an empty bin): the reliability diagram."""
    bins = bin_of([f.confidence for f in forecasts])
    out = []
    for k in range(N_BINS):
        members = [f for f, b in zip(forecasts, bins, strict=True) if b == k]
        out.append(
            {
                "bin": BIN_LABELS[k],
                "low": BIN_EDGES[k],
                "high": BIN_EDGES[k + 1],
                "n": len(members),
                "mean_confidence": float(np.mean([f.confidence for f in members])) if members else None,
                "accuracy": float(np.mean([f.correct for f in members])) if members else None,
            }
        )
    return out
