"""What a benchmark declares for the report: one re-scored item (:func:`scored_item` builds it from a logged sample,
read with :mod:`.samples`) and the report spec.

A benchmark turns each logged lm-eval sample into a :class:`ScoredItem` with its own parser (the
same scoring function its ``process_results`` calls), so the report never trusts a number it cannot
recompute. :class:`BenchmarkSpec` says which tasks a spec owns and how its numbers are formed.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from enum import Enum
from typing import Any

from .calibration import Forecast
from .rotation import Rotated
from .runs import Run
from .samples import logged_arguments, logged_loglikelihoods, logged_reply, readable_prompt

INVALID = "INVALID"
# An item's outcome, as items_<section>.jsonl and the item explorer name it.
CORRECT, WRONG = "correct", "wrong"


class Stratum(Enum):
    """What every bootstrap resample keeps fixed: the items per component or per gold answer."""

    COMPONENT = "component"
    GOLD = "gold"


class Average(Enum):
    """How an accuracy averages: MICRO pools the items, MACRO is the unweighted mean of the component accuracies."""

    MICRO = "micro"
    MACRO = "macro"


@dataclass(frozen=True)
class AccuracyMetric:
    """An accuracy metric of a section, as report.json names it (:attr:`value`): ``accuracy_<average>``, over the
    items the spec's accuracy counts, or with ``all_items`` ``accuracy_all_<average>``, over every item with the
    unanswered ones counted wrong (reported beside the accuracy of a spec with AccuracyOver.ANSWERED)."""

    average: Average
    all_items: bool = False

    @property
    def value(self) -> str:
        return f"accuracy_{'all_' if self.all_items else ''}{self.average.value}"


class Headline(Enum):
    """The paper's number. NONE: it is no accuracy; the benchmark's own numbers are its ``extra_section``."""

    ACCURACY_MACRO = "accuracy_macro"
    ACCURACY_MICRO = "accuracy_micro"
    NONE = "none"

    @property
    def metric(self) -> AccuracyMetric | None:
        """The accuracy metric the headline is; None for NONE."""
        return _HEADLINE_METRICS.get(self)

    @property
    def published_names(self) -> tuple[str, ...]:
        """The names published tables give this metric (the papers say "macro" or "accuracy"); none for NONE."""
        return _REFERENCE_KEYS.get(self, ())


_HEADLINE_METRICS = {
    Headline.ACCURACY_MACRO: AccuracyMetric(Average.MACRO),
    Headline.ACCURACY_MICRO: AccuracyMetric(Average.MICRO),
}


class ConfidenceSource(Enum):
    """Where a section's confidences come from, for calibration (:mod:`.calibration`)."""

    CHOICE_PROBABILITIES = "choice_probabilities"  # softmax over the choices' log-likelihoods
    STATED = "stated_confidence"  # the model's own 0-100 confidence in its answer


class AccuracyOver(Enum):
    """ALL: INVALID counts wrong. ANSWERED: accuracy over answered items (pred != INVALID), as MillerQA's authors do."""

    ALL = "all"
    ANSWERED = "answered"


@dataclass(frozen=True, slots=True)  # slots: a leaderboard holds every item of every run
class ScoredItem:
    """One logged sample, re-scored."""

    task: str
    doc_id: int
    doc_hash: str
    component: str  # the unit the macro averages over (a MedFact component, a specialty, ...)
    gold: str
    pred: str  # a label, or INVALID when no answer could be read
    correct: float  # 0 or 1
    extras: Mapping[str, float] = field(default_factory=dict)  # per-item rates/scores, reported as means
    details: Mapping[str, Any] = field(default_factory=dict)  # per-item record for items_<benchmark>.jsonl
    # The item's own id in its source data (BenchmarkSpec.item_id_fields of the logged doc, e.g. a PubMedQA pubid);
    # None when the logged doc does not carry it (lm-eval's doc_id is only the item's position in the task).
    item_id: str | None = None
    prompt_hash: str = ""  # lm-eval's hash of the item's first request (two runs with another prompt differ here)
    # The evidence behind the verdict, for items_<section>.jsonl and the item explorer (scored_item fills the
    # logged ones from the sample; the spec says which parse step decided and, for INVALID, why).
    parse_step: str = ""
    invalid_reason: str | None = None
    prompt: str | list[dict[str, str]] = ""  # the first request's context; chat messages when lm-eval logged them
    reply: str | None = None  # the whole (filtered) reply of a generation; None for a log-likelihood item
    choices: tuple[str, ...] = ()  # the continuations a log-likelihood item compared (one per choice)
    loglikelihoods: tuple[float, ...] = ()  # their logged log-likelihoods, in the same order
    redacted: tuple[str, ...] = ()  # the fields (prompt, reply, details.<key>, ...) a credential was masked in

    @property
    def outcome(self) -> str:
        """correct, wrong, or INVALID (no answer could be read)."""
        return outcome_of(self.pred, self.correct)

    forecast: Forecast | None = None  # confidence in the answer, for calibration; None: no answer or no confidence

    def __reduce__(self):
        # Rebuilt from its fields in order: a leaderboard's workers send every item of a run (14,274 for
        # MedFact-Bench), and this pickles and unpickles in about two thirds of the time of the slots' default state.
        return ScoredItem, _item_fields(self)


