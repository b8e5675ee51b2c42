"""Answers and scores: the tie rule of the log-likelihood tasks, the generative reply parser, macro-F1.

Each protocol has ONE scoring function, called by its lm-eval ``process_results`` hook and by the report
spec alike (:func:`score_choice`, :func:`score_generation`). Rules in lm_eval_tasks/pubmedqa_atlas/README.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import stats
from ..samples import choose_by_loglikelihood
from ..scoring import INVALID
from ..text import strip_think
from .constants import LABELS


@dataclass(frozen=True)
class Verdict:
    """One scored item: the gold answer, the prediction (a label or INVALID) and per-item rates."""

    gold: str
    pred: str
    extras: Mapping[str, float] = field(default_factory=dict)
    step: str = ""  # the parse step that decided (items_<section>.jsonl)
    invalid_reason: str | None = None  # why pred is INVALID

    @property
    def correct(self) -> float:
        return float(self.pred == self.gold)


def score_choice(gold: str, loglikelihoods: Sequence[float]) -> Verdict:
    """A log-likelihood item: yes / no / maybe scores in that order. The highest wins; an exact tie (common
    in bf16) goes to the earliest of yes, no, maybe; a non-finite score means no answer (INVALID, see
    samples.choose_by_loglikelihood)."""
    choice = choose_by_loglikelihood(loglikelihoods, len(LABELS))
    pred = INVALID if choice.index is None else LABELS[choice.index]
    step = "" if choice.index is None else choice.step
    return Verdict(gold, pred, {"tied_top_choice": float(choice.tied)}, step, choice.invalid_reason)


# Only ASCII letters are case-folded: Python's IGNORECASE would also read "yeſ" (long s) as "yes" and
# return a prediction that is none of the labels.
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
# Both patterns are linear: the leading one is anchored, and every try of the stated one starts at the
# word "answer" and scans only the whitespace / punctuation after it, which holds no other "answer".
_LEADING_ANSWER = re.compile(r"^\W*(?:(?:final\s+)?answer\W*(?:is\W*)?)?(yes|no|maybe)\b")
_STATED_ANSWER = re.compile(r"\banswer\s*(?:is|would be|:)\W*(yes|no|maybe)\b")


# Parse steps of a generated reply, and why none read an answer.
LEADING_ANSWER, STATED_ANSWER = "leading_answer", "stated_answer"
UNCLOSED_THINK = "a <think> block is never closed (no answer after the reasoning)"
NO_ANSWER = "no yes/no/maybe at the start of the reply, nor after 'answer is', 'answer would be' or 'answer:'"


@dataclass(frozen=True)
class Reading:
    """What a reply answers (None: nothing), the step that read it, or why nothing could be read."""

    answer: str | None
    step: str = ""
    invalid_reason: str | None = None


def read_answer(reply: str) -> Reading:
    """yes / no / maybe from a generated reply, with the step that read it; never raises, linear in the reply's
    length.

    After ``<think>`` blocks are removed (an unclosed one means no answer), the reply must either
    start with the answer word (punctuation, markdown and an "Answer:" label may precede it) or
    state it as "answer is X" / "answer would be X" / "answer: X" (the first such statement counts).
    """
    text = strip_think(reply)
    if text is None:
        return Reading(None, invalid_reason=UNCLOSED_THINK)
    text = text.translate(_ASCII_LOWER)
    match = _LEADING_ANSWER.match(text)
    if match:
        return Reading(match.group(1), LEADING_ANSWER)
    match = _STATED_ANSWER.search(text)
    if match:
        return Reading(match.group(1), STATED_ANSWER)
    return Reading(None, invalid_reason=NO_ANSWER)


def parse_answer(reply: str) -> str | None:
    """yes / no / maybe from a generated reply, else None (:func:`read_answer`'s answer)."""
    return read_answer(reply).answer


def score_generation(gold: str, reply: str) -> Verdict:
    """A generated reply: an unreadable one is INVALID, counted wrong and kept in every denominator."""
    reading = read_answer(reply)
    return Verdict(
        gold,
        reading.answer or INVALID,
        {"parseable": float(reading.answer is not None)},
        reading.step,
        reading.invalid_reason,
    )


def macro_f1_value(gold: Sequence[str], pred: Sequence[str]) -> float:
    """Macro-F1 over yes, no and maybe (a class never predicted has F1 0; INVALID is simply wrong)."""
    return float(stats.macro_f1_of(gold, pred, LABELS)(np.ones(len(gold))))
