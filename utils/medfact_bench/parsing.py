"""Reading a MedFact-Bench reply: the score, its label, and whether the reply has the requested format.

The protocol (lm_eval_tasks/medfact_bench/README.md): the first ``<score>...</score>`` of the reply
holds an integer -2..2 (1, 2 -> SUPPORT; 0 -> NEI; -1, -2 -> CONTRADICT); anything else is INVALID,
counted wrong, and kept in every denominator. :func:`score_reply` is the one scoring function: the
lm-eval hook and the report both call it, so a reply is read once and scored the same everywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..scoring import INVALID

# The first <score> opens the answer; it ends at </score>, or at the end of the reply when a
# stop string cut the closing tag off.
_FIRST_SCORE = re.compile(r"<score>(.*?)(?:</score>|\Z)", re.DOTALL)
_INTEGER = re.compile(r"[+-]?[0-9]+")
_STRICT = re.compile(r"\s*<think>(.*?)</think>\s*<score>(.*?)(?:</score>)?\s*", re.DOTALL)
_TAGS = ("<think>", "</think>", "<score>")


def _score_value(content: str) -> int | None:
    content = content.strip()
    if not _INTEGER.fullmatch(content):
        return None
    value = int(content)
    return value if -2 <= value <= 2 else None


def parse_score(reply: str) -> int | None:
    """The integer in the reply's first ``<score>`` block, or None when it is not -2..2."""
    match = _FIRST_SCORE.search(reply)
    return _score_value(match.group(1)) if match else None


_LABEL_OF_SCORE = {2: "SUPPORT", 1: "SUPPORT", 0: "NEI", -1: "CONTRADICT", -2: "CONTRADICT"}


def score_to_label(score: int | None) -> str:
    """The label of a score -2..2; INVALID for None or anything else."""
    return _LABEL_OF_SCORE.get(score, INVALID) if type(score) is int else INVALID


def is_strict_format(reply: str) -> bool:
    """Exactly one think block then one score block holding a valid score, whitespace aside.

    A missing final ``</score>`` is accepted at the very end of the reply: the task stops
    generation at that string and backends strip it.
    """
    if any(reply.count(tag) != 1 for tag in _TAGS) or reply.count("</score>") > 1:
        return False
    match = _STRICT.fullmatch(reply)
    return match is not None and _score_value(match.group(2)) is not None


@dataclass(frozen=True)
class ScoredReply:
    """What one reply says: its score (None: INVALID) and whether it has the requested format."""

    score: int | None
    strict_format: bool

    @property
    def label(self) -> str:
        return score_to_label(self.score)

    def rates(self) -> dict[str, float]:
        """The per-reply rates every MedFact-Bench task reports next to accuracy."""
        return {"parseable_score": float(self.score is not None), "strict_format": float(self.strict_format)}


def score_reply(reply: str) -> ScoredReply:
    return ScoredReply(score=parse_score(reply), strict_format=is_strict_format(reply))