ITEM_FIELD_NAMES = tuple(item_field.name for item_field in fields(ScoredItem))
_item_fields = operator.attrgetter(*ITEM_FIELD_NAMES)


def outcome_of(pred: str, correct: float) -> str:
    """:attr:`ScoredItem.outcome` of an item's prediction and correctness."""
    if pred == INVALID:
        return INVALID
    return CORRECT if correct else WRONG


class ItemColumns(Sequence[ScoredItem]):
    """Scored items held as one list per field (:data:`ITEM_FIELD_NAMES`, in that order), each item built only when
    it is asked for: a leaderboard holds every item of every run, and sends each run from the process that read it,
    where per-item objects cost most of the time (:meth:`column` reads a field without building any item)."""

    __slots__ = ("_columns",)

    def __init__(self, columns: Sequence[Sequence[Any]]):
        if len(columns) != len(ITEM_FIELD_NAMES) or len({len(column) for column in columns}) > 1:
            raise ValueError("not one column of one length per item field")
        self._columns = tuple(columns)

    @classmethod
    def of(cls, items: Sequence[ScoredItem], **replaced: Sequence[Any]) -> ItemColumns:
        """``items`` as columns, with the columns named in ``replaced`` given instead."""
        if isinstance(items, ItemColumns):
            return cls([replaced.get(name, column) for name, column in zip(ITEM_FIELD_NAMES, items._columns)])
        return cls(
            [replaced[name] if name in replaced else [getattr(i, name) for i in items] for name in ITEM_FIELD_NAMES]
        )

    def column(self, name: str) -> Sequence[Any]:
        return self._columns[ITEM_FIELD_NAMES.index(name)]

    def __len__(self) -> int:
        return len(self._columns[0])

    def __getitem__(self, position):
        if isinstance(position, slice):
            return [ScoredItem(*row) for row in zip(*(column[position] for column in self._columns))]
        return ScoredItem(*(column[position] for column in self._columns))

    def __iter__(self):
        return map(ScoredItem, *self._columns)

    def __reduce__(self):
        return ItemColumns, (self._columns,)


def item_column(items: Sequence[ScoredItem], name: str) -> Sequence[Any]:
    """One field of every item, in order, without building the items of :class:`ItemColumns`."""
    if isinstance(items, ItemColumns):
        return items.column(name)
    return [getattr(item, name) for item in items]


# How a benchmark re-scores one logged sample of a task: (task, sample) -> its item.
ScoreSample = Callable[[str, Mapping[str, Any]], ScoredItem]

# An id field's integer beyond this many digits is no id (and str() of a huge int raises).
_ID_DIGITS = 18


def source_item_id(doc: Any, fields: Sequence[str]) -> str | None:
    """The item's own id from a logged doc: the values of ``fields``, joined by "/"; None when there are no
    fields, the doc is no object, or a value is missing or neither text nor an integer (a hostile or older doc)."""
    if not fields or not isinstance(doc, Mapping):
        return None
    parts = []
    for name in fields:
        value = doc.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10**_ID_DIGITS:
            value = str(value)
        if not isinstance(value, str) or not value:
            return None
        parts.append(value)
    return "/".join(parts)


def default_item_key(item: ScoredItem) -> tuple:
    """What makes two runs' items the same item: lm-eval's task, doc_id and doc_hash."""
    return (item.task, item.doc_id, item.doc_hash)


# How published tables name a headline metric (the papers say "macro" or "accuracy").
_REFERENCE_KEYS = {
    Headline.ACCURACY_MACRO: ("accuracy_macro", "macro"),
    Headline.ACCURACY_MICRO: ("accuracy_micro", "accuracy"),
}


