"""One report section of a run: its fields, declared once (:data:`SECTION_PARTS`, which report.html and report.md
both render by), and its numbers, computed from its scored items (:func:`score_section`).

Per section: micro and macro accuracy, per-component accuracy, per-item rates, per-class precision/recall/F1 and
macro-F1, a confusion matrix with an INVALID column, coverage against the published counts, whether the number is
paper-comparable (with every reason when not), and a stratified bootstrap CI for every number (:mod:`.stats`);
beyond accuracy: calibration (:mod:`.calibration`) and selective prediction (:mod:`.selective`) where the spec
names a confidence source, accuracy per subgroup, paired differences between variants of the same questions (e.g.
languages; those three parts built by :mod:`.section_parts`), the ties of a log-likelihood
section, answer order (:mod:`.answer_order`) where the spec says where options were shown (where the prompt shows
none, the chosen answers' distribution against the gold answers'), accuracy per rotation
and the consistency rate of a rotated section (:mod:`.rotation`), and reply
lengths of generative sections (:mod:`.lengths`).

Sections whose specs leave unparseable answers unscored (``AccuracyOver.ANSWERED``, e.g. MillerQA) get accuracy
over the answered items, the same with unanswered items counted wrong (``accuracy_all_*``) and the answered rate,
everywhere accuracy is reported.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from . import answer_order, lengths, power, rotation, section_parts, stats
from .accuracy import accuracies, compared_bootstrap, estimate, group_entry, rate, strata, ties
from .benchmarks import report_specs
from .data import DataError
from .runs import Run, run_info
from .scoring import (
    INVALID,
    BenchmarkSpec,
    Headline,
    ItemColumns,
    ScoredItem,
    item_column,
)
from .walk import Walk, masked, walk_samples

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


def items_file(section_name: str) -> str:
    return f"items_{section_name}.jsonl"


# The estimates a section shows first, in this order (report.html's overall table; report.md's headline lines).
ESTIMATE_ORDER = (
    "accuracy_micro",
    "accuracy_macro",
    "accuracy_all_micro",
    "accuracy_all_macro",
    "answered",
    "macro_f1",
)
# Every field of a section (report.json's benchmarks.<section>, as :func:`score_section` makes it), declared once:
# the part of the section that shows it, each field in exactly one. report.html (templates/section.html.j2) and
# report.md render a section part by part from this; "estimates" also takes any other estimate, and a field no part
# names goes to a section's other fields.
SECTION_PARTS: dict[str, tuple[str, ...]] = {
    "heading": ("title",),
    "headline": (
        "headline_metric",
        "tasks",
        "n_items",
        "n_invalid",
        "accuracy_over",
        "paper_comparable",
        "caveats",
        "ties",
        "detectable",
        "subset",
    ),
    "estimates": ESTIMATE_ORDER,
    "rates": ("rates",),
    "components": ("components",),
    "component_groups": ("component_groups",),
    "coverage": ("coverage", "full_coverage"),
    "per_class": ("per_class",),
    "confusion_matrix": ("confusion_matrix",),
    "subgroups": ("subgroups",),
    "paired_variants": ("paired_variants",),
    "calibration": ("calibration",),
    "answer_order": ("answer_order",),
    "answer_distribution": ("answer_distribution",),
    "rotation": ("rotation",),
    "selective": ("selective",),
    "reply_lengths": ("reply_lengths",),
    "published": ("reference", "published_headlines", "compared_metric"),
    "extra": ("extra",),
    "notes": ("notes",),
    "items": ("items",),
}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def published_column_value(numbers: Mapping[str, Any], column: str) -> float | None:
    """This run's number under a published table's column (report.json's section ``numbers``): a component's
    accuracy, the headline where the column is the name papers give it ("macro", "accuracy": :attr:`.Headline.
    published_names`; None when not every published item was scored, as a partial average is no match for the
    published full ones), or the estimate of that name; None where the run has no such number."""
    component = numbers.get("components", {}).get(column)
    if isinstance(component, Mapping):
        return _number((component.get("accuracy") or {}).get("value"))
    headline = next((h for h in Headline if h.value == numbers.get("headline_metric")), Headline.NONE)
    if column in headline.published_names:
        if not numbers.get("full_coverage"):
            return None
        column = headline.value
    estimate = numbers.get(column)
    is_estimate = isinstance(estimate, Mapping) and all(key in estimate for key in ("value", "low", "high"))
    return _number(estimate["value"]) if is_estimate else None


def text_line(item: ScoredItem) -> bytes:
    """An item's prompt and reply as one line of ASCII JSON, an object with those two fields of its items file
    record: the lines :class:`SpooledTexts` reads back (a spool's, and an items file's, whose records hold more)."""
    return json.dumps({"prompt": item.prompt, "reply": item.reply}, ensure_ascii=True).encode("ascii") + b"\n"


@dataclass(frozen=True)
class SpooledTexts:
    """A section's item texts kept in a file (:meth:`Section.spool`): the line of each item at its byte offset."""

    path: Path
    offsets: np.ndarray  # int64, one per item, in the section's items order

    def texts(self, position: int) -> dict[str, str]:
        with self.path.open("rb") as handle:
            handle.seek(int(self.offsets[position]))
            record = json.loads(handle.readline())
        return {"prompt": record["prompt"], "reply": record["reply"]}


@dataclass(frozen=True)
class Section:
    """One report section of a run: a spec's scored items and the numbers computed from them."""

    spec: BenchmarkSpec
    items: Sequence[ScoredItem]  # in (task, doc_id) order: a tuple, or ItemColumns where read or spooled
    keys: tuple[tuple, ...]  # spec.pairing.item_key of each item, in the same order
    numbers: dict[str, Any]  # the section as report.json holds it
    compared: stats.Bootstrapped | None  # the spec's compared metric over these items, with its distribution
    settings: tuple[dict[str, Any], ...]  # every distinct set of score-moving settings among the samples
    generative: bool  # its tasks generate text (lm-eval output_type generate_until)
    # Where the items' prompts and replies are kept when they are not held (:meth:`spool`); None: in the items.
    spooled: SpooledTexts | None = None

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
            self.spooled,
        )
        return _section_of_spec, (self.spec.name, *state)

    def item(self, position: int) -> ScoredItem:
        """The item at ``position`` with its prompt and reply, read back from the spool where they are kept there
        (once: a leaderboard's page shows an item in every pair it is discordant in)."""
        if self.spooled is None:
            return self.items[position]
        item = self._read_back.get(position)
        if item is None:
            item = self._read_back[position] = replace(self.items[position], **self.spooled.texts(position))
        return item

    @cached_property
    def _read_back(self) -> dict[int, ScoredItem]:
        """The items :meth:`item` read back from the spool, by position."""
        return {}

    def spool(self, folder: Path) -> Section:
        """This section with its items' prompts and replies written to a new file in ``folder`` (a folder of ours),
        one JSON line per item, and held no more (each is None in ``items``; :meth:`item` reads them back): a run's
        texts are most of what it holds, and the leaderboard holds every run while it pairs them."""
        offsets = np.empty(len(self.items), dtype=np.int64)
        descriptor, name = tempfile.mkstemp(suffix=".jsonl", dir=folder)
        with os.fdopen(descriptor, "wb") as handle:
            for position, item in enumerate(self.items):
                offsets[position] = handle.tell()
                handle.write(text_line(item))
        none = [None] * len(self.items)
        items = ItemColumns.of(self.items, prompt=none, reply=none)
        return replace(self, items=items, spooled=SpooledTexts(Path(name), offsets))

    # Computed once per section, not once per pair it is compared in (the leaderboard pairs every run with every
    # other).
    @cached_property
    def index(self) -> dict[tuple, int]:
        """Each item key's position in ``items``."""
        return {key: position for position, key in enumerate(self.keys)}

    @cached_property
    def correct(self) -> np.ndarray:
        """Each item's 0/1 correctness, in ``items`` order."""
        return np.asarray(item_column(self.items, "correct"), dtype=float)

    @cached_property
    def prompt_hashes(self) -> tuple[str, ...]:
        return tuple(item_column(self.items, "prompt_hash"))

    # Digests of the item keys and of the prompt hashes, in order: two sections with the same digest hold the same
    # ones (the leaderboard compares every pair of runs; a digest is made once per section, not once per pair).
    @cached_property
    def keys_digest(self) -> str:
        return _digest(self.keys)

    @cached_property
    def prompt_hashes_digest(self) -> str:
        return _digest(self.prompt_hashes)

    @cached_property
    def stratum_groups(self) -> list[np.ndarray]:
        """The items' positions per bootstrap stratum (:func:`.stats.stratum_indices`)."""
        return stats.stratum_indices(strata(self.items, self.spec), len(self.items))


