"""One scored run: a run folder scored once, by the benchmarks' report specs, into every number anyone shows.

:func:`score` reads an lm-eval run (``--output_path`` with ``--log_samples``), re-scores every logged
sample with its benchmark's own parser (:class:`~.scoring.BenchmarkSpec`), and computes, per report
section: micro and macro accuracy, per-component accuracy, per-item rates, per-class precision/recall/F1
and macro-F1, a confusion matrix with an INVALID column, coverage against the published counts, whether
the number is paper-comparable (with every reason when not), and a stratified bootstrap CI for every
number (:mod:`.stats`); beyond accuracy: calibration (:mod:`.calibration`) where the spec names a confidence
source, accuracy per subgroup, paired differences between variants of the same questions (e.g. languages), and
reply lengths of generative sections (:mod:`.lengths`). The result, :class:`ScoredRun`, is typed: its provenance, and per section the
scored items (in one order, with their pairing keys), the section's numbers and the bootstrap
distribution of the metric runs are compared on.

report.json/.md/.html (:mod:`.report`, :mod:`.scorecard`), ``compare`` and the leaderboard
(:mod:`.comparison`, :mod:`.leaderboard`) are views of a scored run: they format, never compute.

Sections whose specs leave unparseable answers unscored (``AccuracyOver.ANSWERED``, e.g. MillerQA)
get accuracy over the answered items, the same with unanswered items counted wrong
(``accuracy_all_*``) and the answered rate, everywhere accuracy is reported.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import numpy as np

from . import calibration, lengths, power, stats
from .benchmarks import discover, report_specs
from .data import DataError
from .redaction import MASK, mask, mask_strings, secret_values
from .runs import Run, load_run, run_info
from .samples import HIGHEST_LOGLIKELIHOOD_TIED, choice_probabilities, logged_generation_kwargs, logged_reply
from .scoring import (
    INVALID,
    AccuracyMetric,
    AccuracyOver,
    Average,
    BenchmarkSpec,
    ConfidenceSource,
    Headline,
    ScoredItem,
)

# report.json's schema; its changes, version by version, are in CHANGELOG.md.
SCHEMA_VERSION = "2.4"
# Groups with fewer items are flagged as small: their CIs are wide and a percentile bootstrap is rough.
SMALL_GROUP = 30

# The fields of every record of items_<section>.jsonl, in order (a benchmark's own fields follow them).
# report.json names the file and these fields; it does not embed the items (a MedFact-Bench run's replies
# alone are tens of megabytes).
ITEM_FIELDS = (
    "task",
    "item_id",
    "doc_id",
    "doc_hash",
    "component",
    "gold",
    "pred",
    "outcome",
    "invalid_reason",
    "parse_step",
    "choices",
    "prompt",
    "reply",
    "redacted",
    "extras",
)


@dataclass(frozen=True)
class Section:
    """One report section of a run: a spec's scored items and the numbers computed from them."""

    spec: BenchmarkSpec
    items: tuple[ScoredItem, ...]  # in (task, doc_id) order
    keys: tuple[tuple, ...]  # spec.pairing.item_key of each item, in the same order
    numbers: dict[str, Any]  # the section as report.json holds it
    compared: stats.Bootstrapped | None  # the spec's compared metric over these items, with its distribution
    settings: tuple[dict[str, Any], ...]  # every distinct set of score-moving settings among the samples
    generative: bool  # its tasks generate text (lm-eval output_type generate_until)

    def __reduce__(self):
        # A spec holds functions; a section crosses processes by its spec's name (the leaderboard scores runs
        # in parallel).
        state = (
            self.items,
            self.keys,
            self.numbers,
            self.compared,
            self.settings,
            self.generative,
        )
        return _section_of_spec, (self.spec.name, *state)

    # Computed once per section, not once per pair it is compared in (the leaderboard pairs every run with every
    # other).
    @cached_property
    def index(self) -> dict[tuple, int]:
        """Each item key's position in ``items``."""
        return {key: position for position, key in enumerate(self.keys)}

    @cached_property
    def correct(self) -> np.ndarray:
        """Each item's 0/1 correctness, in ``items`` order."""
        return np.fromiter((item.correct for item in self.items), dtype=float, count=len(self.items))

    @cached_property
    def prompt_hashes(self) -> tuple[str, ...]:
        return tuple(item.prompt_hash for item in self.items)

    @cached_property
    def stratum_groups(self) -> list[np.ndarray]:
        """The items' positions per bootstrap stratum (:func:`.stats.stratum_indices`)."""
        return stats.stratum_indices(_strata(self.items, self.spec), len(self.items))


