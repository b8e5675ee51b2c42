"""Several judges of the same items: a majority vote, and how much they agree (with bootstrap CIs).

Agreement is chance-corrected and ordinal-aware, because judges rate on an ordered scale (e.g. 0-10):

- two judges: Cohen's kappa with quadratic weights (:func:`sklearn.metrics.cohen_kappa_score`) over
  the items both rated, the categories being the scale's points and any other value a judge gave,
  in order;
- three or more: Krippendorff's alpha, interval level (the ``krippendorff`` package), over every
  item at least two judges rated (a missing rating is left out, not guessed).

The CI is the percentile bootstrap over items of :mod:`.stats`, stratified as the caller's headline
is. A resample in which the judges' ratings do not vary leaves the statistic undefined; the CI is
then reported as unavailable, never as a number.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from . import stats

Rating = float | None


def majority(ratings: Sequence[Rating]) -> Rating:
    """The rating more than half of the judges gave (a judge without a rating agrees with no one), else None."""
    counts = Counter(r for r in ratings if r is not None)
    if not counts:
        return None
    rating, count = counts.most_common(1)[0]
    return rating if count * 2 > len(ratings) else None


def cohen_kappa(a: Sequence[float], b: Sequence[float], labels: Sequence[float]) -> float:
    """Quadratic-weighted Cohen's kappa of two judges' ratings (NaN when undefined)."""
    import warnings

    from sklearn.exceptions import UndefinedMetricWarning
    from sklearn.metrics import cohen_kappa_score

    with warnings.catch_warnings():  # 0/0 when neither judge varies: NaN, reported as undefined
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        return float(cohen_kappa_score(a, b, labels=list(labels), weights="quadratic"))


def krippendorff_alpha(ratings: np.ndarray) -> float:
    """Interval-level Krippendorff's alpha of a judges x items array (NaN for a missing rating)."""
    import krippendorff

    usable = ratings[:, (~np.isnan(ratings)).sum(axis=0) >= 2]  # an item one judge rated says nothing of agreement
    if usable.shape[1] == 0 or len(np.unique(usable[~np.isnan(usable)])) < 2:
        return math.nan
    return float(krippendorff.alpha(reliability_data=usable, level_of_measurement="interval"))


def agreement(
    ratings: Sequence[Sequence[Rating]],
    scale: Sequence[float] = (),
    strata: Sequence[Hashable] | None = None,
) -> dict[str, Any]:
    """Agreement of ``ratings`` (one sequence per judge, aligned over the same items) with its bootstrap CI.

    ``scale`` lists the points of the rating scale (kappa's categories, with any other value given).
    """
    if len(ratings) < 2:
        raise ValueError("agreement needs at least two judges")
    n_items = len(ratings[0])
    array = np.array([[math.nan if r is None else float(r) for r in judge] for judge in ratings], dtype=float)
    if len(ratings) == 2:
        kept = np.flatnonzero(~np.isnan(array).any(axis=0))
        name = "cohen_kappa_quadratic"
        labels = sorted(set(scale) | set(array[:, kept].ravel().tolist()))
        first, second = array[0, kept], array[1, kept]

        def statistic(idx: np.ndarray) -> float:
            return cohen_kappa(first[idx], second[idx], labels)

    else:
        kept = np.flatnonzero((~np.isnan(array)).sum(axis=0) >= 2)
        name = "krippendorff_alpha_interval"
        usable = array[:, kept]

        def statistic(idx: np.ndarray) -> float:
            return krippendorff_alpha(usable[:, idx])

    result: dict[str, Any] = {
        "statistic": name,
        "judges": len(ratings),
        "items": int(len(kept)),
        "items_left_out": n_items - int(len(kept)),
    }
    if len(kept) == 0:
        return {**result, "estimate": None, "unavailable": "no item was rated by enough judges"}
    point = statistic(np.arange(len(kept)))
    if not math.isfinite(point):
        return {**result, "estimate": None, "unavailable": "undefined: the judges' ratings do not vary"}
    kept_strata = [strata[i] for i in kept] if strata is not None else None
    estimate = stats.bootstrap(stats.per_resample(statistic), len(kept), strata=kept_strata).as_dict()
    if not (math.isfinite(estimate["low"]) and math.isfinite(estimate["high"])):
        estimate["low"] = estimate["high"] = None
        result["ci_unavailable"] = "some resamples have ratings that do not vary, where the statistic is undefined"
    return {**result, "estimate": estimate}
