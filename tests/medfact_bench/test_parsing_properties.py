"""Property tests of the MedFact-Bench reply parsers on hostile shapes: every reply gets a verdict, the same one the
reference code's regular expressions give, and appending or prepending text moves it only as the protocol says."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils.medfact_bench.constants import LABELS
from lm_eval_tasks.utils.medfact_bench.parsing import is_strict_format, parse_score, score_reply
from lm_eval_tasks.utils.scoring import INVALID

from tests.conftest import examples

# Tags, broken tags, signs, digits (ASCII and not), whitespace (ASCII and Unicode), NUL, lone surrogates.
PIECES = (
    "<think>",
    "</think>",
    "<score>",
    "</score>",
    "<score",
    "</sco",
    "<",
    ">",
    "/",
    "+",
    "-",
    "0",
    "1",
    "2",
    "3",
    "9",
    "_",
    " ",
    "\n",
    "\t",
    "\u00a0",
    "\u3000",
    "\x1c",
    "\x00",
    "\ud800",
    "\udfff",
    "\u0662",
    "\uff11",
    "x",
)
piece = st.one_of(st.sampled_from(PIECES), st.text(max_size=4), st.characters(categories=["Cs"]))
# The same pieces repeated up to 10,000 times: many tags, many spaces, long digit strings.
long_run = st.tuples(st.sampled_from(PIECES), st.integers(1, 10_000)).map(lambda run: run[0] * run[1])
SCORE_CONTENTS = ("1", "-2", "+0", " 2\n", "-0", "002", "3", "1.0", "0_1", "\u0662", "", "+-1")


# Integers far past int()'s 4,300-digit limit, with a sign and surrounding spaces.
long_integer = st.tuples(st.sampled_from(["", "+", "-", " "]), st.sampled_from("0129"), st.integers(4000, 20_000)).map(
    lambda shape: shape[0] + shape[1] * shape[2] + "1"
)


@st.composite
def shaped_reply(draw, part, content):
    """Mostly the requested layout, each tag usually there, hostile text around and inside the blocks."""
    pieces = []
    for tag in ("<think>", "</think>", "<score>"):
        pieces += [draw(part), tag if draw(st.integers(0, 5)) else ""]
    pieces.append(draw(st.one_of(st.sampled_from(SCORE_CONTENTS), content)))
    pieces += ["</score>" if draw(st.integers(0, 2)) else "", draw(st.one_of(st.just(""), part))]
    return "".join(pieces)


small_part = st.lists(piece, max_size=4).map("".join)
small_reply = st.one_of(shaped_reply(small_part, small_part), st.lists(piece, max_size=16).map("".join))
hostile_part = st.lists(st.one_of(piece, long_run), max_size=3).map("".join)
hostile_reply = st.one_of(
    shaped_reply(hostile_part, st.one_of(hostile_part, long_integer)),
    st.lists(st.one_of(piece, long_run), max_size=10).map("".join),
)

# The reference's reading (KouateMuhamed/medfact-bench, medfact_bench/core.py), restricted to what this
# protocol calls an integer: ASCII digits with an optional sign (the reference's int() also takes
# underscores and non-ASCII digits; see lm_eval_tasks/medfact_bench/README.md).
REFERENCE_SCORE = re.compile(r"<score>(.*?)</score>", re.DOTALL)
REFERENCE_STRICT = re.compile(r"\A\s*<think>.*?</think>\s*<score>(.*?)</score>\s*\Z", re.DOTALL)
ASCII_INTEGER = re.compile(r"[+-]?[0-9]+")


def reference_value(content):
    content = content.strip()
    if not ASCII_INTEGER.fullmatch(content):
        return None
    value = int(content)
    return value if value in (-2, -1, 0, 1, 2) else None


def reference_score(text):
    match = REFERENCE_SCORE.search(text)
    return None if match is None else reference_value(match.group(1))


def reference_strict(text):
    if any(text.count(tag) != 1 for tag in ("<think>", "</think>", "<score>", "</score>")):
        return False
    match = REFERENCE_STRICT.fullmatch(text)
    return match is not None and reference_value(match.group(1)) is not None


@settings(deadline=None)
@given(hostile_reply)
def test_every_reply_gets_one_consistent_verdict(reply):
    scored = score_reply(reply)
    assert scored.score in (None, -2, -1, 0, 1, 2)
    assert scored.label in (*LABELS, INVALID) and (scored.label == INVALID) == (scored.score is None)
    assert scored.score == parse_score(reply)
    assert scored.strict_format is is_strict_format(reply)
    assert not scored.strict_format or scored.score is not None
    assert scored.rates() == {
        "parseable_score": float(scored.score is not None),
        "strict_format": float(scored.strict_format),
    }


@settings(max_examples=examples(1000))
@given(small_reply)
def test_agrees_with_the_reference_regular_expressions(reply):
    assert parse_score(reply) == reference_score(reply)
    assert is_strict_format(reply) is reference_strict(reply)


@settings(deadline=None)
@given(st.sampled_from(["", "+", "-"]), st.integers(0, 20_000), st.sampled_from("0123456789"), st.booleans())
def test_long_digit_strings_are_read_without_int(sign, zeros, last, leading_nonzero):
    digits = ("1" if leading_nonzero else "") + "0" * zeros + last
    value = None if leading_nonzero or last > "2" else (-1 if sign == "-" else 1) * int(last)
    reply = f"<think>t</think><score> {sign}{digits} </score>"
    assert parse_score(reply) == value
    assert is_strict_format(reply) is (value is not None)


think_text = st.text().filter(
    lambda text: not any(tag in text for tag in ("<think>", "</think>", "<score>", "</score>"))
)
whitespace = st.text(alphabet=" \t\n\r\x0b\x0c\x1c\u00a0\u2003\u3000")


@settings(deadline=None)
@given(think_text, st.sampled_from(["-2", "-1", "0", "1", "2", "+2", " 0 "]), whitespace, whitespace, whitespace)
def test_a_strict_reply_stays_strict_only_with_whitespace_around_it(thought, score, before, between, after):
    reply = f"{before}<think>{thought}</think>{between}<score>{score}</score>{after}"
    assert score_reply(reply).strict_format and parse_score(reply) == int(score)
    assert is_strict_format(reply + " " * 8000)
    # text after the score block keeps the score but breaks the format (a stop string would have hidden it)
    assert parse_score(reply + " Done.") == int(score) and not is_strict_format(reply + " Done.")
    # text without a <score> before the reply does not change the first score
    assert parse_score("</score> x " + reply) == int(score) and not is_strict_format("</score> x " + reply)
    # without its closing tag (a stop string at </score>) there is no score
    assert parse_score(reply.split("</score>")[0]) is None