@dataclass(frozen=True)
class Report:
    """How the report forms and shows a section's numbers."""

    headline: Headline = Headline.ACCURACY_MACRO
    accuracy_over: AccuracyOver = AccuracyOver.ALL
    stratify_by: Stratum = Stratum.COMPONENT  # what every bootstrap resample keeps fixed
    labels: Sequence[str] | None = None  # gold classes (confusion-matrix rows); None: no class table
    # Named sets of components (e.g. competency dimensions), each reported with its own accuracies.
    component_groups: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # What the components are, in a reader's words ("2 of 5 specialties").
    component_noun: str = "components"
    notes: Sequence[str] = ()
    # An item record's (gold, pred) in the labels the model saw, where they differ from the scored ones (MillerQA
    # scores original option indices, the model saw shuffled letters): the pages show these, the scored ones beside.
    shown_labels: Callable[[Mapping[str, Any]], tuple[str, str]] | None = None


@dataclass(frozen=True)
class RunPairing:
    """How an item of one run is paired with the same item of another, and which setting differences keep two
    runs comparable."""

    # What makes two runs' items the same item (e.g. MillerQA's item id, since its doc and doc hash change with
    # the model label).
    item_key: Callable[[ScoredItem], tuple] = default_item_key
    # Settings that differ between models by the protocol's design (MillerQA shuffles options per model label):
    # two runs that differ in them are still comparable, and their prompts differ by design.
    per_model_settings: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Protocol:
    """The paper's numbers and protocol: a run with anything else is not paper-comparable."""

    reference: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # published numbers, per model
    num_fewshot: int = 0
    # The values of BenchmarkSpec.settings_of that the paper uses (e.g. MedExQA's {"shuffle": False}).
    settings: Mapping[str, Any] = field(default_factory=dict)
    # How many items the published numbers are over when that is not the sum of expected_counts (a frozen subset
    # of a published set: PubMedQA's 100 of 500).
    published_items: int | None = None
    # Why this section is never paper-comparable (e.g. a frozen subset is a ranking of its own); None: it can be.
    separate_ranking: str | None = None
    # A sentence to show next to the number when a logged doc's label is not a gold label (e.g. a demo file
    # labelled with a model's predictions); None for a gold label. Such a section is never paper-comparable.
    caveat_of: Callable[[Mapping[str, Any]], str | None] | None = None


@dataclass(frozen=True)
class BeyondAccuracy:
    """What the report measures besides accuracy; each None: not measured."""

    # Where the items' confidences come from (ScoredItem.forecast), for calibration.
    confidence_source: ConfidenceSource | None = None
    # The subcategory each item carries (e.g. an item's own category within its component), reported as
    # accuracy per subgroup.
    subgroup_of: Callable[[ScoredItem], str] | None = None
    # Items answered in several variants of one question (e.g. one question in several languages): (variant,
    # question key) of an item, None for the others; each variant is compared with paired_reference on the
    # questions both have.
    paired_variant_of: Callable[[ScoredItem], tuple[str, str] | None] | None = None
    paired_reference: str | None = None
    # Where an item's options were shown (:mod:`.answer_order`): (the gold answer's position, the chosen one; None
    # when unanswered) as indices in the order the model saw the options; None for an item whose positions are
    # unknown. position_names names the positions (empty: letters A, B, ...).
    answer_position: Callable[[ScoredItem], tuple[int, int | None] | None] | None = None
    position_names: Sequence[str] = ()
    # The answers of a section whose prompt shows no options, where position means nothing (:func:`.answer_order.
    # answer_distribution`: the chosen answers' distribution against the gold answers'); empty: not measured.
    answer_labels: tuple[str, ...] = ()
    # A rotated section's items (:mod:`.rotation`): each item's question, rotation and original option chosen; None
    # for an item whose rotation is unknown.
    rotation_of: Callable[[ScoredItem], Rotated | None] | None = None