def _section_of_spec(name: str, *state: Any) -> Section:
    spec = next(spec for spec in report_specs() if spec.name == name)
    return Section(spec, *state)


@dataclass(frozen=True)
class ScoredRun:
    results_path: Path
    provenance: dict[str, Any]  # report.json's "run"
    sections: dict[str, Section]
    empty_tasks: tuple[str, ...]
    unreported_tasks: tuple[str, ...]
    tokenizer: str | None = None  # the --tokenizer its reply lengths were counted with (None: words)

    def report(self) -> dict[str, Any]:
        """report.json."""
        from lm_eval_tasks import __version__

        return {
            "schema_version": SCHEMA_VERSION,
            "generated_by": f"lm-eval-medical-tasks {__version__}",
            "run": self.provenance,
            "bootstrap": stats.bootstrap_description(
                stratified_by={name: section.spec.report.stratify_by.value for name, section in self.sections.items()}
            ),
            "benchmarks": {name: section.numbers for name, section in self.sections.items()},
            "empty_tasks": list(self.empty_tasks),
            "unreported_tasks": list(self.unreported_tasks),
        }

    def item_details(self) -> dict[str, list[dict[str, Any]]]:
        """Per section: one record per item (items_<section>.jsonl), in the section's (task, doc_id) order."""
        return {name: [item_record(item) for item in section.items] for name, section in self.sections.items()}


def items_file(section_name: str) -> str:
    return f"items_{section_name}.jsonl"


def _json_float(value: float) -> float | str:
    """A float JSON can hold; a non-finite one as its name ("nan", "inf", "-inf"), which strict JSON has not."""
    return value if math.isfinite(value) else repr(value)


def item_record(item: ScoredItem) -> dict[str, Any]:
    """One line of items_<section>.jsonl: ITEM_FIELDS, then the benchmark's own details.

    ``item_id``: the item's own id in its benchmark's source data (None where the logged doc does not carry it);
    ``doc_id`` is lm-eval's, the item's position in the task.

    ``choices`` (log-likelihood items; empty for a generation): each continuation with its logged
    log-likelihood and its probability among the choices (softmax; None when a NaN or +inf leaves it undefined).
    ``redacted`` names the texts a credential was masked in (they are shown masked, and were scored unmasked).
    """
    probabilities = choice_probabilities(item.loglikelihoods) if item.loglikelihoods else None
    record = {
        "task": item.task,
        "item_id": item.item_id,
        "doc_id": item.doc_id,
        "doc_hash": item.doc_hash,
        "component": item.component,
        "gold": item.gold,
        "pred": item.pred,
        "outcome": item.outcome,
        "invalid_reason": item.invalid_reason,
        "parse_step": item.parse_step,
        "choices": [
            {
                "choice": choice,
                "loglikelihood": _json_float(loglikelihood),
                "probability": None if probabilities is None else probabilities[index],
            }
            for index, (choice, loglikelihood) in enumerate(zip(item.choices, item.loglikelihoods, strict=True))
        ],
        "prompt": item.prompt,
        "reply": item.reply,
        "redacted": list(item.redacted),
        "extras": {name: _json_float(value) for name, value in item.extras.items()},
    }
    clashing = set(record) & set(item.details)
    if clashing:
        raise ValueError(f"{item.task} doc {item.doc_id}: details repeat the item fields {sorted(clashing)}")
    return record | dict(item.details)


