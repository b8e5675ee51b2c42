"""Reading a reply: the authors' parse cascade, and the one scoring function of each protocol.

:func:`score_reply` scores a generated reply (the paper's protocol and the choice-only baseline) and
:func:`score_loglikelihoods` the log-likelihood variant; ``tasks.process_results*`` and the report spec
both call them. The cascade is the authors' (lm_eval_tasks/millerqa/README.md, "Protocol"): strict
JSON, JSON with escaped control characters, a fenced block, first to last brace, the last object
holding ``selected_answer``, then regex fallbacks.

Any string gets a verdict, in time linear in its length, never an exception. Where the authors call
``json`` directly this module first finds, once per position and with memoisation, where a JSON value
would end (:class:`_JsonText`), then decodes only spans known to be valid:

- trying ``raw_decode`` at every ``{`` from the back rescans the text each time, and every
  ``JSONDecodeError`` counts the lines before it: quadratic;
- a value nested deeper than :data:`MAX_JSON_DEPTH` is treated as not JSON (``json`` raises
  RecursionError at about 1,000 levels, fewer on a deep call stack);
- an integer of more than 4,300 digits makes ``json`` raise ValueError (Python's int limit); here a
  long one reads as a large number, which the 0-100 confidence clamp then bounds;
- the authors' fence regex backtracks quadratically over the blanks after an unclosed fence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import rotation
from ..samples import choose_by_loglikelihood
from ..text import strip_think
from .constants import LETTERS

# Deeper JSON is not read as JSON: far beyond any answer object, safely below Python's recursion limit.
MAX_JSON_DEPTH = 100
# Digits an integer literal is read with; longer ones are far outside 0-100 and read as 10**_INT_DIGITS.
_INT_DIGITS = 20
# Python's default limit for int() of a string (sys.int_info.default_max_str_digits); the authors'
# ``int(confidence)`` gives None above it, and so does this module, whatever the interpreter's setting.
_MAX_INT_TEXT = 4300

_ANSWER_KEY = re.compile(r'"selected_answer"\s*:\s*"([A-Za-z])"')
_STANDALONE_CAPITAL = re.compile(r"\b([A-Z])\b")
# ASCII digits only, as JSON writes numbers: re's \d takes any script's digits ("３", "٣"), which int() reads.
_CONFIDENCE_KEY = re.compile(r'"confidence"\s*:\s*([0-9]+)')
_EXPLANATION_KEY = re.compile(r'"explanation"\s*:\s*"([^"]*)"', re.DOTALL)
_LEADING_LETTER = re.compile(r"^([A-Za-z])[.):\s]")
_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPE_TOKEN = re.compile(r'\\[\s\S]|["\n\r\t]')  # a backslash pair, a quote, or a control character to escape
_FENCE_MARK = "```"
_FENCE_LANGUAGE = re.compile(r"(?:json)?\s*", re.IGNORECASE)  # what the authors' fence regex skips after ```

# How the answer object was found, in cascade order; the regex steps are the authors' parse_failed.
JSON_METHODS = ("json", "json_escaped", "fenced", "braces", "last_object")

# ----------------------------------------------------------------------------- JSON, in linear time

_WHITESPACE = re.compile(r"[ \t\n\r]*")  # json's whitespace
_OBJECT_START = re.compile(r'\{(?=[ \t\n\r]*["}])')
# An object member's key without escapes or control characters, and the colon after it.
_PLAIN_MEMBER = re.compile(r'"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*')
_MEMBER_COLON = re.compile(r"[ \t\n\r]*:[ \t\n\r]*")
# What may follow a value inside a container: a comma (and the blanks after it) or a closing bracket.
_SEPARATOR = re.compile(r"[ \t\n\r]*([,}\]])[ \t\n\r]*")
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|null|true|false|NaN|Infinity|-Infinity")
# A JSON string as json reads it (strict): no raw control characters, only valid escapes. One character
# per repetition keeps a failing match linear (no nested quantifier to backtrack through).
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')


def _bounded_int(literal: str) -> int:
    """``int(literal)`` for a decimal integer literal, reading one of more than 20 digits as +-10**20."""
    negative = literal.startswith("-")
    digits = (literal[1:] if negative else literal).lstrip("0") or "0"
    value = int(digits) if len(digits) <= _INT_DIGITS else 10**_INT_DIGITS
    return -value if negative else value


_DECODER = json.JSONDecoder(parse_int=_bounded_int)


@dataclass(frozen=True)
class _Container:
    end: int  # one past the closing bracket
    depth: int  # 1 for an object or array without nested containers
    has_answer_key: bool  # an object with a top-level "selected_answer" key


class _JsonText:
    """One candidate text and, per position, the object or array ``json`` would decode there.

    ``container_at(i)`` agrees with ``json.JSONDecoder().raw_decode(text, i)`` on whether a container
    starting at ``i`` decodes and where it ends. Each container's result is memoised, so asking at
    every position costs time linear in the text: a container is parsed once, and a character lies
    outside strings at one container's own level only (a string read from one opening quote ends at
    the next quote not escaped, whichever container reads it).
    """

    def __init__(self, text: str):
        self.text = text
        self._containers: dict[int, _Container | None] = {}

    def container_at(self, start: int) -> _Container | None:
        """The object or array that starts at ``start``, or None (also when ``text[start]`` opens neither)."""
        if start in self._containers:
            return self._containers[start]
        text, length = self.text, len(self.text)
        # Open containers, innermost last: [start, closing bracket, depth so far, has an answer key].
        stack: list[list[Any]] = []
        position, expect = start, "value"
        child_depth = 0  # depth of the value that just ended
        while True:
            if expect == "value":
                char = text[position] if position < length else ""
                if char == "{" or char == "[":
                    known = self._containers.get(position, ...)
                    if known is None:
                        break
                    if known is not ...:
                        position, child_depth, expect = known.end, known.depth, "after"
                        continue
                    stack.append([position, "}" if char == "{" else "]", 1, False])
                    position = _WHITESPACE.match(text, position + 1).end()
                    if text.startswith(stack[-1][1], position):  # empty: the separator check closes it
                        child_depth, expect = 0, "after"
                    else:
                        expect = "key" if char == "{" else "value"
                    continue
                scalar = (_STRING if char == '"' else _SCALAR).match(text, position)
                if not scalar:
                    break
                position, child_depth, expect = scalar.end(), 0, "after"
            elif expect == "key":
                member = _PLAIN_MEMBER.match(text, position)
                if member:
                    stack[-1][3] = stack[-1][3] or member.group(1) == "selected_answer"
                else:  # a key with escapes (or no valid key at all)
                    key = _STRING.match(text, position)
                    if not key:
                        break
                    stack[-1][3] = stack[-1][3] or json.decoder.scanstring(text, position + 1)[0] == "selected_answer"
                    member = _MEMBER_COLON.match(text, key.end())
                    if not member:
                        break
                position, expect = member.end(), "value"
            else:  # "after" a value (or the opening of an empty container)
                if not stack:
                    break  # a scalar where a container was asked for
                top = stack[-1]
                top[2] = max(top[2], child_depth + 1)
                separator = _SEPARATOR.match(text, position)
                if not separator:
                    break
                if separator.group(1) == ",":
                    position, expect = separator.end(), "key" if top[1] == "}" else "value"
                    continue
                if separator.group(1) != top[1]:
                    break
                stack.pop()
                found = _Container(separator.end(1), top[2], top[3])
                self._containers[top[0]] = found
                if not stack:
                    return found
                position, child_depth, expect = found.end, found.depth, "after"
        for frame in stack:  # a failure inside a container fails every container around it
            self._containers[frame[0]] = None
        return None

    def decode(self, start: int) -> Any:
        """The value of a container that :meth:`container_at` found valid and no deeper than MAX_JSON_DEPTH."""
        return _DECODER.raw_decode(self.text, start)[0]


class _JsonTexts(dict):
    """The candidate texts of one reply, each parsed once (the strict and last-object steps often share one)."""

    def __missing__(self, text: str) -> _JsonText:
        parsed = self[text] = _JsonText(text)
        return parsed


def _with_escaped(text: str) -> list[tuple[bool, str]]:
    """(escaped, candidate): the text, then its escaped form when escaping changed anything (else the retry is moot)."""
    escaped = escape_control_characters(text)
    return [(False, text)] if escaped is text else [(False, text), (True, escaped)]


def _json_object(text: str, texts: _JsonTexts) -> tuple[dict | None, bool]:
    """(object, escaping was needed) for a text that is one JSON object, strictly or once escaped."""
    text = text.strip()
    for escaped, candidate in _with_escaped(text):
        parsed = texts[candidate]
        found = parsed.container_at(0) if candidate.startswith("{") else None
        if found is not None and found.end == len(candidate) and found.depth <= MAX_JSON_DEPTH:
            return parsed.decode(0), escaped
    return None, False


def _last_answer_object(text: str, texts: _JsonTexts) -> dict | None:
    """Scanning backwards from the last '{', the first object that decodes and has ``selected_answer``."""
    for _, candidate in _with_escaped(text):
        parsed = texts[candidate]
        # Only a '{' followed by a key or '}' can open an object; the others fail at once.
        for start in reversed([match.start() for match in _OBJECT_START.finditer(candidate)]):
            found = parsed.container_at(start)
            if found is not None and found.has_answer_key and found.depth <= MAX_JSON_DEPTH:
                return parsed.decode(start)
    return None


def escape_control_characters(text: str) -> str:
    """Escape raw newlines, CRs and tabs that sit inside JSON strings (some models emit them).

    As the authors' character loop: a backslash escapes the next character, every other quote opens
    or closes a string.
    """
    if "\n" not in text and "\r" not in text and "\t" not in text:
        return text
    in_string = False

    def replace(token: re.Match) -> str:
        nonlocal in_string
        char = token.group()
        if char == '"':
            in_string = not in_string
        elif in_string and char in _CONTROL_ESCAPES:
            return _CONTROL_ESCAPES[char]
        return char

    return _ESCAPE_TOKEN.sub(replace, text)


def fenced_block(text: str) -> str | None:
    """The first ```` ``` ````/```` ```json ```` block's content, as the authors' regex
    ```` ```(?:json)?\\s*([\\s\\S]*?)``` ```` finds it, without its backtracking."""
    opening = text.find(_FENCE_MARK)
    if opening == -1:
        return None
    body = _FENCE_LANGUAGE.match(text, opening + len(_FENCE_MARK)).end()
    closing = text.find(_FENCE_MARK, body)
    return None if closing == -1 else text[body:closing]


# ----------------------------------------------------------------------------- the cascade


@dataclass(frozen=True)
class ParsedReply:
    fields: Mapping[str, Any]  # the answer object, or what the regex fallback found
    method: str  # one of JSON_METHODS, "regex_key", "regex_letter", "none", or "unclosed_think"


def parse_reply(reply: str) -> ParsedReply:
    """The authors' cascade, first success wins; ``<think>`` blocks are removed first.

    An unclosed think block means the model never reached its answer: nothing is read.
    """
    text = strip_think(reply)
    if text is None:
        return ParsedReply({}, "unclosed_think")
    texts = _JsonTexts()
    found, escaped = _json_object(text, texts)
    if found is not None:
        return ParsedReply(found, "json_escaped" if escaped else "json")
    fence = fenced_block(text)
    if fence is not None:
        found, _ = _json_object(fence, texts)
        if found is not None:
            return ParsedReply(found, "fenced")
    first, last = text.find("{"), text.rfind("}")
    if first != -1 and last > first:
        found, _ = _json_object(text[first : last + 1], texts)
        if found is not None:
            return ParsedReply(found, "braces")
    found = _last_answer_object(text, texts)
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
            "confidence": _bounded_int(confidence.group(1)) if confidence else None,
            "explanation": explanation.group(1) if explanation else None,
        },
        method,
    )


def selected_letter(value: Any) -> str | None:
    """The answer letter as the authors read it: "D. Legal ..." / "D) ..." / "d" -> "D"; non-strings -> None.

    A longer value is no letter (:func:`original_index` refuses it) and is kept as written, stripped: the
    authors upper-case it too, but an upper-cased credential is one the masking of written texts cannot find.
    """
    if not isinstance(value, str):
        return None
    stripped = value.strip()
    leading = _LEADING_LETTER.match(stripped)
    if leading:
        return leading.group(1).upper()
    return stripped.upper() if len(stripped) == 1 else stripped


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
    """``int(value)`` clamped to 0-100, None where the authors' ``int()`` fails (text over 4,300 digits too)."""
    if isinstance(value, str) and len(value.strip()) > _MAX_INT_TEXT:
        return None
    try:
        return max(0, min(100, int(value)))
    except (TypeError, ValueError, OverflowError):
        return None


