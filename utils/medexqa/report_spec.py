"""What the report computes for MedExQA's two protocols (lm_eval_tasks/medexqa/README.md): one spec each.

Each logged sample is re-scored with the function its task's ``process_results`` calls
(:func:`.parsing.score_logit`, :func:`.parsing.score_generation`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from .. import calibration, rotation
from ..samples import logged_loglikelihoods, logged_reply
from ..scoring import (
    INVALID,
    BenchmarkSpec,
    BeyondAccuracy,
    ConfidenceSource,
    Headline,
    Protocol,
    Report,
    ScoredItem,
    ScoreSample,
    scored_item,
)
from .constants import GENERATION, LETTERS, LOGIT, PUBLISHED_COUNTS, PUBLISHED_NUMBERS, SPECIALTIES, specialty
from .parsing import EXTRACTION_STEPS, prompt_included_reading, score_generation, score_logit


def _component(doc: Mapping[str, Any]) -> str:
    return specialty(doc["specialty"]).code


# The published files have no id column: an item is its specialty's file (specialty and split) and its 1-based line.
ITEM_ID_FIELDS = ("specialty", "split", "row")

# The paper scores the test split with the options in their original order.
PAPER_SETTINGS = {"split": "test", "shuffle": False}


def settings_of(sample: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a logged doc was built with that can move its score: split and answer shuffling."""
    doc = sample["doc"]
    return {
        "split": doc["split"],
        # Docs of task version 1.0 have no "shuffle" field; their seed is -1 exactly when not shuffled.
        "shuffle": bool(doc.get("shuffle", doc["shuffle_seed"] != -1)),
        "shuffle_seed": doc["shuffle_seed"],
    }


def rotated_settings_of(sample: Mapping[str, Any]) -> dict[str, Any]:
    """A rotated task's settings: the doc's, and that its options were rotated (:mod:`..rotation`)."""
    return settings_of(sample) | {"rotated": rotation.ROTATION in sample["doc"]}