def _digest(values: tuple[Any, ...]) -> str:
    return hashlib.sha256(repr(values).encode("utf-8", "surrogatepass")).hexdigest()


def _section_of_spec(name: str, *state: Any) -> Section:
    spec = next(spec for spec in report_specs() if spec.name == name)
    return Section(spec, *state)


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


def _components(
    by_component: Mapping[str, Sequence[ScoredItem]], spec: BenchmarkSpec, extras_names: Sequence[str]
) -> dict[str, Any]:
    return {component: group_entry(group, spec, extras_names) for component, group in by_component.items()}


def _subgroups(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """Accuracy per subgroup (spec.beyond_accuracy.subgroup_of), subgroups sorted by name."""
    groups: dict[str, list[ScoredItem]] = {}
    for item in items:
        groups.setdefault(str(spec.beyond_accuracy.subgroup_of(item)), []).append(item)
    return {name: group_entry(groups[name], spec) for name in sorted(groups)}


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
                **accuracies(group, spec),
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
        "macro_f1": estimate(stats.macro_f1_of(gold, pred, labels), items, spec),
        "confusion_matrix": {"gold": labels, "predicted": pred_labels, "counts": matrix.tolist()},
    }


def _detectable(numbers: Mapping[str, Any], spec: BenchmarkSpec) -> dict[str, Any] | None:
    """The smallest difference a paired comparison over these items could find against a hypothetical model of the
    same accuracy (on the compared metric's items, with independent errors: :mod:`.power`); None: no comparison."""
    metric = spec.compared_metric
    if metric is None or not isinstance(numbers.get(metric.value), Mapping):
        return None
    return power.detectable_against_equal(numbers["n_items"], numbers[metric.value]["value"])


