"""What MillerQA declares for the report: one spec per task family, each re-scoring logged samples.

Every logged reply is re-parsed by the same scoring function ``process_results`` calls
(:func:`parsing.score_reply`, :func:`parsing.score_loglikelihoods`); see lm_eval_tasks/millerqa/README.md, "Report".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import calibration, rotation
from ..calibration import Forecast
from ..samples import logged_loglikelihoods, logged_reply
from ..scoring import (
    INVALID,
    AccuracyOver,
    BenchmarkSpec,
    BeyondAccuracy,
    ConfidenceSource,
    Headline,
    Protocol,
    Report,
    RunPairing,
    ScoredItem,
    scored_item,
)
from .constants import BENCHMARKS, DIMENSIONS, FAMILIES, PUBLISHED_COUNTS, PUBLISHED_NUMBERS, TASKS, Family
from .parsing import JSON_METHODS, Answer, Choice, score_loglikelihoods, score_reply


def _chance(doc: Mapping[str, Any]) -> float:
    return 1 / len(doc["permutation"])


def score_sample(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    """A logged generative sample (the paper's protocol or the choice-only baseline), re-parsed from its reply."""
    answer = score_reply(sample["doc"], logged_reply(sample))
    forecast = calibration.from_stated(answer.confidence, bool(answer.is_correct)) if answer.answered else None
    return _scored(task, sample, answer, answer.method, {"json_parsed": float(answer.method in JSON_METHODS)}, forecast)


def score_sample_loglikelihood(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    doc = sample["doc"]
    loglikelihoods = logged_loglikelihoods(sample)
    choice = score_loglikelihoods(doc, loglikelihoods)
    gold_position = list(doc["permutation"]).index(doc["target"])
    forecast = calibration.from_loglikelihoods(loglikelihoods, gold_position)
    return _scored(task, sample, choice, choice.step, {}, forecast)


def _scored(
    task: str,
    sample: Mapping[str, Any],
    choice: Answer | Choice,
    parse_step: str,
    extras: dict[str, float],
    forecast: Forecast | None,
) -> ScoredItem:
    """A MillerQA item: its benchmark as the component, the gold and the chosen option as original indices."""
    doc = sample["doc"]
    return scored_item(
        task,
        sample,
        component=doc["benchmark"],
        gold=str(doc["target"]),
        pred=INVALID if choice.original_index is None else str(choice.original_index),
        extras={**extras, "chance": _chance(doc)},
        details=choice.record(doc),
        parse_step=parse_step,
        invalid_reason=choice.invalid_reason,
        forecast=forecast,
    )


def shown_labels(record: Mapping[str, Any]) -> tuple[str, str]:
    """An item record's gold and prediction as the letters the model saw (its gold and pred are the original
    option indices, as scored)."""
    pred = record["selected_letter"] if record["pred"] != INVALID else INVALID
    return record["correct_letter"], pred


def answer_position(item: ScoredItem) -> tuple[int, int | None] | None:
    """The gold and chosen positions in the shuffled order the model saw: where the item's permutation (shown
    position -> original option index) puts the scored original indices; None where it does not hold them."""
    shown = list(item.details.get("permutation") or [])
    try:
        return shown.index(int(item.gold)), None if item.pred == INVALID else shown.index(int(item.pred))
    except ValueError:
        return None


def settings_of(sample: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a logged sample's doc was built with: each can move a score."""
    doc = sample["doc"]
    return {
        "release": doc["release"],
        "model_label": doc["model_label"],
        # Absent from docs of task version 1.0, which did not record it.
        "model_label_derived": doc.get("model_label_derived"),
        "shuffle_seed": doc["shuffle_seed"],
    }


def rotated_settings_of(sample: Mapping[str, Any]) -> dict[str, Any]:
    """A rotated family's settings: the doc's, and that its options were rotated (:mod:`..rotation`)."""
    return settings_of(sample) | {"rotated": rotation.ROTATION in sample["doc"]}


def item_key(item: ScoredItem) -> tuple:
    """A MillerQA item across runs: its task and its own id (the doc and its hash change with the model label,
    which the options are shuffled by), and its rotation in a rotated family."""
    turned = item.details.get(rotation.ROTATION)
    return (item.task, str(item.details["id"]), *(() if turned is None else (turned,)))


def rotation_of(item: ScoredItem) -> rotation.Rotated | None:
    """A rotated item's question, rotation and chosen original option (its scored prediction already is one)."""
    chosen = None if item.pred == INVALID else item.pred
    return rotation.read((item.task, str(item.details.get("id"))), item.details, chosen, bool(item.correct))


def kind_subgroup(item: ScoredItem) -> str:
    """An item's subcategory: its benchmark and the item's own ``kind`` (e.g. a language, a category)."""
    return f"{item.component} / {item.details.get('kind') or '(no kind)'}"


# global_mmlu holds the same professional-medicine questions in 15 languages, id "<question>/<language>".
PAIRED_BENCHMARK = "global_mmlu"
PAIRED_REFERENCE = "en"


def language_variant(item: ScoredItem) -> tuple[str, str] | None:
    """(language, question) of a global_mmlu item from its id ``professional_medicine/test/6/en``; None otherwise."""
    if item.component != PAIRED_BENCHMARK:
        return None
    question, _, language = str(item.details["id"]).rpartition("/")
    return (language, question) if question and language else None


def _spec(family: Family) -> BenchmarkSpec:
    generative = family.variant != "loglikelihood"
    notes = [
        "chance: the accuracy of a uniform random guess (1 / number of options), for reading each benchmark's numbers.",
        "Options are shuffled per (item, model label); see each item's permutation in items_<benchmark>.jsonl.",
        "MillerQA's pubmedqa is 998 of all 1,000 PQA-L items, not the 500-item PubMedQA test set: never "
        "report it as PubMedQA.",
        "The paper-comparable suite has 24 benchmarks; MedBullets is only present when rebuilt by the user.",
    ]
    if generative:
        notes.insert(
            0,
            "accuracy = correct / answered (the paper's): replies without a usable letter are "
            "unscored and reported as coverage; accuracy_all counts them wrong.",
        )
    if family.rotated:
        notes.insert(
            0,
            "Rotated options: every item is asked once per cyclic rotation of its shuffled options (one item per "
            "option: coverage counts items, against the published question counts); the rotation part gives "
            "accuracy per rotation and the consistency rate.",
        )
    if family.variant == "choice_only":
        notes.insert(
            0,
            "Choice-only baseline: the question was withheld; accuracy above chance means answerable "
            "from the options alone.",
        )
    return BenchmarkSpec(
        name=family.prefix,
        title=family.title,
        task_names=frozenset(name for name, (f, _) in TASKS.items() if f == family),
        score_sample=score_sample if generative else score_sample_loglikelihood,
        expected_counts={stem: PUBLISHED_COUNTS[family.release][stem] for stem in BENCHMARKS},
        settings_of=rotated_settings_of if family.rotated else settings_of,
        item_id_fields=("id",),
        report=Report(
            headline=Headline.ACCURACY_MACRO,
            accuracy_over=AccuracyOver.ANSWERED if generative else AccuracyOver.ALL,
            component_groups={title: stems for title, stems in DIMENSIONS.values()},
            component_noun="benchmarks",
            notes=tuple(notes),
            shown_labels=shown_labels,
        ),
        pairing=RunPairing(item_key=item_key, per_model_settings=frozenset({"model_label", "model_label_derived"})),
        protocol=Protocol(
            reference=PUBLISHED_NUMBERS, separate_ranking=rotation.NOT_PUBLISHED if family.rotated else None
        ),
        beyond_accuracy=BeyondAccuracy(
            confidence_source=ConfidenceSource.STATED if generative else ConfidenceSource.CHOICE_PROBABILITIES,
            subgroup_of=kind_subgroup,
            paired_variant_of=language_variant,
            paired_reference=PAIRED_REFERENCE,
            answer_position=answer_position,
            rotation_of=rotation_of if family.rotated else None,
        ),
    )


REPORT_SPECS = tuple(_spec(family) for family in FAMILIES)
