"""The parts of a section beyond its accuracies that need more than one module to compute: paired variants (a
variant minus the reference on the same questions), calibration (:mod:`.calibration`) and selective prediction
(:mod:`.selective`), each with CIs stratified as the headline. :func:`.section.score_section` calls them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import calibration, selective, stats
from .accuracy import SMALL_GROUP, estimate
from .scoring import INVALID, AccuracyOver, BenchmarkSpec, ConfidenceSource, ScoredItem


def paired_variants(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any] | None:
    """Each variant (e.g. a language) minus the reference variant on the same questions: a paired bootstrap over
    the questions both have. Correct is 0 or 1 per item, an unanswered item counting wrong (one denominator)."""
    by_variant: dict[str, dict[str, ScoredItem]] = {}
    for item in items:
        variant = spec.beyond_accuracy.paired_variant_of(item)
        if variant is not None:
            by_variant.setdefault(variant[0], {})[variant[1]] = item
    reference = by_variant.get(spec.beyond_accuracy.paired_reference)
    if not by_variant:
        return None
    metric = "accuracy_all" if spec.report.accuracy_over is AccuracyOver.ANSWERED else "accuracy"
    out: dict[str, Any] = {
        "reference": spec.beyond_accuracy.paired_reference,
        "metric": metric,
        "method": f"{metric} of the variant minus the reference on the questions both have; percentile "
        "bootstrap over those questions (each resample draws questions, keeping both answers of each)",
        "variants": {},
    }
    if reference is None:
        out["reason"] = f"no item of the reference variant {spec.beyond_accuracy.paired_reference!r} was scored"
        return out
    for variant in sorted(set(by_variant) - {spec.beyond_accuracy.paired_reference}):
        keys = sorted(set(by_variant[variant]) & set(reference))
        entry: dict[str, Any] = {
            "n_pairs": len(keys),
            "small": len(keys) < SMALL_GROUP,
            "unpaired": len(by_variant[variant]) - len(keys),  # the variant's questions the reference lacks
            "reference_unpaired": len(reference) - len(keys),  # and the reference's the variant lacks
        }
        if keys:
            ours = np.asarray([by_variant[variant][k].correct for k in keys])
            theirs = np.asarray([reference[k].correct for k in keys])
            differences = ours - theirs
            # Every pair agreeing (or all discordant one way) leaves the bootstrap no spread: the exact interval.
            difference = (
                stats.paired_proportion_difference(
                    int(np.sum(differences > 0)), int(np.sum(differences < 0)), len(keys)
                )
                if len(set(differences.tolist())) == 1
                else stats.bootstrap(stats.mean_of(differences), len(keys))
            )
            entry |= {
                "accuracy": float(ours.mean()),
                "reference_accuracy": float(theirs.mean()),
                "difference": difference.as_dict(),
            }
        out["variants"][variant] = entry
    return out


def calibration_part(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """ECE and Brier score with CIs (stratified as the headline), and the reliability bins (:mod:`.calibration`)."""
    forecasts = [item for item in items if item.forecast is not None]
    invalid = sum(item.pred == INVALID for item in items)
    stated = spec.beyond_accuracy.confidence_source is ConfidenceSource.STATED
    out: dict[str, Any] = {
        "source": spec.beyond_accuracy.confidence_source.value,
        "confidence": "the stated confidence / 100 of the selected answer (answered items only)"
        if stated
        else "the softmax probability, over the choices' log-likelihoods, of the predicted choice",
        "bins": list(calibration.BIN_LABELS),
        "bin_edges": list(calibration.BIN_EDGES),
        "n": len(forecasts),
        "left_out": {
            "invalid": invalid,
            **({"no_stated_confidence": len(items) - invalid - len(forecasts)} if stated else {}),
        },
        "brier_kind": "binary" if stated else "multiclass",
        "ece": None,
        "brier": None,
        "reliability": [],
    }
    if forecasts:
        given = [item.forecast for item in forecasts]
        out["brier_kind"] = calibration.brier_kind(given)
        out["ece"] = estimate(calibration.ece_of(given), forecasts, spec)
        out["brier"] = estimate(stats.mean_of(calibration.brier_values(given)), forecasts, spec)
        out["reliability"] = calibration.reliability(given)
    return out


def selective_part(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """The risk-coverage curve, AURC and accuracy at fixed coverages over the items calibration takes (those with a
    confidence), CIs stratified as the headline (:mod:`.selective`); without numbers where the items cannot carry
    them, saying why."""
    forecasts = [item for item in items if item.forecast is not None]
    given = [item.forecast for item in forecasts]
    reason = selective.not_computable(given)
    out: dict[str, Any] = {
        "confidence": "calibration's (this section's calibration block: its confidence and the items it leaves out)",
        "ties": "items of equal confidence enter together; a coverage takes the fewest whole tie groups that reach it",
        "n": len(forecasts),
        "reason": reason,
        "aurc": None,
        "aurc_optimal": None,
        "accuracy_at_coverage": {},
        "curve": [],
    }
    if reason is not None:
        return out
    out["aurc"] = estimate(selective.aurc_of(given), forecasts, spec)
    out["aurc_optimal"] = selective.optimal_aurc(len(given), sum(f.correct for f in given))
    for coverage in selective.COVERAGES:
        covered = selective.covered_at(given, coverage)
        outcomes = [float(given[i].correct) for i in covered]
        out["accuracy_at_coverage"][f"{float(coverage):.0%}"] = {
            "n_covered": len(covered),
            "coverage": len(covered) / len(given),
            # A covered set all right (or all wrong) takes the exact interval over its items, as any agreed proportion.
            "accuracy": stats.agreed_proportion(outcomes).as_dict()
            if stats.all_agree(outcomes)
            else estimate(selective.accuracy_at_coverage_of(given, coverage), forecasts, spec),
        }
    out["curve"] = selective.curve(given)
    return out