@dataclass(frozen=True)
class BenchmarkSpec:
    """One report section: the tasks it owns, how a logged sample is scored, and its four parts."""

    name: str
    title: str
    score_sample: ScoreSample
    expected_counts: Mapping[str, int]  # component -> items in the published benchmark
    # The tasks this spec reports: exactly one of task_names, or every task named task_prefix or task_prefix_*.
    task_names: frozenset[str] | None = None
    task_prefix: str | None = None
    # The settings that can move a score, read from one logged sample (e.g. the shuffle seed and model
    # label its doc was built with); the report lists every distinct value in its run section.
    settings_of: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    # The logged doc's fields that name an item in the benchmark's source data (its ScoredItem.item_id, the values
    # joined by "/"), e.g. ("pubid",); empty: the source has no id.
    item_id_fields: Sequence[str] = ()
    # Numbers the report cannot form from ScoredItems (e.g. FActBench's fact-check table, rebuilt from the
    # factbench-check folder beside the run): extra_section(run) is kept as the benchmark's "extra" in
    # report.json, and extra_markdown(extra) gives the lines its Markdown section ends with.
    extra_section: Callable[[Run], Mapping[str, Any]] | None = None
    extra_markdown: Callable[[Mapping[str, Any]], Sequence[str]] | None = None
    report: Report = field(default_factory=Report)
    pairing: RunPairing = field(default_factory=RunPairing)
    protocol: Protocol = field(default_factory=Protocol)
    beyond_accuracy: BeyondAccuracy = field(default_factory=BeyondAccuracy)

    def __post_init__(self) -> None:
        if (self.task_names is None) == (self.task_prefix is None):
            raise ValueError(f"report spec {self.name!r}: give exactly one of task_names and task_prefix")

    @property
    def compared_metric(self) -> AccuracyMetric | None:
        """The metric two runs are compared on: the headline, over all items (a paired test needs one denominator
        for both runs, so with AccuracyOver.ANSWERED it is accuracy_all_*, unanswered items counted wrong)."""
        metric = self.report.headline.metric
        if metric is None:
            return None
        return replace(metric, all_items=self.report.accuracy_over is AccuracyOver.ANSWERED)

    def published_headlines(self) -> dict[str, float]:
        """Each published model's number for the headline metric (a paper's "macro" is our accuracy_macro)."""
        names = self.report.headline.published_names
        out = {}
        for model, numbers in self.protocol.reference.items():
            value = next((numbers[key] for key in names if isinstance(numbers.get(key), (int, float))), None)
            if value is not None:
                out[str(model)] = float(value)
        return out

    def owns(self, task: str) -> bool:
        if self.task_names is not None:
            return task in self.task_names
        return task == self.task_prefix or task.startswith(f"{self.task_prefix}_")

    def item_id_of(self, sample: Mapping[str, Any]) -> str | None:
        """The item id of a logged sample (:func:`source_item_id` of its doc)."""
        return source_item_id(sample.get("doc"), self.item_id_fields)

    @property
    def stratum_field(self) -> str:
        """The item field every bootstrap resample keeps fixed (``gold`` or ``component``)."""
        return self.report.stratify_by.value

    def stratum_of(self, item: ScoredItem) -> str:
        return getattr(item, self.stratum_field)


def scored_item(
    task: str,
    sample: Mapping[str, Any],
    *,
    component: str,
    gold: str,
    pred: str,
    correct: float | None = None,
    extras: Mapping[str, float] | None = None,
    details: Mapping[str, Any] | None = None,
    parse_step: str = "",
    invalid_reason: str | None = None,
    forecast: Forecast | None = None,
) -> ScoredItem:
    """A :class:`ScoredItem` for a logged sample; ``correct`` defaults to ``pred == gold``.

    The logged evidence comes with it: the first request's context as the prompt, and either the reply (a
    generation) or each choice's continuation and log-likelihood (a log-likelihood item: every request holds
    a context and a continuation, and ``filtered_resps`` one pair per choice).
    """
    requests = logged_arguments(sample)
    prompt = readable_prompt(requests[0][0]) if requests and requests[0] else ""
    responses = sample.get("filtered_resps")
    if isinstance(responses, list) and responses and all(isinstance(r, (list, tuple)) for r in responses):
        loglikelihoods = tuple(logged_loglikelihoods(sample))
        continuations = [r[1] if len(r) > 1 and isinstance(r[1], str) else None for r in requests]
        if len(continuations) != len(loglikelihoods) or None in continuations:
            continuations = [f"choice {i + 1}" for i in range(len(loglikelihoods))]
        reply, choices = None, tuple(continuations)
    else:
        reply, choices, loglikelihoods = logged_reply(sample), (), ()
    return ScoredItem(
        task=task,
        doc_id=int(sample["doc_id"]),
        doc_hash=sample.get("doc_hash", ""),
        component=component,
        gold=gold,
        pred=pred,
        correct=float(pred == gold) if correct is None else float(correct),
        extras=dict(extras or {}),
        details=dict(details or {}),
        prompt_hash=str(sample.get("prompt_hash") or ""),
        parse_step=parse_step,
        invalid_reason=invalid_reason,
        prompt=prompt,
        reply=reply if isinstance(reply, str) or reply is None else str(reply),
        choices=choices,
        loglikelihoods=loglikelihoods,
        forecast=forecast,
    )