def _details(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A rotated doc's rotation and shown order (original letters), so its choice maps back; nothing otherwise."""
    found = rotation.details(doc)
    return found | {"permutation": doc["permutation"]} if found else {}


def score_logit_sample(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    doc = sample["doc"]
    loglikelihoods = logged_loglikelihoods(sample)
    score = score_logit(doc, loglikelihoods)
    return scored_item(
        task,
        sample,
        component=_component(doc),
        gold=doc["answer"],
        pred=score.pred,
        correct=score.correct,
        details=_details(doc),
        parse_step=score.step,
        invalid_reason=score.invalid_reason,
        forecast=calibration.from_loglikelihoods(loglikelihoods, LETTERS.index(doc["answer"])),
    )


def score_generation_sample(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    doc = sample["doc"]
    score = score_generation(doc, logged_reply(sample))
    extraction = score.extraction
    extras = {
        "answered": float(score.answered),
        "letter_from_option_text": float(extraction.from_option_text),
        "accuracy_if_prompt_included": float(prompt_included_reading(doc, score).letter == doc["answer"]),
    }
    extras |= {f"step_{name}": float(extraction.step == name) for name in EXTRACTION_STEPS}
    return scored_item(
        task,
        sample,
        component=_component(doc),
        gold=doc["answer"],
        pred=extraction.letter or INVALID,
        correct=score.correct,
        extras=extras,
        details=_details(doc),
        parse_step=extraction.step,
        invalid_reason=extraction.invalid_reason,
    )


def answer_position(item: ScoredItem) -> tuple[int, int | None] | None:
    """The gold and chosen letters' positions (A-D as shown: a shuffled doc's answer is its shown letter); None for
    a letter that is no option's."""
    if item.gold not in LETTERS or item.pred not in (*LETTERS, INVALID):
        return None
    return LETTERS.index(item.gold), None if item.pred == INVALID else LETTERS.index(item.pred)


def rotation_of(item: ScoredItem) -> rotation.Rotated | None:
    """A rotated item's question, rotation and the original letter chosen (its details' shown order maps the
    shown letter back); None without an item id or a valid record."""
    order = item.details.get("permutation")
    if item.item_id is None or not isinstance(order, str) or len(order) != len(LETTERS):
        return None
    if item.pred != INVALID and item.pred not in LETTERS:
        return None
    chosen = None if item.pred == INVALID else order[LETTERS.index(item.pred)]
    return rotation.read((item.task, item.item_id), item.details, chosen, bool(item.correct))


_COMMON_NOTES = (
    "accuracy_macro is the paper's number (MAvg): the unweighted mean of the five specialty accuracies.",
    "Reference numbers are the authors' leaderboard (percent / 100), zero-shot.",
    "Scores are the paper's only on the test split with the original option order (see the run's settings).",
)


def _spec(
    name: str,
    title: str,
    score: ScoreSample,
    protocol: str,
    notes: Sequence[str],
    beyond: BeyondAccuracy,
    rotated: bool = False,
) -> BenchmarkSpec:
    """One protocol's section: its tasks (one per specialty) scored as the paper scores that protocol; ``rotated``:
    every item asked once per rotation of its options (:mod:`..rotation`), never the published protocol."""
    rotations = len(LETTERS) if rotated else 1
    return BenchmarkSpec(
        name=name,
        title=title,
        task_names=frozenset(f"{name}_{code.lower()}" for code in SPECIALTIES),
        score_sample=score,
        expected_counts={code: count * rotations for code, count in PUBLISHED_COUNTS["test"].items()},
        settings_of=rotated_settings_of if rotated else settings_of,
        item_id_fields=ITEM_ID_FIELDS,
        report=Report(
            headline=Headline.ACCURACY_MACRO,
            labels=LETTERS,
            component_noun="specialties",
            notes=(*_COMMON_NOTES, *notes),
        ),
        protocol=Protocol(
            reference=PUBLISHED_NUMBERS[protocol],
            settings=PAPER_SETTINGS,
            separate_ranking=rotation.NOT_PUBLISHED if rotated else None,
        ),
        beyond_accuracy=replace(beyond, rotation_of=rotation_of) if rotated else beyond,
    )


_LOGIT_NOTES = ("The answer is the letter with the highest log-likelihood after 'Answer:'.",)
_LOGIT_BEYOND = BeyondAccuracy(confidence_source=ConfidenceSource.CHOICE_PROBABILITIES, answer_position=answer_position)
_ROTATED_NOTE = (
    "Rotated options: every item is asked once per cyclic rotation of its four options (four items per "
    "question: coverage counts items); the rotation part gives accuracy per rotation and the consistency rate.",
)
_GENERATION_NOTES = (
    "Letters are read from the reply only (think blocks removed) with the authors' cascade; INVALID "
    "(unclosed think block, empty reply, or nothing to match) is counted wrong.",
    "answered is the share of replies with a usable letter (not INVALID).",
    "step_* rates say which extraction step produced each letter; accuracy_if_prompt_included is what "
    "the authors' script would score, since it extracted from the prompt followed by the reply.",
    "Explanation scores: python -m lm_eval_tasks medexqa-explanations OUTPUT_PATH.",
)

REPORT_SPECS = (
    _spec("medexqa_logit", "MedExQA, log-likelihood protocol", score_logit_sample, LOGIT, _LOGIT_NOTES, _LOGIT_BEYOND),
    _spec(
        "medexqa",
        "MedExQA, generation protocol",
        score_generation_sample,
        GENERATION,
        _GENERATION_NOTES,
        BeyondAccuracy(answer_position=answer_position),
    ),
    _spec(
        "medexqa_logit_rotated",
        "MedExQA, log-likelihood protocol, rotated options",
        score_logit_sample,
        LOGIT,
        (*_LOGIT_NOTES, *_ROTATED_NOTE),
        _LOGIT_BEYOND,
        rotated=True,
    ),
    _spec(
        "medexqa_rotated",
        "MedExQA, generation protocol, rotated options",
        score_generation_sample,
        GENERATION,
        (*_GENERATION_NOTES[:-1], *_ROTATED_NOTE),
        BeyondAccuracy(answer_position=answer_position),
        rotated=True,
    ),
)