# The item's own fields that hold text, in the order ``redacted`` names them (then details.<key>, in details order).
_TEXT_FIELDS = ("prompt", "reply", "choices", "gold", "pred", "parse_step", "invalid_reason", "item_id")


class _Masker:
    """:func:`.redaction.mask` with the run's credentials, remembering its verdict on short texts: labels, parse
    steps and choice texts recur in every item."""

    SHORT = 256  # characters; longer texts (prompts, replies) are rarely repeated

    def __init__(self, secrets: set[str]):
        self.secrets = secrets
        self.seen: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        if len(text) > self.SHORT:
            return mask(text, self.secrets)
        found = self.seen.get(text)
        if found is None:
            found = self.seen[text] = mask(text, self.secrets)
        return found


def _redacted(item: ScoredItem, masker: _Masker) -> ScoredItem:
    """``item`` with every text it holds (its prompt, reply, choices, labels, parse step, invalid reason and any
    string in its details) masked of the run's credentials and anything shaped like one; ``item`` itself when
    nothing was masked. ``redacted`` names the fields a credential was masked in."""
    changed = {}
    for name in _TEXT_FIELDS:
        value = getattr(item, name)
        masked = _masked_texts(value, masker)
        if masked is not value:
            changed[name] = masked
    details = {}
    for key, value in item.details.items():
        masked = _masked_texts(value, masker)
        if masked is not value:
            details[key] = masked
    if not changed and not details:
        return item
    names = (*changed, *(f"details.{key}" for key in details))
    if details:
        changed["details"] = {key: details.get(key, value) for key, value in item.details.items()}
    return replace(item, **changed, redacted=names)


def _masked_texts(value: Any, masker: _Masker) -> Any:
    """``value`` with each string in it (at any depth of dicts, lists and tuples; keys kept) masked; ``value``
    itself when none changed. A structure nested deeper than Python can walk is masked whole."""
    try:
        return _mask_strings(value, masker)
    except RecursionError:
        return MASK


