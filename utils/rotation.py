"""Answer order, measured: every item asked once per cyclic rotation of its options.

The protocol (no lm-eval import): :func:`rotated` turns an item's option order (shown position -> original
option) by ``r`` places, so over rotations ``0 .. n-1`` each original option, the gold one included, is shown at
every position once. A rotated doc carries :func:`doc_fields` (its rotation and the number of rotations of its
question); a benchmark maps the chosen shown option back to the original one it had before rotating.

The numbers (report.json's ``rotation``), from the scored items of a rotated section, once, over the questions
whose every rotation was scored (an unanswered item counts wrong and as an answer of its own, "no answer"):

- accuracy per rotation, each with its exact (Clopper-Pearson) interval over the questions;
- the consistency rate: the share of questions answered right in every rotation;
- the share of questions whose answer moves with the order: the original option chosen is not the same in every
  rotation.

Each question is one Bernoulli outcome, so each share takes the Clopper-Pearson interval over the questions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from . import stats

T = TypeVar("T")

# A rotated doc's fields (and a rotated item's details): its rotation and how many its question has.
ROTATION, ROTATIONS = "rotation", "rotations"
PROTOCOL = (
    "every question asked once per cyclic rotation of its options (rotation r shows original option (p + r) mod n "
    "at position p), so the gold answer visits every position"
)
# Why a rotated section is never compared with the published numbers (its Protocol.separate_ranking).
NOT_PUBLISHED = "rotated options (every question asked once per rotation of its options) are not the paper's protocol"
NO_ANSWER = "no answer"


def rotated(order: Sequence[T], rotation: int) -> list[T]:
    """``order`` (shown position -> option) turned by ``rotation`` places: position p shows ``order[(p + r) % n]``."""
    n = len(order)
    return [order[(position + rotation) % n] for position in range(n)] if n else []


def doc_fields(rotation: int, rotations: int) -> dict[str, int]:
    """What a rotated doc carries about its rotation."""
    return {ROTATION: rotation, ROTATIONS: rotations}


def details(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A rotated doc's rotation fields, for its scored item's details; empty for a doc that was not rotated."""
    return {key: doc[key] for key in (ROTATION, ROTATIONS) if key in doc}


@dataclass(frozen=True)
class Rotated:
    """One scored item of a rotated question: the question, which rotation, out of how many, the original option
    chosen (None: unanswered) and whether it was right."""

    question: tuple[str, ...]
    rotation: int
    rotations: int
    chosen: str | None
    correct: bool


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10_000 else None


def read(
    question: tuple[str, ...], item_details: Mapping[str, Any], chosen: str | None, correct: bool
) -> Rotated | None:
    """The item's :class:`Rotated` from its details; None where they hold no valid rotation (a hostile or
    unrotated record)."""
    rotation, rotations = _count(item_details.get(ROTATION)), _count(item_details.get(ROTATIONS))
    if rotation is None or rotations is None or rotation >= rotations:
        return None
    return Rotated(question, rotation, rotations, chosen, bool(correct))


def summary(answers: Sequence[Rotated | None]) -> dict[str, Any]:
    """A rotated section's numbers (report.json's ``rotation``); ``answers``: one per scored item, None where
    its rotation is unknown."""
    by_question: dict[tuple[str, ...], dict[int, Rotated]] = {}
    for answer in answers:
        if answer is None:
            continue
        seen = by_question.setdefault(answer.question, {})
        if answer.rotation in seen:
            raise ValueError(f"question {'/'.join(answer.question)} scored twice in rotation {answer.rotation}")
        seen[answer.rotation] = answer
    complete = {
        question: [rotations[r] for r in sorted(rotations)]
        for question, rotations in by_question.items()
        if all(a.rotations == len(rotations) for a in rotations.values())
    }
    n = len(complete)
    out: dict[str, Any] = {
        "protocol": PROTOCOL,
        "over": "the questions whose every rotation was scored; an unanswered item counts wrong",
        "n_items": len(answers),
        "unknown_rotation": sum(answer is None for answer in answers),
        "n_questions": n,
        "incomplete_questions": len(by_question) - n,
        "accuracy_by_rotation": {},
        "consistent": None,
        "consistency": None,
        "moved": None,
        "answer_moves": None,
    }
    if not n:
        return out | {"reason": "no question was scored in every one of its rotations"}
    width = max(len(answers) for answers in complete.values())
    for r in range(width):
        outcomes = [answers[r].correct for answers in complete.values() if len(answers) > r]
        out["accuracy_by_rotation"][str(r)] = {
            "n": len(outcomes),
            "accuracy": stats.exact_proportion(sum(outcomes), len(outcomes)).as_dict(),
        }
    consistent = sum(all(a.correct for a in answers) for answers in complete.values())
    moved = sum(len({a.chosen for a in answers}) > 1 for answers in complete.values())
    return out | {
        "consistent": consistent,
        "consistency": stats.exact_proportion(consistent, n).as_dict(),
        "moved": moved,
        "answer_moves": stats.exact_proportion(moved, n).as_dict(),
    }


def format_line(numbers: Any) -> str | None:
    """The rotation's numbers in one line (console, report.md, report.html); None for a section without them."""
    if not isinstance(numbers, Mapping) or "n_questions" not in numbers:
        return None
    if numbers.get("consistency") is None:
        return f"rotated options: not computable: {numbers.get('reason')}"
    return (
        f"rotated options, {numbers['n_questions']} questions: consistency (right in every rotation) "
        f"{stats.format_estimate(numbers['consistency'])}; answer moves with the order "
        f"{stats.format_estimate(numbers['answer_moves'])}"
    )
