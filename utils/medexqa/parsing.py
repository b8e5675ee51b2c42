"""Reading MedExQA replies: the authors' letter-extraction cascade, the one scoring function per protocol, and
the judges' scores of explanations (:func:`parse_judge_score`).

:func:`score_logit` and :func:`score_generation` are what both the lm-eval hooks (:mod:`.tasks`) and
the report (:mod:`.report_spec`) call, so a logged sample is scored exactly as it was during the run.

The cascade (the authors' ``evaluate_pipe_MedExQA.py`` at 9a5b34af; lm_eval_tasks/medexqa/README.md,
"Answer extraction"), first hit wins:

1. every option text (trailing periods removed; longest option first) is replaced, ignoring case,
   by its letter;
2. "answer"/"choice ... X" or "choose ... X" ("choose" may start a longer word: "chooses", "choosed");
3. "X is correct/right";
4. the text starts with X followed by ".", ",", ":" or the end;
5. the first capital X not touching another ASCII letter (nor followed by "=");
6. fuzzy match (thefuzz WRatio) of the text against the four option texts.

Only capital A-D count as letters; the gaps the patterns allow exclude capital A-D. Every step is
linear in the reply's length (literal searches and patterns whose every quantifier is bounded), and
no input makes the cascade raise.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..samples import choose_by_loglikelihood
from ..scoring import INVALID
from ..text import strip_think
from .constants import LETTERS
from .prompts import doc_options, generation_prompt

_GAP = "[^ABCD]"
_NEGATION = "(?:n't|not)"
_ANSWER_CUE = rf"(?:[Aa]nswer|[Cc]hoice)(?!{_GAP}{{0,20}}?{_NEGATION}){_GAP}{{0,10}}?\b(?:|is|:|be)"
_CORRECT_CUE = rf"(?!{_GAP}{{0,8}}?{_NEGATION}{_GAP}{{0,5}}?(?:correct|right)){_GAP}{{0,10}}?\b(?:correct|right)\b"
# (step name, pattern, anchored): an anchored pattern is tried at the start of the text only.
STEP_PATTERNS = (
    # The word boundary after the cue belongs to the answer/choice branch only, as in the authors' regex:
    # "chooses D" and "choosed D" are cues too.
    ("answer_pattern", re.compile(rf"(?:[Cc]hoose|{_ANSWER_CUE}\b){_GAP}{{0,20}}?\b([ABCD])\b"), False),
    ("correct_pattern", re.compile(rf"\b([ABCD])\b{_CORRECT_CUE}"), False),
    ("leading_letter", re.compile(r"([ABCD])(?:\.|,|:|$)"), True),
    ("first_letter", re.compile(r"(?<![a-zA-Z])([ABCD])(?![a-zA-Z=])"), False),
)
FUZZY = "fuzzy"
UNCLOSED_THINK = "unclosed_think"
EMPTY = "empty"
NO_MATCH = "no_match"
EXTRACTION_STEPS = (*(name for name, _, _ in STEP_PATTERNS), FUZZY, UNCLOSED_THINK, EMPTY, NO_MATCH)
# Why a step that reads no letter leaves the reply INVALID.
INVALID_REASONS = {
    UNCLOSED_THINK: "a <think> block is never closed (no answer after the reasoning)",
    EMPTY: "the reply is empty (after think blocks are removed)",
    NO_MATCH: "no letter A-D, and no text the fuzzy match can compare with the options",
}
# Steps that read a letter the reply states, as opposed to the two guessing fallbacks.
EXPLICIT_STEPS = frozenset({"answer_pattern", "correct_pattern", "leading_letter"})


@dataclass(frozen=True)
class Extraction:
    letter: str | None  # None: no answer (counted wrong)
    step: str  # one of EXTRACTION_STEPS
    from_option_text: bool  # the letter was written in the reply as its option's text (step 1)

    @property
    def invalid_reason(self) -> str | None:
        return None if self.letter is not None else INVALID_REASONS.get(self.step, self.step)


def replace_option_texts(text: str, options: Sequence[str]) -> tuple[str, bytearray]:
    """Step 1, and which characters of the result (1 in the mask) are letters that replaced an option text."""
    mask = bytearray(len(text))
    # Stable sort: options of equal length keep A-D order, as in the authors' script.
    for letter, option in sorted(zip(LETTERS, options), key=lambda pair: len(pair[1]), reverse=True):
        needle = option.rstrip(".")
        if not needle:  # an option of only periods would match everywhere; none exists in the data
            continue
        pieces, marks, start = [], [], 0
        for match in re.finditer(re.escape(needle), text, flags=re.IGNORECASE):
            pieces += (text[start : match.start()], letter)
            marks += (mask[start : match.start()], b"\x01")
            start = match.end()
        if pieces:
            text = "".join(pieces) + text[start:]
            mask = bytearray().join(marks) + mask[start:]
    return text, mask


def read_letter(text: str, options: Sequence[str]) -> Extraction:
    """The cascade on a think-free text (surrounding whitespace is ignored: chat APIs return replies unstripped)."""
    text = text.strip()
    if not text:
        return Extraction(None, EMPTY, False)
    text, mask = replace_option_texts(text, options)
    for step, pattern, anchored in STEP_PATTERNS:
        match = pattern.match(text) if anchored else pattern.search(text)
        if match:
            return Extraction(match.group(1), step, bool(mask[match.start(1)]))
    from thefuzz import process, utils

    if not utils.full_process(text):  # nothing left to compare (e.g. only punctuation)
        return Extraction(None, NO_MATCH, False)
    best, score = process.extractOne(text, list(options))
    if score == 0:
        return Extraction(None, NO_MATCH, False)
    return Extraction(LETTERS[list(options).index(best)], FUZZY, False)


def _read_visible(visible: str | None, options: Sequence[str]) -> Extraction:
    return Extraction(None, UNCLOSED_THINK, False) if visible is None else read_letter(visible, options)


def extract_answer(reply: str, options: Sequence[str]) -> Extraction:
    """The letter a reply chooses, read with the authors' cascade from the reply alone (think blocks removed)."""
    return _read_visible(strip_think(reply), options)


