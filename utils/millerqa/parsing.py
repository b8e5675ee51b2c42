"""Reading a reply: the authors' parse cascade, and the one scoring function of each protocol.

:func:`score_reply` scores a generated reply (the paper's protocol and the choice-only baseline) and
:func:`score_loglikelihoods` the log-likelihood variant; ``tasks.process_results*`` and the report spec
both call them. The cascade is the authors' (lm_eval_tasks/millerqa/README.md, "Protocol"): strict
JSON, JSON with escaped control characters, a fenced block, first to last brace, the last object
holding ``selected_answer``, then regex fallbacks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..scoring import first_argmax
from ..text import strip_think
from .constants import LETTERS

_FENCE = re.compile(r"```(?:json)?\s*([\s\S]*?)```", re.IGNORECASE)
_ANSWER_KEY = re.compile(r'"selected_answer"\s*:\s*"([A-Za-z])"')
_STANDALONE_CAPITAL = re.compile(r"\b([A-Z])\b")
_CONFIDENCE_KEY = re.compile(r'"confidence"\s*:\s*(\d+)')
_EXPLANATION_KEY = re.compile(r'"explanation"\s*:\s*"([^"]*)"', re.DOTALL)
_LEADING_LETTER = re.compile(r"^([A-Za-z])[.):\s]")
_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# How the answer object was found, in cascade order; the regex steps are the authors' parse_failed.
JSON_METHODS = ("json", "json_escaped", "fenced", "braces", "last_object")
REGEX_METHODS = ("regex_key", "regex_letter")

# ----------------------------------------------------------------------------- JSON


def escape_control_characters(text: str) -> str:
    """Escape raw newlines, CRs and tabs that sit inside JSON strings (some models emit them)."""
    out, in_string, escaped = [], False, False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            in_string = not in_string
        elif in_string and char in _CONTROL_ESCAPES:
            out.append(_CONTROL_ESCAPES[char])
            continue
        out.append(char)
    return "".join(out)


def _json_object(text: str) -> tuple[dict | None, bool]:
    """(object, escaping was needed) for a text that is one JSON object, strictly or once escaped."""
    text = text.strip()
    for escaped, candidate in ((False, text), (True, escape_control_characters(text))):
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value, escaped
    return None, False


def _last_answer_object(text: str) -> dict | None:
    """Scanning backwards from the last '{', the first object that decodes and has ``selected_answer``."""
    decoder = json.JSONDecoder()
    for candidate in (text, escape_control_characters(text)):
        start = candidate.rfind("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                value = None
            if isinstance(value, dict) and "selected_answer" in value:
                return value
            start = candidate.rfind("{", 0, start)
    return None


# ----------------------------------------------------------------------------- the cascade


@dataclass(frozen=True)
class ParsedReply:
    fields: Mapping[str, Any]  # the answer object, or what the regex fallback found
    method: str  # one of JSON_METHODS + REGEX_METHODS, "none", or "unclosed_think"


def parse_reply(reply: str) -> ParsedReply:
    """The authors' cascade, first success wins; ``<think>`` blocks are removed first.

    An unclosed think block means the model never reached its answer: nothing is read.
    """
    text = strip_think(reply)
    if text is None:
        return ParsedReply({}, "unclosed_think")
    found, escaped = _json_object(text)
    if found is not None:
        return ParsedReply(found, "json_escaped" if escaped else "json")
    fence = _FENCE.search(text)
    if fence:
        found, _ = _json_object(fence.group(1))
        if found is not None:
            return ParsedReply(found, "fenced")
    first, last = text.find("{"), text.rfind("}")
    if first != -1 and last > first:
        found, _ = _json_object(text[first : last + 1])
        if found is not None:
            return ParsedReply(found, "braces")
    found = _last_answer_object(text)
    if found is not None:
        return ParsedReply(found, "last_object")
    # Regex fallback: the authors flag it parse_failed but still score a letter found here.
    key = _ANSWER_KEY.search(text)
    letter = key.group(1).upper() if key else None
    method = "regex_key"
    if letter is None:
        capital = _STANDALONE_CAPITAL.search(text)  # a prose "I" or "A" counts, as upstream
        letter, method = (capital.group(1), "regex_letter") if capital else (None, "none")
    confidence = _CONFIDENCE_KEY.search(text)
    explanation = _EXPLANATION_KEY.search(text)
    return ParsedReply(
        {
            "selected_answer": letter,
            "confidence": int(confidence.group(1)) if confidence else None,
            "explanation": explanation.group(1) if explanation else None,
        },
        method,
    )


def selected_letter(value: Any) -> str | None:
    """The answer letter as the authors read it: "D. Legal ..." / "D) ..." / "d" -> "D"; non-strings -> None."""
    if not isinstance(value, str):
        return None
    stripped = value.strip()
    leading = _LEADING_LETTER.match(stripped)
    return (leading.group(1) if leading else stripped).upper()


def original_index(letter: str | None, perm: Sequence[int]) -> int | None:
    """The original option index of a shuffled-position letter; None unless exactly one letter in range."""
    if letter is None:
        return None
    letter = letter.strip().upper()
    if len(letter) != 1 or not "A" <= letter <= "Z":
        return None
    position = ord(letter) - ord("A")
    return perm[position] if position < len(perm) else None


def clamp_confidence(value: Any) -> int | None:
    """``int(value)`` clamped to 0-100, None where ``int()`` fails."""
    try:
        return max(0, min(100, int(value)))
    except (TypeError, ValueError, OverflowError):
        return None


# ----------------------------------------------------------------------------- scoring, one function per protocol


@dataclass(frozen=True)
class Answer:
    """One reply scored against one shuffled doc (the authors' result record, in brief)."""

    letter: str | None
    original_index: int | None
    is_correct: bool | None  # None: unscored (no usable letter)
    confidence: int | None
    explanation: str | None
    method: str

    @property
    def answered(self) -> bool:
        return self.is_correct is not None

    def record(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "benchmark": doc["benchmark"],
            "release": doc["release"],
            "id": doc["id"],
            "model_label": doc["model_label"],
            "permutation": list(doc["permutation"]),
            "correct_letter": doc["correct_letter"],
            "selected_letter": self.letter,
            "selected_original_index": self.original_index,
            "is_correct": self.is_correct,
            "confidence": self.confidence,
            "explanation": self.explanation,
            "parse_method": self.method,
            "parse_failed": self.method not in JSON_METHODS,
        }


def score_reply(doc: Mapping[str, Any], reply: str) -> Answer:
    """The generative protocols (the paper's and the choice-only baseline): one reply, parsed once."""
    parsed = parse_reply(reply)
    letter = selected_letter(parsed.fields.get("selected_answer"))
    index = original_index(letter, doc["permutation"])
    explanation = parsed.fields.get("explanation")
    return Answer(
        letter=letter,
        original_index=index,
        is_correct=None if index is None else index == doc["target"],
        confidence=clamp_confidence(parsed.fields.get("confidence")),
        explanation=(explanation.strip() or None) if isinstance(explanation, str) else None,
        method=parsed.method,
    )


@dataclass(frozen=True)
class Choice:
    """The log-likelihood variant's answer: the most likely letter (the first on a tie)."""

    position: int
    original_index: int
    is_correct: bool

    def record(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "benchmark": doc["benchmark"],
            "release": doc["release"],
            "id": doc["id"],
            "model_label": doc["model_label"],
            "permutation": list(doc["permutation"]),
            "correct_letter": doc["correct_letter"],
            "selected_letter": LETTERS[self.position],
            "selected_original_index": self.original_index,
            "is_correct": self.is_correct,
        }


def score_loglikelihoods(doc: Mapping[str, Any], loglikelihoods: Sequence[float]) -> Choice:
    """The log-likelihood protocol: one log-likelihood per shuffled letter."""
    position = first_argmax(loglikelihoods)
    chosen = doc["permutation"][position]
    return Choice(position=position, original_index=chosen, is_correct=chosen == doc["target"])