def generates_text(run: Run, tasks: Iterable[str]) -> bool:
    """Whether any of ``tasks`` generates text (lm-eval's output_type generate_until in the run's configs)."""
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
    settings = tuple(masked(run, values) for values in walk.settings.values())
    generative = generates_text(run, tasks)
    # First, beside the section's accuracy: these draw on the resample set of all its items, which the components'
    # own sets may then displace (stats keeps a bounded number of bytes of sets).
    compared = compared_bootstrap(items, spec)
    classes = _classes(items, spec) if spec.report.labels else None
    numbers: dict[str, Any] = {
        "title": spec.title,
        "tasks": masked(run, tasks),
        "n_items": len(items),
        "n_invalid": sum(item.pred == INVALID for item in items),
        "accuracy_over": spec.report.accuracy_over.value,
        "headline_metric": spec.report.headline.value,
        "compared_metric": None if spec.compared_metric is None else spec.compared_metric.value,
        **accuracies(items, spec),
        "rates": {name: rate([item.extras[name] for item in items], items, spec) for name in extras_names},
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
    numbers.update(ties(items, spec, numbers.get(spec.report.headline.value)))
    numbers["detectable"] = _detectable(numbers, spec)
    numbers["caveats"] = list(dict.fromkeys(masked(run, caveat) for caveat in walk.caveats))
    numbers["paper_comparable"] = _paper_comparable(
        numbers, spec, numbers["caveats"] + protocol_differences(spec, tasks, provenance, settings, generative)
    )
    if spec.report.component_groups:
        numbers["component_groups"] = _component_groups(items, by_component, spec)
    if classes is not None:
        numbers.update(classes)
    if spec.beyond_accuracy.subgroup_of is not None:
        numbers["subgroups"] = _subgroups(items, spec)
    if spec.beyond_accuracy.paired_variant_of is not None:
        paired = section_parts.paired_variants(items, spec)
        if paired is not None:
            numbers["paired_variants"] = paired
    if spec.beyond_accuracy.confidence_source is not None:
        numbers["calibration"] = section_parts.calibration_part(items, spec)
        numbers["selective"] = section_parts.selective_part(items, spec)
    if spec.beyond_accuracy.answer_position is not None:
        numbers["answer_order"] = answer_order.summary(items, spec)
    if spec.beyond_accuracy.answer_labels:
        numbers["answer_distribution"] = answer_order.answer_distribution(items, spec)
    if spec.beyond_accuracy.rotation_of is not None:
        numbers["rotation"] = rotation.summary([spec.beyond_accuracy.rotation_of(item) for item in items])
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
    return Section(spec, tuple(items), keys, numbers, compared, settings, generative)