# ----------------------------------------------------------------------------- one scoring function per protocol


@dataclass(frozen=True)
class LogitScore:
    pred: str  # a letter, or INVALID (a non-finite log-likelihood: see samples.choose_by_loglikelihood)
    correct: bool
    invalid_reason: str | None = None
    step: str = ""  # the parse step that decided ("" when INVALID)


def score_logit(doc: Mapping[str, Any], loglikelihoods: Sequence[float]) -> LogitScore:
    """The most likely letter (first on ties, as lm-eval's ``acc``) against the doc's gold letter."""
    choice = choose_by_loglikelihood(loglikelihoods, len(LETTERS))
    pred = INVALID if choice.index is None else LETTERS[choice.index]
    return LogitScore(pred, pred == doc["answer"], choice.invalid_reason, "" if choice.index is None else choice.step)


@dataclass(frozen=True)
class GenerationScore:
    extraction: Extraction
    correct: bool
    visible: str | None  # the reply without think blocks (None: a block was left open)

    @property
    def answered(self) -> bool:
        """A usable letter was read (the report's INVALID otherwise)."""
        return self.extraction.letter is not None


def score_generation(doc: Mapping[str, Any], reply: str) -> GenerationScore:
    """The letter of one reply, read with the cascade from the reply alone, against the doc's gold letter."""
    visible = strip_think(reply)
    extraction = _read_visible(visible, doc_options(doc))
    return GenerationScore(extraction, extraction.letter == doc["answer"], visible)


def prompt_included_reading(doc: Mapping[str, Any], score: GenerationScore) -> Extraction:
    """What the authors' script reads: it ran the cascade on the prompt followed by the reply."""
    if score.visible is None:
        return score.extraction
    return read_letter(generation_prompt(doc) + score.visible, doc_options(doc))


# ----------------------------------------------------------------------------- the judges' replies (explanation scores)

# ASCII digits only, as the judge prompt asks: re's \d takes any script's digits ("٣", "３"), which float() reads.
_JUDGE_SCORE = re.compile(r"<score>\s*([0-9]+(?:\.[0-9]+)?)\s*</score>")


def parse_judge_score(text: str | None) -> float | None:
    """The last ``<score>N</score>`` (0-10) of a judge's reply scaled to 0-100; None when there is none in range.

    ``float`` of any digit run is a number (a huge one is inf, out of range), never an error.
    """
    found = _JUDGE_SCORE.findall(text or "")
    if not found:
        return None
    value = float(found[-1])
    return 10.0 * value if 0.0 <= value <= 10.0 else None
