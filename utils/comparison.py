"""One comparison of two scored runs, per report section: used by ``compare`` and the leaderboard alike.

Items are paired by the key their spec declares (:attr:`~.scoring.BenchmarkSpec.item_key`; MillerQA pairs
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

from . import power, stats
from .results import SCHEMA_VERSION, SMALL_GROUP, ScoredRun, Section, metric_statistic
from .scoring import ScoredItem

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
    if metric.endswith("_micro"):
        return f"{MCNEMAR_TEST} test on per-item correctness"
    if refused is not None:
        return (
            f"{MCNEMAR_TEST} test on per-item correctness (the {BOOTSTRAP_TEST} of the {metric} difference: {refused})"
        )
    return f"{BOOTSTRAP_TEST} of the {metric} difference, stratified by {section.spec.stratify_by.value}"


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


def reasons_not_comparable(
    a: ScoredRun, b: ScoredRun, name: str, only_a: int, only_b: int, shared: Sequence[tuple]
) -> list[str]:
    """Why the two runs' numbers for section ``name`` are no ranking (empty: they are comparable)."""
    sa, sb = a.sections[name], b.sections[name]
    ra, rb = a.provenance, b.provenance
    reasons = []
    if only_a or only_b:
        reasons.append(f"different items: {only_a} only in A, {only_b} only in B")
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
    per_model = sa.spec.per_model_settings
    reasons += _differing("benchmark settings", _without(sa.settings, per_model), _without(sb.settings, per_model))
    # Prompts differ by design where each model's own chat template renders them, or a per-model setting (MillerQA's
    # model label) shuffles them: not compared then.
    by_design = own_templates or (per_model and _only(sa.settings, per_model) != _only(sb.settings, per_model))
    if not by_design:
        prompts_a = dict(zip(sa.keys, (item.prompt_hash for item in sa.items), strict=True))
        prompts_b = dict(zip(sb.keys, (item.prompt_hash for item in sb.items), strict=True))
        changed = sum(1 for key in shared if prompts_a[key] and prompts_b[key] and prompts_a[key] != prompts_b[key])
        if changed:
            reasons.append(f"different prompts (lm-eval prompt_hash) on {changed} of {len(shared)} shared items")
    return reasons


def _paired_bootstraps(sa: Section, sb: Section, shared: Sequence[tuple]) -> tuple[stats.Bootstrapped, ...]:
    """The compared metric of both runs on the same resamples of the shared items (each run's own when both
    scored exactly these items in the same order)."""
    if sa.keys == sb.keys and sa.compared is not None and sb.compared is not None:
        return sa.compared, sb.compared
    index_a = {key: i for i, key in enumerate(sa.keys)}
    index_b = {key: i for i, key in enumerate(sb.keys)}
    order = sorted(shared, key=index_a.__getitem__)
    items_a = [sa.items[index_a[key]] for key in order]
    items_b = [sb.items[index_b[key]] for key in order]
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
    """The discordant pairs of two runs' shared items (A's item, B's item), in A's order: the items behind
    the McNemar counts a_only_correct and b_only_correct."""

    a_only_correct: list[tuple[ScoredItem, ScoredItem]]
    b_only_correct: list[tuple[ScoredItem, ScoredItem]]


def discordant_items(sa: Section, sb: Section) -> Discordant:
    """The shared items (paired by the spec's item key) one run got right and the other wrong."""
    in_b = dict(zip(sb.keys, sb.items, strict=True))
    pairs = [(item, in_b[key]) for key, item in zip(sa.keys, sa.items, strict=True) if key in in_b]
    return Discordant(
        [(a, b) for a, b in pairs if bool(a.correct) and not bool(b.correct)],
        [(a, b) for a, b in pairs if not bool(a.correct) and bool(b.correct)],
    )


def compare_section(a: ScoredRun, b: ScoredRun, name: str) -> dict[str, Any]:
    """A minus B for section ``name`` (present in both runs) on the items both scored."""
    sa, sb = a.sections[name], b.sections[name]
    keys_a, keys_b = set(sa.keys), set(sb.keys)
    shared = [key for key in sa.keys if key in keys_b]
    only_a, only_b = len(keys_a - keys_b), len(keys_b - keys_a)
    reasons = reasons_not_comparable(a, b, name, only_a, only_b, shared)
    out: dict[str, Any] = {
        "metric": sa.spec.compared_metric,
        "test": test_name(sa),
        "comparable": not reasons,
        "reasons": reasons,
        "n_paired_items": len(shared),
        "small": len(shared) < SMALL_GROUP,
        "only_in_a": only_a,
        "only_in_b": only_b,
        "difference": None,
        "interval_reason": None,
        "a_only_correct": None,
        "b_only_correct": None,
        "p_value": None,
        "p_value_is_bound": None,
        "holm_p_value": None,
        "detectable": None,
    }
    if not shared or sa.spec.compared_metric is None:
        return out
    discordant = discordant_items(sa, sb)
    a_only, b_only = len(discordant.a_only_correct), len(discordant.b_only_correct)
    out.update(a_only_correct=a_only, b_only_correct=b_only, detectable=power.detectable(len(shared), a_only, b_only))
    if sa.spec.compared_metric.endswith("_micro"):
        difference = stats.paired_proportion_difference(a_only, b_only, len(shared)).as_dict()
        out.update(difference=difference)
        if out["comparable"]:
            out.update(p_value=stats.mcnemar_exact(a_only, b_only), p_value_is_bound=False)
        return out
    boot_a, boot_b = _paired_bootstraps(sa, sb, shared)
    paired = stats.paired_difference(boot_a, boot_b)
    refused = _bootstrap_refused(sa, sb, shared)
    if refused is None:
        out.update(difference=paired.difference.as_dict())
        if out["comparable"]:
            out.update(p_value=paired.p_value, p_value_is_bound=paired.p_value_is_bound)
        return out
    # The bootstrap's interval would claim the certainty its p-value cannot: the difference alone, and the exact
    # test on the discordant items.
    out.update(
        test=test_name(sa, refused),
        difference={"value": paired.difference.value, "low": None, "high": None, "n": len(shared)},
        interval_reason=refused,
    )
    if out["comparable"]:
        out.update(p_value=stats.mcnemar_exact(a_only, b_only), p_value_is_bound=False)
    return out


def _bootstrap_refused(sa: Section, sb: Section, shared: Sequence[tuple]) -> str | None:
    """Why the paired bootstrap cannot carry this pair's p-value (:func:`.stats.bootstrap_test_refused`)."""
    index_a = {key: i for i, key in enumerate(sa.keys)}
    index_b = {key: i for i, key in enumerate(sb.keys)}
    items_a = [sa.items[index_a[key]] for key in shared]
    differences = [item.correct - sb.items[index_b[key]].correct for item, key in zip(items_a, shared, strict=True)]
    return stats.bootstrap_test_refused(differences, [sa.spec.stratum_of(item) for item in items_a])


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
                f"no paired comparison for the headline metric {a.sections[name].spec.headline.value!r}"
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
