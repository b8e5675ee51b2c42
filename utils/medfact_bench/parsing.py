"""Reading a MedFact-Bench reply: the score, its label, and whether the reply has the requested format.

The protocol (lm_eval_tasks/medfact_bench/README.md), as the reference code reads a reply: the
first ``<score>...</score>`` of the whole reply, closing tag required, holds an integer -2..2
(1, 2 -> SUPPORT; 0 -> NEI; -1, -2 -> CONTRADICT); anything else is INVALID, counted wrong, and kept
in every denominator. :func:`score_reply` is the one scoring function: the lm-eval hook and the
report both call it, so a reply is read once and scored the same everywhere.

Every function here gives a verdict for any string, in time linear in its length: tags are found
with ``str.find``/``str.count`` and a score's value is read from its last digit, never with ``int``
(which refuses more than 4,300 digits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..scoring import INVALID

OPEN_SCORE, CLOSE_SCORE = "<score>", "</score>"
OPEN_THINK, CLOSE_THINK = "<think>", "</think>"
# Stripped score content: an optional sign, any leading zeros, one ASCII digit 0-2.
_SCORE_CONTENT = re.compile(r"[+-]?0*[0-2]")
_LABEL_OF_SCORE = {2: "SUPPORT", 1: "SUPPORT", 0: "NEI", -1: "CONTRADICT", -2: "CONTRADICT"}


def _score_value(content: str) -> int | None:
    """The integer -2..2 that ``content`` (whitespace aside) spells in ASCII digits, else None."""
    content = content.strip()
    if _SCORE_CONTENT.fullmatch(content) is None:
        return None
    magnitude = ord(content[-1]) - ord("0")
    return -magnitude if content[0] == "-" else magnitude


def _first_score_block(reply: str) -> tuple[int, int] | None:
    """Start of the content and position of the closing tag of the first ``<score>...</score>``.

    The first ``<score>`` opens it and the first ``</score>`` after it closes it; a reply with no
    closing tag after its first ``<score>`` has no score block (a later ``<score>`` cannot have one either).
    """
    opening = reply.find(OPEN_SCORE)
    if opening < 0:
        return None
    start = opening + len(OPEN_SCORE)
    closing = reply.find(CLOSE_SCORE, start)
    return None if closing < 0 else (start, closing)


def parse_score(reply: str) -> int | None:
    """The integer in the reply's first ``<score>...</score>`` block, or None when it is not -2..2."""
    block = _first_score_block(reply)
    return None if block is None else _score_value(reply[block[0] : block[1]])


def _has_strict_layout(reply: str) -> bool:
    """Exactly one of each tag, in the order think, /think, score, /score, with only whitespace outside the blocks."""
    tags = (OPEN_THINK, CLOSE_THINK, OPEN_SCORE, CLOSE_SCORE)
    if any(reply.count(tag) != 1 for tag in tags):
        return False
    think, think_end, score, score_end = (reply.find(tag) for tag in tags)
    if not think < think_end < score < score_end:
        return False
    outside = (reply[:think], reply[think_end + len(CLOSE_THINK) : score], reply[score_end + len(CLOSE_SCORE) :])
    return all(not part.strip() for part in outside)


def is_strict_format(reply: str) -> bool:
    """The whole reply is exactly one think block then one score block holding a valid score, whitespace aside."""
    return _has_strict_layout(reply) and parse_score(reply) is not None


def score_to_label(score: int | None) -> str:
    """The label of a score -2..2; INVALID for None or anything else."""
    return _LABEL_OF_SCORE.get(score, INVALID) if type(score) is int else INVALID


# The parse step of every MedFact-Bench reply, and why a reply has no score.
SCORE_BLOCK = "first_score_block"
NO_OPEN_TAG = "no <score> tag"
NO_CLOSE_TAG = "no </score> after the first <score> (the closing tag is required)"
_SHOWN_CONTENT = 40  # characters of a bad score's content (whitespace aside) quoted whole in its reason


def _invalid_reason(reply: str) -> str | None:
    """Why the reply's first score block gives no score (None: it gives one).

    The content is quoted only whole and exactly as written: a cut or escaped quote of a credential would
    slip past the masking of the written texts (which knows the run's credentials as they are written).
    """
    block = _first_score_block(reply)
    if block is None:
        return NO_OPEN_TAG if reply.find(OPEN_SCORE) < 0 else NO_CLOSE_TAG
    content = reply[block[0] : block[1]]
    if _score_value(content) is not None:
        return None
    content = content.strip()
    shown = repr(content)
    if len(content) > _SHOWN_CONTENT or shown[1:-1] != content:
        shown = f"{len(content):,} characters"
    return f"the first <score>...</score> holds {shown}, not an integer -2..2"


@dataclass(frozen=True)
class ScoredReply:
    """What one reply says: its score (None: INVALID and why) and whether it has the requested format."""

    score: int | None
    strict_format: bool
    invalid_reason: str | None = None

    @property
    def label(self) -> str:
        return score_to_label(self.score)

    def rates(self) -> dict[str, float]:
        """The per-reply rates every MedFact-Bench task reports next to accuracy."""
        return {"parseable_score": float(self.score is not None), "strict_format": float(self.strict_format)}


def score_reply(reply: str) -> ScoredReply:
    """The verdict on one whole reply: its first score is read once, and the layout checked once."""
    score = parse_score(reply)
    return ScoredReply(
        score=score,
        strict_format=score is not None and _has_strict_layout(reply),
        invalid_reason=None if score is not None else _invalid_reason(reply),
    )
