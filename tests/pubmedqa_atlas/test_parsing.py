"""The generative answer parser on hostile replies: a verdict (yes / no / maybe / None) for any string, never an
exception; linear time is shown by examples/parse_timing.py (no timing assertions here)."""

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils.pubmedqa_atlas import parsing
from lm_eval_tasks.utils.scoring import INVALID

from tests.conftest import examples

VERDICTS = {"yes", "no", "maybe", None}
HOSTILE = settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Pieces of replies that exercise every part of the patterns, and the tags strip_think looks for.
FRAGMENTS = [
    "answer",
    "Answer",
    "ANSWER",
    "answer is ",
    "answer: ",
    "answer would be",
    "final ",
    "Final answer:",
    " is ",
    "yes",
    "no",
    "maybe",
    "Yes",
    "MAYBE",
    "yesterday",
    "nope",
    "maybes",
    "<think>",
    "</think>",
    "**",
    ":",
    " ",
    "\n",
    "\t",
    "\u00a0",
    "!",
    "ſ",  # long s: Python's IGNORECASE folds it to "s"
    "İ",
    "K",  # Kelvin sign
    "é",
    "\x00",
    "\ud800",  # a lone surrogate: a valid str, though no valid UTF-8
    "9" * 5000,  # int() of a long digit run raises; the parser never converts
]

# A repeated piece's length at most (the 5,000-digit piece repeated 200,000 times would be a 1 GB reply, drawn or
# not by chance: the test took 9 to 27 s from run to run).
REPEATED_CHARS = 400_000


def repeated(piece: str, times: int) -> str:
    """``piece`` ``times`` over, or as often as REPEATED_CHARS allows (at least once)."""
    return piece * max(1, min(times, REPEATED_CHARS // len(piece)))


hostile_replies = st.one_of(
    st.text(),
    st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join),
    # Few pieces repeated thousands of times: long runs of "answer is", separators or think tags.
    st.tuples(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=4), st.integers(1, 20_000)).map(
        lambda parts: repeated("".join(parts[0]), parts[1])
    ),
    st.tuples(st.text(max_size=20), st.sampled_from(FRAGMENTS), st.integers(1, 200_000)).map(
        lambda parts: parts[0] + repeated(parts[1], parts[2])
    ),
)


@HOSTILE
@given(hostile_replies)
def test_any_reply_gets_a_verdict_and_never_an_exception(reply):
    answer = parsing.parse_answer(reply)
    assert answer in VERDICTS
    verdict = parsing.score_generation("no", reply)
    assert verdict.pred in {"yes", "no", "maybe", INVALID}
    assert verdict.extras == {"parseable": float(answer is not None)}
    assert verdict.correct == float(answer == "no")


def no_answer_words(text: str) -> bool:
    """Text that holds none of the words the parser reads, nor a think tag (case-insensitively, ASCII letters)."""
    lowered = text.lower()
    return not re.search(r"answer|yes|no|maybe|think", lowered)


filler = st.text(alphabet=st.characters(codec="utf-8"), max_size=300).filter(no_answer_words)
separators = st.text(alphabet=" \t\n*:.,!\"'-#()[]", max_size=30)  # no "_": it is a word character


@HOSTILE
@given(separators, st.sampled_from(["yes", "no", "maybe"]), st.sampled_from(["", " ", ".", ", ", "!\n"]), filler)
def test_a_leading_answer_word_is_read_whatever_follows(prefix, label, after, rest):
    # With nothing after the word, the reply ends there; otherwise a non-word character ends the word.
    reply = prefix + label.capitalize() + (after + rest if after else "")
    assert parsing.parse_answer(reply) == label


@HOSTILE
@given(filler, st.sampled_from(["yes", "no", "maybe"]), st.sampled_from(["answer is ", "answer: ", "Answer is: "]))
def test_a_stated_answer_after_any_other_text_is_read(before, label, statement):
    reply = f"{before} The {statement}{label.upper()}."
    assert parsing.parse_answer(reply) == label


@HOSTILE
@given(st.integers(1, 50_000), st.sampled_from(["answer is ", "answer: ", "answer   ", "the answer is not clear. "]))
def test_many_answer_statements_without_a_label_are_no_answer(repeats, statement):
    assert parsing.parse_answer(statement * repeats) is None
    # ... and the first stated label after them counts.
    assert parsing.parse_answer(statement * repeats + "answer is maybe, or answer is yes") == "maybe"


@pytest.mark.parametrize(
    "reply, answer",
    [
        ("yeſ", None),  # long s
        ("Yeſ, clearly.", None),
        ("The anſwer iſ yeſ", None),
        ("The answer is yeſ", None),
        ("Maybe", "maybe"),
        ("nO\u0307", "no"),  # a combining mark is no word character: the word "no" ends before it
        ("K, no", None),  # Kelvin sign, then a word that is not stated as the answer
    ],
)
def test_only_ascii_letters_are_case_folded(reply, answer):
    # Python's IGNORECASE would match "ſ" as "s" and return "yeſ", a prediction that is none of the labels.
    assert parsing.parse_answer(reply) == answer


def test_huge_replies_keep_their_verdict():
    assert parsing.parse_answer("No." + " filler" * 200_000) == "no"
    assert parsing.parse_answer("<think>" + "x" * 1_000_000 + "</think>Maybe") == "maybe"
    assert parsing.parse_answer("<think>" * 100_000) is None
    assert parsing.parse_answer("!" * 1_000_000 + "yesterday") is None
    assert parsing.parse_answer(" " * 1_000_000 + "answer is yes") == "yes"
