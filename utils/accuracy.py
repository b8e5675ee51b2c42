"""The accuracy of a set of scored items as a spec defines it (micro and macro, over the answered items or all of
them, per-item rates), each with its stratified bootstrap CI (:mod:`.stats`), and what another tie-break would
make of a log-likelihood section's headline: the estimates a section (:mod:`.section`) and a comparison
(:mod:`.comparison`) are made of."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import stats
from .samples import HIGHEST_LOGLIKELIHOOD_TIED
from .scoring import INVALID, AccuracyMetric, AccuracyOver, Average, BenchmarkSpec, Headline, ScoredItem, item_column

# Groups with fewer items are flagged as small: their CIs are wide and a percentile bootstrap is rough.
SMALL_GROUP = 30


def strata(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> Sequence[str]:
    return item_column(items, spec.stratum_field)


def estimate(
    statistic, items: Sequence[ScoredItem], spec: BenchmarkSpec, outcomes: Sequence[float] | None = None
) -> dict[str, Any]:
    """A bootstrap estimate over ``items``; ``outcomes``: their 0/1 outcomes when the statistic is a proportion
    (an interval where they all agree is Clopper-Pearson's: :func:`.stats.bootstrap`)."""
    return stats.bootstrap(statistic, len(items), strata=strata(items, spec), outcomes=outcomes).as_dict()


def accuracy_of(
    metric: AccuracyMetric, items: Sequence[ScoredItem], spec: BenchmarkSpec, correct: Sequence[float] | None = None
):
    """An accuracy metric over ``items`` (``correct``: other per-item outcomes than the items' own)."""
    correct = [item.correct for item in items] if correct is None else correct
    return estimate(metric_statistic(metric, items, correct), items, spec, outcomes=correct)


def rate(values: Sequence[float], items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """The mean of a per-item rate: a constant where every item has the same value (e.g. a chance rate) unless
    it is an agreed 0/1 outcome (then a proportion with its exact interval)."""
    if len(set(values)) == 1 and not stats.all_agree(values):
        return stats.constant(values[0], len(values))
    return estimate(stats.mean_of(values), items, spec, outcomes=values)


def metric_statistic(
    metric: AccuracyMetric, items: Sequence[ScoredItem], correct: Sequence[float] | None = None
) -> stats.Statistic:
    """The statistic of an accuracy metric (micro or macro) over ``items`` (``correct``: per-item outcomes other
    than the items' own, e.g. a tie-break's). Which items it is over is the caller's: all of them for
    ``accuracy_all_*``, unanswered (INVALID) counted wrong."""
    correct = [item.correct for item in items] if correct is None else correct
    if metric.average is Average.MICRO:
        return stats.mean_of(correct)
    return stats.macro_mean_of(correct, [item.component for item in items])


def compared_bootstrap(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> stats.Bootstrapped | None:
    """The spec's compared metric over ``items`` with its bootstrap distribution (None: nothing to compare)."""
    metric = spec.compared_metric
    if metric is None or not items:
        return None
    return stats.bootstrap_distribution(metric_statistic(metric, items), len(items), strata=strata(items, spec))


def accuracies(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """Micro and macro accuracy (over components) of ``items``, as the spec defines accuracy.

    With ``AccuracyOver.ANSWERED`` they are taken over answered items only (None when there are
    none; the macro then averages the components that have answered items), next to
    ``accuracy_all_*`` (unanswered counted wrong) and the ``answered`` rate.
    """

    def pair(group: Sequence[ScoredItem], all_items: bool) -> dict[str, Any]:
        metrics = [AccuracyMetric(average, all_items) for average in Average]
        return {metric.value: accuracy_of(metric, group, spec) if group else None for metric in metrics}

    if spec.report.accuracy_over is AccuracyOver.ALL:
        return pair(items, all_items=False)
    answered = [item for item in items if item.pred != INVALID]
    return {
        **pair(answered, all_items=False),
        **pair(items, all_items=True),
        "answered": rate([float(i.pred != INVALID) for i in items], items, spec),
    }


def group_entry(group: Sequence[ScoredItem], spec: BenchmarkSpec, extras_names: Sequence[str] = ()) -> dict[str, Any]:
    """A component's or subgroup's n, small flag and accuracy (with accuracy_all and answered when the spec
    scores answered items only), and the mean of each per-item rate."""
    found = accuracies(group, spec)
    return {
        "n": len(group),
        "small": len(group) < SMALL_GROUP,
        "accuracy": found["accuracy_micro"],
        **(
            {"accuracy_all": found["accuracy_all_micro"], "answered": found["answered"]}
            if spec.report.accuracy_over is AccuracyOver.ANSWERED
            else {}
        ),
        **{name: float(sum(i.extras[name] for i in group) / len(group)) for name in extras_names},
    }


TIE_RULE = "an exact tie of the best log-likelihood goes to the earliest choice, as lm-eval's argmax decides it"


def tie_outcomes(item: ScoredItem) -> tuple[float, float, float]:
    """An item's outcome counted wrong, counted right where a tie-break could make it right, and expected under a
    uniform random tie-break: its own outcome three times unless its best log-likelihood was tied."""
    if item.parse_step != HIGHEST_LOGLIKELIHOOD_TIED:
        return item.correct, item.correct, item.correct
    best = max(item.loglikelihoods)
    tied = [index for index, value in enumerate(item.loglikelihoods) if value == best]
    # The gold choice is the forecast's (every log-likelihood spec gives one to an answered item).
    gold_tied = item.forecast.gold_choice in tied if item.forecast is not None else bool(item.correct)
    return 0.0, float(gold_tied), float(gold_tied) / len(tied)


def ties(items: Sequence[ScoredItem], spec: BenchmarkSpec, headline: Mapping[str, Any] | None) -> dict[str, Any]:
    """For a log-likelihood section: the items whose best log-likelihood was shared, how lm-eval decided them, and
    what another tie-break would make of the headline: the range the ties allow (every tied item counted wrong /
    counted right where its gold is among the tied choices) and the expectation under a uniform random tie-break,
    each with its CI over the headline's items. ``could_move_headline``: the range reaches further from the
    headline than its CI's half-width."""
    if not any(item.loglikelihoods for item in items):
        return {}
    tied = [item for item in items if item.parse_step == HIGHEST_LOGLIKELIHOOD_TIED]
    out: dict[str, Any] = {
        "n_tied": len(tied),
        "n_tied_counted_correct": int(sum(item.correct for item in tied)),
        "rule": TIE_RULE,
        "metric": None,
        "lowest": None,
        "highest": None,
        "expected": None,
        "could_move_headline": False,
    }
    if spec.report.headline is Headline.NONE or headline is None:
        return {"ties": out}
    group = items if spec.report.accuracy_over is AccuracyOver.ALL else [item for item in items if item.pred != INVALID]
    lowest, highest, expected = zip(*(tie_outcomes(item) for item in group), strict=True)
    metric = spec.report.headline.metric
    out.update(
        metric=metric.value,
        lowest=accuracy_of(metric, group, spec, lowest),
        highest=accuracy_of(metric, group, spec, highest),
        expected=estimate(metric_statistic(metric, group, expected), group, spec),
    )
    half_width = (headline["high"] - headline["low"]) / 2
    reach = max(headline["value"] - out["lowest"]["value"], out["highest"]["value"] - headline["value"])
    out["could_move_headline"] = bool(tied) and reach > half_width
    return {"ties": out}