def _mask_strings(value: Any, masker: _Masker) -> Any:
    if isinstance(value, str):
        masked = masker(value)
        return value if masked == value else masked
    if isinstance(value, Mapping):
        pairs = [(key, _mask_strings(item, masker)) for key, item in value.items()]
        if all(after is before for (_, after), before in zip(pairs, value.values())):
            return value
        return dict(pairs)
    if isinstance(value, (list, tuple)):
        items = [_mask_strings(item, masker) for item in value]
        if all(after is before for after, before in zip(items, value)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value


@dataclass
class Walk:
    """What one pass over a spec's samples gathers: the scored items (sorted by task and doc_id), the distinct
    settings and caveats (unmasked), and each reply with its token budget (in file order)."""

    items: list[ScoredItem] = field(default_factory=list)
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    caveats: dict[str, None] = field(default_factory=dict)
    replies: list[str] = field(default_factory=list)
    budgets: list[int | None] = field(default_factory=list)


def _secrets(run: Run) -> set[str]:
    config = run.results.get("config")
    return secret_values(config.get("model_args")) if isinstance(config, Mapping) else set()


def _scored(spec: BenchmarkSpec, task: str, sample: Mapping[str, Any], masker: _Masker) -> ScoredItem:
    """A logged sample scored by ``spec``, its texts masked."""
    return _redacted(replace(spec.score_sample(task, sample), item_id=spec.item_id_of(sample)), masker)


def walk_samples(run: Run, spec: BenchmarkSpec, score: bool = True) -> Walk:
    """One pass over the spec's samples of ``run``: each scored (``score``) from its logged reply, its texts masked
    of the run's credentials and anything shaped like a credential; its settings, caveat, reply and token budget."""
    masker = _Masker(_secrets(run))
    walk = Walk()
    for task in sorted(t for t in run.samples if spec.owns(t)):
        for number, sample in enumerate(run.samples[task], start=1):
            if score:
                try:
                    item = _scored(spec, task, sample, masker)
                except (KeyError, TypeError, ValueError, IndexError) as exc:
                    raise DataError(
                        f"{run.sample_files[task]}, line {number}: cannot score this sample ({exc!r})"
                    ) from exc
                walk.items.append(item)
            if spec.settings_of is not None:
                values = dict(spec.settings_of(sample))
                walk.settings.setdefault(json.dumps(values, sort_keys=True, default=str), values)
            if spec.protocol.caveat_of is not None and isinstance(sample.get("doc"), Mapping):
                caveat = spec.protocol.caveat_of(sample["doc"])
                if caveat:
                    walk.caveats.setdefault(caveat)
            reply = logged_reply(sample) if "filtered_resps" in sample else None
            walk.replies.append(reply if isinstance(reply, str) else "")
            budget = (logged_generation_kwargs(sample) or {}).get("max_gen_toks")
            walk.budgets.append(budget if isinstance(budget, int) and not isinstance(budget, bool) else None)
    walk.items.sort(key=lambda item: (item.task, item.doc_id))
    return walk


def score(run: Run, tokenizer: str | None = None) -> ScoredRun:
    """Every section of ``run``, scored once; reply lengths counted as ``--tokenizer`` asks (:func:`.lengths.counter`)."""
    provenance = run_info(run)
    sections, owned, settings = {}, set(), {}
    config = run.results.get("config")
    model_args = config.get("model_args") if isinstance(config, Mapping) else None
    # Made when a section first needs it (a generative one), once for all the run's sections.
    counter = cache(lambda: lengths.counter(tokenizer, model_args))
    for spec in report_specs():
        walk = walk_samples(run, spec)
        items = walk.items
        owned |= {item.task for item in items}
        if not items:
            continue
        section = score_section(items, spec, run, provenance, counter, walk)
        sections[spec.name] = section
        if spec.settings_of is not None:
            settings[spec.name] = list(section.settings)
    provenance["benchmark_settings"] = settings
    provenance["declared_settings"] = declared_settings(sections)
    return ScoredRun(
        results_path=run.results_path,
        provenance=provenance,
        sections=sections,
        # Task names are the results file's: any run's, masked like every text it holds.
        empty_tasks=tuple(sorted(_masked(run, task) for task, samples in run.samples.items() if not samples)),
        unreported_tasks=tuple(
            sorted(_masked(run, task) for task, samples in run.samples.items() if samples and task not in owned)
        ),
        tokenizer=tokenizer,
    )


def _masked(run: Run, value: Any) -> Any:
    """``value`` (a string, or strings at any depth) masked of the run's credentials and anything shaped like one."""
    config = run.results.get("config")
    return mask_strings(value, secret_values(config.get("model_args")) if isinstance(config, Mapping) else ())


def declared_settings(sections: Mapping[str, Section]) -> dict[str, list[dict[str, Any]]]:
    """Each reported benchmark's settings as it declares them (scoped name, kind, default, what it moves): what
    the values in ``benchmark_settings`` mean, and what a user may set."""
    out = {}
    for benchmark in discover():
        if benchmark.settings and any(spec.name in sections for spec in benchmark.report_specs):
            out[benchmark.name] = [
                {
                    "name": f"{benchmark.name}_{setting.name}",
                    "kind": setting.kind.value,
                    "default": setting.default,
                    "moves": setting.moves,
                }
                for setting in benchmark.settings
            ]
    return out


def score_path(path: str | os.PathLike, tokenizer: str | None = None) -> ScoredRun:
    return score(load_run(path), tokenizer)


# ----------------------------------------------------------------------------- one section


def _strata(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> list[str]:
    return [spec.stratum_of(item) for item in items]


def _estimate(
    statistic, items: Sequence[ScoredItem], spec: BenchmarkSpec, outcomes: Sequence[float] | None = None
) -> dict[str, Any]:
    """A bootstrap estimate over ``items``; ``outcomes``: their 0/1 outcomes when the statistic is a proportion
    (an interval where they all agree is Clopper-Pearson's: :func:`.stats.bootstrap`)."""
    return stats.bootstrap(statistic, len(items), strata=_strata(items, spec), outcomes=outcomes).as_dict()


def _accuracy(
    metric: AccuracyMetric, items: Sequence[ScoredItem], spec: BenchmarkSpec, correct: Sequence[float] | None = None
):
    """An accuracy metric over ``items`` (``correct``: other per-item outcomes than the items' own)."""
    correct = [item.correct for item in items] if correct is None else correct
    return _estimate(metric_statistic(metric, items, correct), items, spec, outcomes=correct)


def _rate(values: Sequence[float], items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """The mean of a per-item rate: a constant where every item has the same value (e.g. a chance rate) unless
    it is an agreed 0/1 outcome (then a proportion with its exact interval)."""
    if len(set(values)) == 1 and not stats.all_agree(values):
        return stats.constant(values[0], len(values))
    return _estimate(stats.mean_of(values), items, spec, outcomes=values)


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
    return stats.bootstrap_distribution(metric_statistic(metric, items), len(items), strata=_strata(items, spec))


def _accuracies(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """Micro and macro accuracy (over components) of ``items``, as the spec defines accuracy.

    With ``AccuracyOver.ANSWERED`` they are taken over answered items only (None when there are
    none; the macro then averages the components that have answered items), next to
    ``accuracy_all_*`` (unanswered counted wrong) and the ``answered`` rate.
    """

    def pair(group: Sequence[ScoredItem], all_items: bool) -> dict[str, Any]:
        metrics = [AccuracyMetric(average, all_items) for average in Average]
        return {metric.value: _accuracy(metric, group, spec) if group else None for metric in metrics}

    if spec.report.accuracy_over is AccuracyOver.ALL:
        return pair(items, all_items=False)
    answered = [item for item in items if item.pred != INVALID]
    return {
        **pair(answered, all_items=False),
        **pair(items, all_items=True),
        "answered": _rate([float(i.pred != INVALID) for i in items], items, spec),
    }


def _by_component(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, list[ScoredItem]]:
    """Items per component: the published components first, in their order, then any others sorted."""
    groups: dict[str, list[ScoredItem]] = {}
    for item in items:
        groups.setdefault(item.component, []).append(item)
    order = [c for c in spec.expected_counts if c in groups] + sorted(set(groups) - set(spec.expected_counts))
    return {component: groups[component] for component in order}


def _coverage(by_component: Mapping[str, Sequence[ScoredItem]], spec: BenchmarkSpec, run: Run) -> dict[str, Any]:
    """Published vs loaded (before --limit, known when a task is one component) vs scored items per component."""
    task_components: dict[str, set[str]] = {}
    for component, group in by_component.items():
        for item in group:
            task_components.setdefault(item.task, set()).add(component)
    loaded: Counter = Counter()
    for task, components in task_components.items():
        original = run.results.get("n-samples", {}).get(task, {}).get("original")
        if original is not None and len(components) == 1:
            loaded[next(iter(components))] += original
    coverage = {}
    for component in list(spec.expected_counts) + [c for c in by_component if c not in spec.expected_counts]:
        expected = spec.expected_counts.get(component)
        scored = len(by_component.get(component, []))
        coverage[component] = {
            "expected": expected,
            "loaded": loaded.get(component),
            "scored": scored,
            "complete": expected is not None and scored == expected,
        }
    return coverage


def subset(coverage: Mapping[str, Mapping[str, Any]], spec: BenchmarkSpec) -> str | None:
    """The set a section's numbers are over, in words, when it is not the set the published numbers are over
    ("2 of 5 specialties, 355 of 935 items", "100 of 500 items"): a figure marks such a number among published
    full-set ones. None: every published item was scored."""
    expected = [entry for name, entry in coverage.items() if name in spec.expected_counts]
    published = spec.protocol.published_items or sum(spec.expected_counts.values())
    if spec.protocol.published_items is None and all(entry["complete"] for entry in coverage.values()):
        return None
    parts = []
    present = sum(entry["scored"] > 0 for entry in expected)
    if present < len(expected):
        parts.append(f"{present} of {len(expected)} {spec.report.component_noun}")
    parts.append(f"{sum(entry['scored'] for entry in coverage.values()):,} of {published:,} items")
    return ", ".join(parts)


def protocol_differences(
    spec: BenchmarkSpec,
    tasks: Sequence[str],
    provenance: Mapping[str, Any],
    settings: Sequence[Mapping[str, Any]],
    generative: bool,
) -> list[str]:
    """How a run's protocol differs from the paper's for a section: shots, system instruction, the spec's paper
    settings (option shuffling, split, generation settings ...), and generation overrides."""
    reasons = []
    shots = provenance.get("n_shot") or {}
    other_shots = {task: shots[task] for task in tasks if task in shots and shots[task] != spec.protocol.num_fewshot}
    if other_shots:
        reasons.append(
            f"n-shot {', '.join(f'{t} {n}' for t, n in other_shots.items())} (the paper's: {spec.protocol.num_fewshot})"
        )
    if provenance.get("system_instruction"):
        reasons.append("a system instruction was added (--system_instruction); the paper's prompt has none")
    for name, paper_value in spec.protocol.settings.items():
        used = sorted({json.dumps(values.get(name), sort_keys=True, default=str) for values in settings})
        if used and used != [json.dumps(paper_value, sort_keys=True, default=str)]:
            reasons.append(f"setting {name} = {', '.join(used)} (the paper's: {json.dumps(paper_value)})")
    if generative and provenance.get("gen_kwargs"):
        reasons.append(
            f"--gen_kwargs {json.dumps(provenance['gen_kwargs'], ensure_ascii=False)} overrides the paper's generation "
            "settings (stop strings, token budget or sampling)"
        )
    return reasons


def _paper_comparable(numbers: Mapping[str, Any], spec: BenchmarkSpec, protocol: Sequence[str]) -> dict[str, Any]:
    if spec.report.headline is Headline.NONE:
        reasons = ["the paper's numbers are not an accuracy: see this benchmark's own section"]
        return {"metric": None, "value": None, "reasons": reasons, "reason": reasons[0]}
    reasons = []
    if spec.protocol.separate_ranking:
        reasons.append(spec.protocol.separate_ranking)
    if not numbers["full_coverage"]:
        reasons.append("not every published item was scored (see coverage)")
    reasons += protocol
    headline = numbers[spec.report.headline.value]
    comparable = not reasons and headline is not None
    return {
        "metric": spec.report.headline.value,
        "value": headline["value"] if comparable else None,
        "reasons": reasons,
        "reason": "all published items were scored with the paper's protocol"
        if comparable
        else "not comparable with the paper: " + "; ".join(reasons),
    }


def _group_entry(group: Sequence[ScoredItem], spec: BenchmarkSpec, extras_names: Sequence[str] = ()) -> dict[str, Any]:
    """A component's or subgroup's n, small flag and accuracy (with accuracy_all and answered when the spec
    scores answered items only), and the mean of each per-item rate."""
    accuracies = _accuracies(group, spec)
    return {
        "n": len(group),
        "small": len(group) < SMALL_GROUP,
        "accuracy": accuracies["accuracy_micro"],
        **(
            {"accuracy_all": accuracies["accuracy_all_micro"], "answered": accuracies["answered"]}
            if spec.report.accuracy_over is AccuracyOver.ANSWERED
            else {}
        ),
        **{name: float(sum(i.extras[name] for i in group) / len(group)) for name in extras_names},
    }


def _components(
    by_component: Mapping[str, Sequence[ScoredItem]], spec: BenchmarkSpec, extras_names: Sequence[str]
) -> dict[str, Any]:
    return {component: _group_entry(group, spec, extras_names) for component, group in by_component.items()}


def _subgroups(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """Accuracy per subgroup (spec.beyond_accuracy.subgroup_of), subgroups sorted by name."""
    groups: dict[str, list[ScoredItem]] = {}
    for item in items:
        groups.setdefault(str(spec.beyond_accuracy.subgroup_of(item)), []).append(item)
    return {name: _group_entry(groups[name], spec) for name in sorted(groups)}


def _paired_variants(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any] | None:
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


def _calibration(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
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
        out["ece"] = _estimate(calibration.ece_of(given), forecasts, spec)
        out["brier"] = _estimate(stats.mean_of(calibration.brier_values(given)), forecasts, spec)
        out["reliability"] = calibration.reliability(given)
    return out


def _component_groups(
    items: Sequence[ScoredItem], by_component: Mapping[str, Sequence[ScoredItem]], spec: BenchmarkSpec
) -> dict[str, Any]:
    out = {}
    for name, members in spec.report.component_groups.items():
        group = [item for item in items if item.component in members]
        if group:
            out[name] = {
                "components": [c for c in members if c in by_component],
                "missing_components": [c for c in members if c not in by_component],
                "n": len(group),
                **_accuracies(group, spec),
            }
    return out


def _classes(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """Per-class scores, macro-F1 and the confusion matrix (gold rows; predicted columns end in INVALID)."""
    labels = list(spec.report.labels)
    pred_labels = labels + sorted({i.pred for i in items} - set(labels) - {INVALID}) + [INVALID]
    gold, pred = [i.gold for i in items], [i.pred for i in items]
    matrix = stats.confusion_matrix(gold, pred, labels, pred_labels)
    return {
        "per_class": stats.per_class_scores(matrix, labels),
        "macro_f1": _estimate(stats.macro_f1_of(gold, pred, labels), items, spec),
        "confusion_matrix": {"gold": labels, "predicted": pred_labels, "counts": matrix.tolist()},
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


def _ties(items: Sequence[ScoredItem], spec: BenchmarkSpec, headline: Mapping[str, Any] | None) -> dict[str, Any]:
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
        lowest=_accuracy(metric, group, spec, lowest),
        highest=_accuracy(metric, group, spec, highest),
        expected=_estimate(metric_statistic(metric, group, expected), group, spec),
    )
    half_width = (headline["high"] - headline["low"]) / 2
    reach = max(headline["value"] - out["lowest"]["value"], out["highest"]["value"] - headline["value"])
    out["could_move_headline"] = bool(tied) and reach > half_width
    return {"ties": out}


def _detectable(numbers: Mapping[str, Any], spec: BenchmarkSpec) -> dict[str, Any] | None:
    """The smallest difference a paired comparison over these items could find against a hypothetical model of the
    same accuracy (on the compared metric's items, with independent errors: :mod:`.power`); None: no comparison."""
    metric = spec.compared_metric
    if metric is None or not isinstance(numbers.get(metric.value), Mapping):
        return None
    return power.detectable_against_equal(numbers["n_items"], numbers[metric.value]["value"])


def _generative(run: Run, tasks: Sequence[str]) -> bool:
    configs = run.results.get("configs") or {}
    return any(isinstance(configs.get(t), Mapping) and configs[t].get("output_type") == "generate_until" for t in tasks)


def score_section(
    items: list[ScoredItem],
    spec: BenchmarkSpec,
    run: Run,
    provenance: Mapping[str, Any] | None = None,
    counter: Callable[[], lengths.LengthCounter] | None = None,
    walk: Walk | None = None,
) -> Section:
    """A spec's section of ``run`` from its scored items (``provenance``: the run's, computed when not given;
    ``counter``: how its replies are measured, made on first use and shared by the run's sections; words when not
    given; ``walk``: the pass over the run's samples that scored ``items``, made here when not given)."""
    provenance = run_info(run) if provenance is None else provenance
    walk = walk_samples(run, spec, score=False) if walk is None else walk
    by_component = _by_component(items, spec)
    coverage = _coverage(by_component, spec, run)
    extras_names = sorted({name for item in items for name in item.extras})
    tasks = sorted({item.task for item in items})
    # Settings come from the logged docs (a MillerQA model label, a FActBench source): masked like every text.
    settings = tuple(_masked(run, values) for values in walk.settings.values())
    generative = _generative(run, tasks)
    numbers: dict[str, Any] = {
        "title": spec.title,
        "tasks": _masked(run, tasks),
        "n_items": len(items),
        "n_invalid": sum(item.pred == INVALID for item in items),
        "accuracy_over": spec.report.accuracy_over.value,
        "headline_metric": spec.report.headline.value,
        "compared_metric": None if spec.compared_metric is None else spec.compared_metric.value,
        **_accuracies(items, spec),
        "rates": {name: _rate([item.extras[name] for item in items], items, spec) for name in extras_names},
        "components": _components(by_component, spec, extras_names),
        "coverage": coverage,
        "full_coverage": all(entry["complete"] for entry in coverage.values()),
        "subset": subset(coverage, spec),
        "paper_comparable": None,
        "reference": {model: dict(values) for model, values in spec.protocol.reference.items()},
        "published_headlines": spec.published_headlines(),
        "notes": list(spec.report.notes),
        "items": {"file": items_file(spec.name), "n": len(items), "fields": list(ITEM_FIELDS)},
    }
    numbers.update(_ties(items, spec, numbers.get(spec.report.headline.value)))
    numbers["detectable"] = _detectable(numbers, spec)
    numbers["caveats"] = list(dict.fromkeys(_masked(run, caveat) for caveat in walk.caveats))
    numbers["paper_comparable"] = _paper_comparable(
        numbers, spec, numbers["caveats"] + protocol_differences(spec, tasks, provenance, settings, generative)
    )
    if spec.report.component_groups:
        numbers["component_groups"] = _component_groups(items, by_component, spec)
    if spec.report.labels:
        numbers.update(_classes(items, spec))
    if spec.beyond_accuracy.subgroup_of is not None:
        numbers["subgroups"] = _subgroups(items, spec)
    if spec.beyond_accuracy.paired_variant_of is not None:
        paired = _paired_variants(items, spec)
        if paired is not None:
            numbers["paired_variants"] = paired
    if spec.beyond_accuracy.confidence_source is not None:
        numbers["calibration"] = _calibration(items, spec)
    if generative:
        measure = lengths.counter(None, None) if counter is None else counter()
        # lm-eval records one evaluation time per run: it is the run section's evaluation_time_seconds.
        numbers["reply_lengths"] = lengths.summary(
            [measure.count(reply) for reply in walk.replies], walk.budgets, measure
        )
    if spec.extra_section is not None:
        numbers["extra"] = dict(spec.extra_section(run))
    keys = tuple(spec.pairing.item_key(item) for item in items)
    repeated = [key for key, count in Counter(keys).items() if count > 1]
    if repeated:
        raise DataError(
            f"{run.results_path}: {spec.name} scored item {repeated[0]} {Counter(keys)[repeated[0]]} times; "
            "it would be counted twice"
        )
    return Section(spec, tuple(items), keys, numbers, compared_bootstrap(items, spec), settings, generative)
