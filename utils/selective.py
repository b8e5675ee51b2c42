"""Selective prediction (abstention): how the error rate falls when a model answers only where it is most sure.

The confidence is calibration's (:class:`.calibration.Forecast`): the probability of the predicted choice, or a
stated confidence / 100. Items are taken in descending confidence; items of equal confidence enter together (a
tie group), so no order among them is invented. Covering the first tie groups up to and including group g:
coverage = covered items / all items, risk = wrong answers among the covered / covered items.

- AURC (area under the risk-coverage curve, Geifman and El-Yaniv 2018): the area under the step curve that
  gives every coverage in (coverage before g, coverage with g] the risk with g, i.e. the sum over tie groups of
  (group size / n) x risk with the group. With no ties this is the usual mean over k = 1..n of the risk of the
  k most confident items; lower is better, and it is never below the optimal AURC of the same outcomes (every
  right answer ranked above every wrong one: :func:`optimal_aurc`).
- accuracy at a coverage c: over the fewest whole tie groups, in that order, that hold at least c x n items
  (so a tie group at the boundary enters whole, and the coverage reached can exceed c: it is reported).

Every statistic here is vectorised over item weights as :mod:`.stats` expects (a weight is how often a bootstrap
resample draws the item), so one pass over the resample set gives every resample's value. No lm-eval import.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from . import stats
from .calibration import Forecast

# The coverages accuracy is reported at.
COVERAGES = (Fraction(1, 2), Fraction(4, 5))
# The curve's points: the fewest whole tie groups covering at least k% of the items, k = 1..100 (deduplicated), so
# a report holds at most 100 points whatever the section's size.
CURVE_STEPS = 100
_ROWS_AT_ONCE = 128  # resamples per block (a block's cumulative sums are rows x items floats)


def not_computable(forecasts: Sequence[Forecast]) -> str | None:
    """Why these forecasts cannot carry a risk-coverage statistic (None: they can)."""
    if len(forecasts) < 2:
        return f"{len(forecasts)} item(s) with a confidence: a ranking needs at least 2"
    if len({f.confidence for f in forecasts}) == 1:
        return "every item has the same confidence: there is no ranking to abstain by"
    if len({bool(f.correct) for f in forecasts}) == 1:
        return (
            "every answer is "
            + ("right" if forecasts[0].correct else "wrong")
            + ": the risk is the same at every coverage"
        )
    return None


def _ranked(forecasts: Sequence[Forecast]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The items' order (descending confidence, ties in item order), each tie group's last position in that order,
    and the items' 0/1 errors in that order."""
    confidence = np.asarray([f.confidence for f in forecasts], dtype=float)
    order = np.argsort(-confidence, kind="stable")
    ranked = confidence[order]
    ends = np.flatnonzero(np.append(ranked[1:] != ranked[:-1], True))
    errors = np.asarray([0.0 if f.correct else 1.0 for f in forecasts])[order]
    return order, ends, errors


def _cumulative(weights: np.ndarray, order: np.ndarray, ends: np.ndarray, errors: np.ndarray):
    """Per row of weights: the covered weight and the covered errors with each tie group, ``(rows, groups)``."""
    rows = np.asarray(weights, dtype=float).reshape(-1, np.shape(weights)[-1])[:, order]
    return np.cumsum(rows, axis=1)[:, ends], np.cumsum(rows * errors, axis=1)[:, ends]


def _blocks(weights: np.ndarray, one_block) -> np.ndarray:
    rows = np.asarray(weights, dtype=float).reshape(-1, np.shape(weights)[-1])
    values = [one_block(rows[start : start + _ROWS_AT_ONCE]) for start in range(0, len(rows), _ROWS_AT_ONCE)]
    return np.concatenate(values).reshape(np.shape(weights)[:-1])


def aurc_of(forecasts: Sequence[Forecast]) -> stats.Statistic:
    """AURC over item weights: sum over tie groups of (group weight / total) x (covered errors / covered weight);
    a group no resample draws adds nothing."""
    order, ends, errors = _ranked(forecasts)

    def block(rows: np.ndarray) -> np.ndarray:
        covered, wrong = _cumulative(rows, order, ends, errors)
        group = np.diff(covered, axis=1, prepend=0.0)
        risk = np.divide(wrong, covered, out=np.zeros_like(wrong), where=covered > 0)
        return (group * risk).sum(axis=1) / covered[:, -1]

    return lambda weights: _blocks(weights, block)


def _boundary(covered: np.ndarray, coverage: Fraction) -> np.ndarray:
    """Per row: the first tie group whose covered weight reaches ``coverage`` of the total (exact: the weights
    are counts)."""
    return np.argmax(covered * coverage.denominator >= coverage.numerator * covered[:, -1:], axis=1)


def accuracy_at_coverage_of(forecasts: Sequence[Forecast], coverage: Fraction) -> stats.Statistic:
    """Accuracy over the fewest whole tie groups covering at least ``coverage`` of the items' weight."""
    order, ends, errors = _ranked(forecasts)

    def block(rows: np.ndarray) -> np.ndarray:
        covered, wrong = _cumulative(rows, order, ends, errors)
        at = _boundary(covered, coverage)
        taken = np.arange(len(rows))
        return (covered[taken, at] - wrong[taken, at]) / covered[taken, at]

    return lambda weights: _blocks(weights, block)


def covered_at(forecasts: Sequence[Forecast], coverage: Fraction) -> np.ndarray:
    """The positions (in ``forecasts``) of the items covered at ``coverage``."""
    order, ends, errors = _ranked(forecasts)
    covered, _ = _cumulative(np.ones(len(forecasts)), order, ends, errors)
    return np.sort(order[: int(covered[0, _boundary(covered, coverage)[0]])])


def curve(forecasts: Sequence[Forecast]) -> list[dict]:
    """The risk-coverage curve: per point, the lowest confidence covered, the items covered, coverage and risk;
    at the fewest whole tie groups covering at least k% of the items, k = 1..:data:`CURVE_STEPS`."""
    order, ends, errors = _ranked(forecasts)
    covered, wrong = (values[0] for values in _cumulative(np.ones(len(forecasts)), order, ends, errors))
    n = len(forecasts)
    points = []
    for step in range(1, CURVE_STEPS + 1):
        at = int(np.argmax(covered * CURVE_STEPS >= step * n))
        if points and points[-1]["n_covered"] == int(covered[at]):
            continue
        points.append(
            {
                "confidence": float(forecasts[order[ends[at]]].confidence),
                "n_covered": int(covered[at]),
                "coverage": float(covered[at] / n),
                "risk": float(wrong[at] / covered[at]),
            }
        )
    return points


def optimal_aurc(n: int, n_correct: int) -> float:
    """The AURC of ``n`` items of which ``n_correct`` are right, every right answer ranked above every wrong one
    (distinct confidences): the lowest AURC those outcomes allow."""
    return float(sum((k - n_correct) / k for k in range(n_correct + 1, n + 1)) / n)