# ----------------------------------------------------------------------------- scoring, one function per protocol


def _item_record(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What every per-item record says of its doc: which item, and how its options were shuffled."""
    return {
        "benchmark": doc["benchmark"],
        "release": doc["release"],
        "id": doc["id"],
        "kind": doc.get("kind", ""),  # absent from docs built before the loader kept it
        "model_label": doc["model_label"],
        "permutation": list(doc["permutation"]),
        "correct_letter": doc["correct_letter"],
        **rotation.details(doc),
    }


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

    @property
    def invalid_reason(self) -> str | None:
        """Why the reply has no usable letter (None: it has one)."""
        if self.original_index is not None:
            return None
        if self.method == "unclosed_think":
            return "a <think> block is never closed (no answer after the reasoning)"
        if self.method == "none":
            return 'no answer object, no "selected_answer" key and no standalone capital letter'
        if self.letter is None:
            return f"the answer object ({self.method}) has no selected_answer string"
        if len(self.letter) != 1:  # not quoted: its repr could escape a credential past the masking
            return f"the selected_answer is {len(self.letter):,} characters, not one letter"
        return f"the letter {self.letter!r} is none of the options"

    def record(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """The authors' per-item fields (their parse method is the item's parse_step in items_<family>.jsonl)."""
        return {
            **_item_record(doc),
            "selected_letter": self.letter,
            "selected_original_index": self.original_index,
            "is_correct": self.is_correct,
            "confidence": self.confidence,
            "explanation": self.explanation,
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
    """The log-likelihood variant's answer: the most likely letter (the first on a tie), or none."""

    position: int | None  # None: no answer (a non-finite log-likelihood: see samples.choose_by_loglikelihood)
    original_index: int | None
    is_correct: bool
    invalid_reason: str | None = None
    step: str = ""  # the parse step that decided ("" when INVALID)

    def record(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """The per-item fields (the invalid reason is the item's own, in items_<family>.jsonl)."""
        return {
            **_item_record(doc),
            "selected_letter": None if self.position is None else LETTERS[self.position],
            "selected_original_index": self.original_index,
            "is_correct": self.is_correct,
        }


def score_loglikelihoods(doc: Mapping[str, Any], loglikelihoods: Sequence[float]) -> Choice:
    """The log-likelihood protocol: one log-likelihood per shuffled letter."""
    choice = choose_by_loglikelihood(loglikelihoods, len(doc["permutation"]))
    if choice.index is None:
        return Choice(position=None, original_index=None, is_correct=False, invalid_reason=choice.invalid_reason)
    chosen = doc["permutation"][choice.index]
    return Choice(position=choice.index, original_index=chosen, is_correct=chosen == doc["target"], step=choice.step)
