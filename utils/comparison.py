"""One comparison of two scored runs, per report section: used by ``compare`` and the leaderboard alike.

Items are paired by the key their spec declares (:attr:`~.scoring.RunPairing.item_key`; MillerQA pairs
by its item id). The compared metric is the spec's (:attr:`~.scoring.BenchmarkSpec.compared_metric`: the
headline over all items). The difference A minus B comes with a 95% CI from a paired bootstrap: both
statistics on the same stratified resamples of the paired items (the resample set each run's own CI
uses, when the runs scored the same items). Its p-value comes from the test that matches the printed
difference, so that p is below 0.05 exactly when the printed 95% CI excludes 0:

- a macro headline: the paired bootstrap of the macro difference, stratified as the section's bootstrap
  (up to the interpolation of the percentiles; never printed as 0). Where the bootstrap cannot carry a p-value
  (fewer than :data:`.stats.MIN_DISCORDANT` discordant items, or a stratum all discordant one way:
  :func:`.stats.bootstrap_test_refused`), the exact McNemar test on the discordant items gives it, and the
  difference is shown without an interval (``interval_reason`` says why);
- a micro accuracy: the exact McNemar test on per-item correctness, with its exact conditional interval
  (:func:`.stats.paired_proportion_difference`).

Beside "not significant" every pair gives the smallest difference it could have found (:mod:`.power`).

Where both sections carry a confidence, ``aurc_difference`` is A's AURC minus B's (:mod:`.selective`; lower is
better) over the shared items both gave a confidence, from the paired bootstrap (both AURCs on the same resamples,
stratified as the section's bootstrap); its p-value, like the compared metric's, only for a comparable pair.

A pair is "not comparable", with every reason, when the runs scored other items, other tasks, other task
versions, with and without a chat template, in another model dtype or softmax dtype (an unrecorded one is
"unknown"), another n-shot, system instruction, gen_kwargs or benchmark
settings, or when a shared item was prompted differently (lm-eval's ``prompt_hash``; not compared where
each model's own chat template, or a per-model setting such as MillerQA's model label, renders the prompts). A pair that is not comparable
shows its difference on the shared items but no p-value: a different protocol is not a ranking.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import power, selective, stats
from .accuracy import SMALL_GROUP, metric_statistic
from .results import SCHEMA_VERSION, ScoredRun
from .scoring import Average, ScoredItem, item_column
from .section import Section

BOOTSTRAP_TEST = "paired bootstrap"
MCNEMAR_TEST = "exact McNemar"


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the input order: the i-th smallest of m p-values becomes
    max over j <= i of min(1, (m - j + 1) * p_(j))."""
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(sorted(range(len(p_values)), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def test_name(section: Section, refused: str | None = None) -> str | None:
    """The test behind a pair's p-value for this section's compared metric (``refused``: why the bootstrap could
    not carry it, so the exact McNemar test does)."""
    metric = section.spec.compared_metric
    if metric is None:
        return None
    if metric.average is Average.MICRO:
        return f"{MCNEMAR_TEST} test on per-item correctness"
    if refused is not None:
        return (
            f"{MCNEMAR_TEST} test on per-item correctness (the {BOOTSTRAP_TEST} of the {metric.value} difference: "
            f"{refused})"
        )
    return f"{BOOTSTRAP_TEST} of the {metric.value} difference, stratified by {section.spec.report.stratify_by.value}"


def _differing(label: str, a: Any, b: Any) -> list[str]:
    if json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str):
        return []
    return [
        f"{label}: {json.dumps(a, ensure_ascii=False, default=str)} vs {json.dumps(b, ensure_ascii=False, default=str)}"
    ]


def _without(settings: Sequence[Mapping[str, Any]], names: frozenset[str]) -> list[dict[str, Any]]:
    return [{k: v for k, v in values.items() if k not in names} for values in settings]


def _only(settings: Sequence[Mapping[str, Any]], names: frozenset[str]) -> list[dict[str, Any]]:
    return [{k: v for k, v in values.items() if k in names} for values in settings]


@dataclass(frozen=True)
class Pairing:
    """Two sections' shared items (paired by the spec's item key) as positions, in A's order: ``a[k]`` in A's
    items is the same item as ``b[k]`` in B's."""

    a: np.ndarray
    b: np.ndarray
    only_a: int  # items of A that B lacks
    only_b: int

    @property
    def identical(self) -> bool:
        """Both scored the same items in the same order (the common case: one item set, several models)."""
        return not self.only_a and not self.only_b and bool(np.array_equal(self.a, self.b))


def pairing(sa: Section, sb: Section) -> Pairing:
    """The shared items of two sections, in linear time (each section's key index is built once)."""
    if sa.keys_digest == sb.keys_digest:
        every = np.arange(len(sa.keys))
        return Pairing(every, every, 0, 0)
    in_b = sb.index
    found = [(position, in_b[key]) for position, key in enumerate(sa.keys) if key in in_b]
    a = np.fromiter((i for i, _ in found), dtype=np.int64, count=len(found))
    b = np.fromiter((j for _, j in found), dtype=np.int64, count=len(found))
    return Pairing(a, b, len(sa.keys) - len(found), len(sb.keys) - len(found))


def reasons_not_comparable(a: ScoredRun, b: ScoredRun, name: str, paired: Pairing) -> list[str]:
    """Why the two runs' numbers for section ``name`` are no ranking (empty: they are comparable)."""
    sa, sb = a.sections[name], b.sections[name]
    ra, rb = a.provenance, b.provenance
    reasons = []
    if paired.only_a or paired.only_b:
        reasons.append(f"different items: {paired.only_a} only in A, {paired.only_b} only in B")
    tasks_a, tasks_b = list(sa.numbers["tasks"]), list(sb.numbers["tasks"])
    if tasks_a != tasks_b:
        reasons.append(f"different tasks (protocol): A ran {', '.join(tasks_a)}; B ran {', '.join(tasks_b)}")
    common = sorted(set(tasks_a) & set(tasks_b))
    # A model's own chat template is part of that model: two models' templates may differ, but not whether one is
    # applied.
    reasons += _differing("chat template applied", ra.get("chat_template_applied"), rb.get("chat_template_applied"))
    # Precision moves scores (bfloat16 ties single-token answers), so it is part of the protocol.
    reasons += _differing("model dtype", ra.get("dtype") or "unknown", rb.get("dtype") or "unknown")
    reasons += _differing("softmax dtype", ra.get("softmax_dtype"), rb.get("softmax_dtype"))
    own_templates = ra.get("chat_template_sha") != rb.get("chat_template_sha")
    pick = lambda run, key: {t: (run.get(key) or {}).get(t) for t in common}  # noqa: E731
    reasons += _differing("task versions", pick(ra, "task_versions"), pick(rb, "task_versions"))
    reasons += _differing("n-shot", pick(ra, "n_shot"), pick(rb, "n_shot"))
    reasons += _differing("system instruction", ra.get("system_instruction"), rb.get("system_instruction"))
    if sa.generative or sb.generative:
        reasons += _differing("gen_kwargs", ra.get("gen_kwargs"), rb.get("gen_kwargs"))
    per_model = sa.spec.pairing.per_model_settings
    reasons += _differing("benchmark settings", _without(sa.settings, per_model), _without(sb.settings, per_model))
    # Prompts differ by design where each model's own chat template renders them, or a per-model setting (MillerQA's
    # model label) shuffles them: not compared then.
    by_design = own_templates or (per_model and _only(sa.settings, per_model) != _only(sb.settings, per_model))
    if not by_design and not (paired.identical and sa.prompt_hashes_digest == sb.prompt_hashes_digest):
        hashes_a, hashes_b = sa.prompt_hashes, sb.prompt_hashes
        changed = sum(
            1
            for i, j in zip(paired.a.tolist(), paired.b.tolist(), strict=True)
            if hashes_a[i] and hashes_b[j] and hashes_a[i] != hashes_b[j]
        )
        if changed:
            reasons.append(f"different prompts (lm-eval prompt_hash) on {changed} of {len(paired.a)} shared items")
    return reasons


def _paired_bootstraps(sa: Section, sb: Section, paired: Pairing) -> tuple[stats.Bootstrapped, ...]:
    """The compared metric of both runs on the same resamples of the shared items (each run's own when both
    scored exactly these items in the same order)."""
    if paired.identical and sa.compared is not None and sb.compared is not None:
        return sa.compared, sb.compared
    items_a = [sa.items[i] for i in paired.a.tolist()]
    items_b = [sb.items[j] for j in paired.b.tolist()]
    # The strata come from A's items so that both statistics see one resample set (gold and component agree
    # for the same item; the component of B's item is used for B's macro).
    strata = [sa.spec.stratum_of(item) for item in items_a]
    metric = sa.spec.compared_metric
    return tuple(
        stats.bootstrap_distribution(metric_statistic(metric, items), len(items), strata=strata)
        for items in (items_a, items_b)
    )


@dataclass(frozen=True)
class Discordant:
    """The discordant items of two runs' shared items, in A's order: the items behind the McNemar counts
    a_only_correct and b_only_correct, each as a :class:`Pairing` of positions (A's items, B's items)."""

    a_only_correct: Pairing
    b_only_correct: Pairing

    def items(
        self, sa: Section, sb: Section, which: str, first: int | None = None
    ) -> list[tuple[ScoredItem, ScoredItem]]:
        """(A's item, B's item) of ``which`` ("a_only_correct" or "b_only_correct"), the ``first`` ones only when
        given, each with its texts (:meth:`.Section.item`)."""
        return [(sa.item(i), sb.item(j)) for i, j in self.positions(which, first)]

    def positions(self, which: str, first: int | None = None) -> list[tuple[int, int]]:
        """The positions (in A's items, in B's) of :meth:`items`, without reading any item."""
        chosen = getattr(self, which)
        return list(zip(chosen.a[:first].tolist(), chosen.b[:first].tolist(), strict=True))


def discordant_items(sa: Section, sb: Section, paired: Pairing | None = None) -> Discordant:
    """The shared items one run got right and the other wrong (``paired``: the sections' :func:`pairing`)."""
    paired = pairing(sa, sb) if paired is None else paired
    right_a, right_b = sa.correct[paired.a] != 0, sb.correct[paired.b] != 0
    a_only, b_only = right_a & ~right_b, ~right_a & right_b
    return Discordant(
        Pairing(paired.a[a_only], paired.b[a_only], 0, 0), Pairing(paired.a[b_only], paired.b[b_only], 0, 0)
    )


def compare_section(
    a: ScoredRun,
    b: ScoredRun,
    name: str,
    paired: Pairing | None = None,
    discordant: Discordant | None = None,
    detectable: bool = True,
) -> dict[str, Any]:
    """A minus B for section ``name`` (present in both runs) on the items both scored (``paired``, ``discordant``:
    the sections' :func:`pairing` and :func:`discordant_items`, when the caller has them). ``detectable=False``:
    its ``detectable`` is left for the caller to fill (:func:`.power.detectable` of ``n_paired_items``,
    ``a_only_correct`` and ``b_only_correct``; the leaderboard computes its pairs' in parallel)."""
    sa, sb = a.sections[name], b.sections[name]
    paired = pairing(sa, sb) if paired is None else paired
    n_shared = len(paired.a)
    reasons = reasons_not_comparable(a, b, name, paired)
    metric = sa.spec.compared_metric
    out: dict[str, Any] = {
        "metric": None if metric is None else metric.value,
        # Each run's own number (over all its items, as its report gives it), beside the paired difference.
        "a_estimate": None if metric is None else sa.numbers.get(metric.value),
        "b_estimate": None if metric is None else sb.numbers.get(metric.value),
        "test": test_name(sa),
        "comparable": not reasons,
        "reasons": reasons,
        "n_paired_items": n_shared,
        "small": n_shared < SMALL_GROUP,
        "only_in_a": paired.only_a,
        "only_in_b": paired.only_b,
        "difference": None,
        "interval_reason": None,
        "a_only_correct": None,
        "b_only_correct": None,
        "p_value": None,
        "p_value_is_bound": None,
        "holm_p_value": None,
        "detectable": None,
        "aurc_difference": aurc_difference(sa, sb, paired, not reasons),
    }
    if not n_shared or metric is None:
        return out
    discordant = discordant_items(sa, sb, paired) if discordant is None else discordant
    a_only, b_only = len(discordant.a_only_correct.a), len(discordant.b_only_correct.a)
    out.update(a_only_correct=a_only, b_only_correct=b_only)
    if detectable:
        out.update(detectable=power.detectable(n_shared, a_only, b_only))
    if metric.average is Average.MICRO:
        difference = stats.paired_proportion_difference(a_only, b_only, n_shared).as_dict()
        out.update(difference=difference)
        if out["comparable"]:
            out.update(p_value=stats.mcnemar_exact(a_only, b_only), p_value_is_bound=False)
        return out
    boot_a, boot_b = _paired_bootstraps(sa, sb, paired)
    difference = stats.paired_difference(boot_a, boot_b)
    refused = _bootstrap_refused(sa, sb, paired)
    if refused is None:
        out.update(difference=difference.difference.as_dict())
        if out["comparable"]:
            out.update(p_value=difference.p_value, p_value_is_bound=difference.p_value_is_bound)
        return out
    # The bootstrap's interval would claim the certainty its p-value cannot: the difference alone, and the exact
    # test on the discordant items.
    out.update(
        test=test_name(sa, refused),
        difference={"value": difference.difference.value, "low": None, "high": None, "n": n_shared},
        interval_reason=refused,
    )
    if out["comparable"]:
        out.update(p_value=stats.mcnemar_exact(a_only, b_only), p_value_is_bound=False)
    return out


def aurc_difference(sa: Section, sb: Section, paired: Pairing, comparable: bool) -> dict[str, Any] | None:
    """A's AURC minus B's over the shared items both gave a confidence, with the paired bootstrap's CI, and its
    p-value when the pair is ``comparable``; None where neither section has a confidence source, a reason where
    the shared items cannot carry an AURC for one of the runs (:func:`.selective.not_computable`)."""
    if "selective" not in sa.numbers or "selective" not in sb.numbers:
        return None
    all_a, all_b = item_column(sa.items, "forecast"), item_column(sb.items, "forecast")
    both = [
        (i, j)
        for i, j in zip(paired.a.tolist(), paired.b.tolist(), strict=True)
        if all_a[i] is not None and all_b[j] is not None
    ]
    forecasts_a = [all_a[i] for i, _ in both]
    forecasts_b = [all_b[j] for _, j in both]
    out: dict[str, Any] = {"n_paired_items": len(both), "reason": None, "difference": None, "p_value": None}
    for run, forecasts in (("A", forecasts_a), ("B", forecasts_b)):
        reason = selective.not_computable(forecasts)
        if reason is not None:
            return out | {"reason": f"{run}'s AURC on the shared items with a confidence: {reason}"}
    strata_a = item_column(sa.items, sa.spec.stratum_field)
    strata = [strata_a[i] for i, _ in both]
    boot_a, boot_b = (
        stats.bootstrap_distribution(selective.aurc_of(forecasts), len(both), strata=strata)
        for forecasts in (forecasts_a, forecasts_b)
    )
    difference = stats.paired_difference(boot_a, boot_b)
    out.update(difference=difference.difference.as_dict())
    if comparable:
        out.update(p_value=difference.p_value, p_value_is_bound=difference.p_value_is_bound)
    return out


def _bootstrap_refused(sa: Section, sb: Section, paired: Pairing) -> str | None:
    """Why the paired bootstrap cannot carry this pair's p-value (:func:`.stats.bootstrap_test_refused`)."""
    differences = sa.correct[paired.a] - sb.correct[paired.b]
    if paired.identical:
        return stats.bootstrap_test_refused(differences, groups=sa.stratum_groups)
    strata_a = item_column(sa.items, sa.spec.stratum_field)
    return stats.bootstrap_test_refused(differences, [strata_a[i] for i in paired.a.tolist()])


def not_compared(reason: str) -> dict[str, Any]:
    """A section one run lacks, or that has no comparable metric: listed with 0 paired items and why."""
    return {"n_paired_items": 0, "comparable": False, "reasons": [reason], "difference": None, "p_value": None}


def compare_runs(a: ScoredRun, b: ScoredRun) -> dict[str, Any]:
    """Every section of either run: the pair A minus B, or 0 paired items and the reason."""
    sections: dict[str, Any] = {}
    for name in list(dict.fromkeys([*a.sections, *b.sections])):
        if name not in a.sections or name not in b.sections:
            sections[name] = not_compared(f"only {'A' if name in a.sections else 'B'} ran this section")
        elif a.sections[name].spec.compared_metric is None:
            sections[name] = not_compared(
                f"no paired comparison for the headline metric {a.sections[name].spec.report.headline.value!r}"
            )
        else:
            sections[name] = compare_section(a, b, name)
    for pair in sections.values():
        adjust([pair])  # one pair per section: as the leaderboard of these two runs adjusts it
    return {"schema_version": SCHEMA_VERSION, "a": a.provenance, "b": b.provenance, "benchmarks": sections}


def _holm_over(pairs: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[float]]:
    tested = [pair for pair in pairs if pair.get("p_value") is not None]
    return tested, holm([pair["p_value"] for pair in tested])


def adjust(pairs: Sequence[dict[str, Any]]) -> None:
    """Holm-adjust the p-values of the comparable pairs of one section, in place."""
    for pair, adjusted in zip(*_holm_over(pairs), strict=True):
        pair["holm_p_value"] = adjusted
