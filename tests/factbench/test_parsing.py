"""Every FActBench parser on hostile input: a verdict for any string, never an exception, in linear time.

The parsers are the decomposer's fact-list parser, the judge's True/False parser, the reply measure
lm-eval and the report share, and the sentence splitter. Their rules are unchanged from the
pattern-per-line versions they replace (kept here as the reference), which were quadratic on a
bullet followed by a long run of spaces.
"""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils.factbench.factcheck_prompts import parse_facts, parse_verdict
from lm_eval_tasks.utils.factbench.parsing import score_generation
from lm_eval_tasks.utils.factbench.pipeline import split_sentences
from lm_eval_tasks.utils.text import strip_think

from tests.conftest import examples
from tests.hostile_replies import OTHER_DIGITS

# ----------------------------------------------------------------------------- the previous rules, as reference

_OLD_BULLET = re.compile(r"^\s*(?:[-*•–]|\d{1,3}[.)])\s+(.*\S)\s*$")
_OLD_NO_FACTS = re.compile(r"\bno (?:atomic )?facts?\b", re.IGNORECASE)
_OLD_ANSWER = re.compile(r"answer\W{0,6}(?:is\W{0,3})?(true|false)\b", re.IGNORECASE)
_OLD_BARE = re.compile(r"^\W*(true|false)\W*$", re.IGNORECASE)


def old_parse_facts(reply):
    text = strip_think(reply) if reply is not None else None
    if text is None:
        return [], "unparsed"
    facts = []
    for line in text.splitlines():
        match = _OLD_BULLET.match(line)
        if match:
            fact = match.group(1).replace("**", "").strip()
            if re.search(r"[^\W_]", fact) and fact not in facts:
                facts.append(fact)
    if facts:
        return facts, "facts"
    return [], "no_facts" if _OLD_NO_FACTS.search(text) else "unparsed"


def old_parse_verdict(reply):
    text = strip_think(reply) if reply is not None else None
    if text is None:
        return None
    answers = _OLD_ANSWER.findall(text)
    if answers:
        return answers[-1].lower() == "true"
    lines = [line for line in text.splitlines() if line.strip()]
    bare = _OLD_BARE.match(lines[-1]) if lines else None
    return bare.group(1).lower() == "true" if bare else None


# Pieces the rules react to: markers, numbers, whitespace of several kinds, line breaks of several
# kinds, emphasis, think tags, answer words.
FACT_PIECES = st.sampled_from(
    [
        "-",
        "*",
        "•",
        "–",
        "1",
        "12",
        "1234",
        ".",
        ")",
        " ",
        "\t",
        "\u00a0",
        "\n",
        "\r\n",
        "\u2028",
        "\x85",
        "**",
        "a",
        "Fact",
        "_",
        "No facts",
        "no atomic fact",
        "<think>",
        "</think>",
        "é",
    ]
)
VERDICT_PIECES = st.sampled_from(
    [
        "answer",
        "Answer",
        ":",
        " ",
        "\n",
        "is",
        "true",
        "FALSE",
        "True",
        "false.",
        "**",
        "'",
        "!",
        "x",
        "untrue",
        "<think>",
        "</think>",
        "\u2028",
        "\t",
        "1",
    ]
)


def joined(pieces):
    return st.lists(pieces, max_size=40).map("".join)


@settings(max_examples=examples(400), deadline=None)
@given(joined(FACT_PIECES))
def test_fact_list_parser_keeps_its_rules(reply):
    assert parse_facts(reply) == old_parse_facts(reply)


@settings(max_examples=examples(400), deadline=None)
@given(joined(VERDICT_PIECES))
def test_verdict_parser_keeps_its_rules(reply):
    assert parse_verdict(reply) is old_parse_verdict(reply)


@settings(max_examples=examples(300), deadline=None)
@given(st.text())
def test_parsers_give_a_verdict_for_any_text(text):
    facts, outcome = parse_facts(text)
    assert outcome in {"facts", "no_facts", "unparsed"} and bool(facts) == (outcome == "facts")
    assert len(set(facts)) == len(facts) and all(fact == fact.strip() and fact for fact in facts)
    assert parse_verdict(text) in (True, False, None)
    measures = score_generation(text)
    assert measures == {"generated_words": float(len(text.split())), "empty_generation": float(not text.split())}


@pytest.mark.parametrize("digit", OTHER_DIGITS)
def test_a_number_in_another_scripts_digits_is_no_list_marker(digit):
    assert parse_facts(f"{digit}. The drug lowers blood pressure.") == ([], "unparsed")
    assert parse_facts(f"1. First fact.\n{digit}{digit}) Not a fact.") == (["First fact."], "facts")


@settings(max_examples=examples(100), deadline=None)
@given(st.text(max_size=300))
def test_sentences_are_nonempty_pieces_of_their_line(text):
    lines = text.splitlines()
    for sentence in split_sentences(text):
        assert sentence == sentence.strip() and any(sentence in line for line in lines)


# Shapes that made a per-line pattern backtrack, at a size where quadratic work would take hours:
# (text, the fact-list parser's verdict, the judge parser's verdict).
N = 200_000
HOSTILE = {
    "bullet then spaces": ("- " + " " * N, ([], "unparsed"), None),
    "number then spaces": ("12. " + " " * N + "x", (["x"], "facts"), None),
    "bullet, spaces, no content": ("-" + " \t" * N, ([], "unparsed"), None),
    "many distinct facts": (
        "".join(f"- fact {i}\n" for i in range(N // 10)),
        ([f"fact {i}" for i in range(N // 10)], "facts"),
        None,
    ),
    "many repeated facts": ("- same fact\n" * (N // 10), (["same fact"], "facts"), None),
    "dashes": ("-" * N, ([], "unparsed"), None),
    "unclosed think": ("<think>" * (N // 7), ([], "unparsed"), None),
    "answer words": ("answer " * (N // 7), ([], "unparsed"), None),
    "answer then a long gap": ("Answer:" + " " * N + "True", ([], "unparsed"), None),
    "bare verdict then junk": ("true" + "!" * N + "x", ([], "unparsed"), None),
    "non-words": ("!" * N, ([], "unparsed"), None),
    "a verdict after a long reply": ("reasoning " * N + "\n**True**", ([], "unparsed"), True),
    "the last answer after a long reply": ("Answer: false " + "x" * N + " answer is TRUE", ([], "unparsed"), True),
}


@pytest.mark.parametrize("shape", HOSTILE)
def test_hostile_shapes_get_a_verdict(shape):
    text, facts, verdict = HOSTILE[shape]
    assert parse_facts(text) == facts
    assert parse_verdict(text) is verdict
    assert score_generation(text)["generated_words"] == float(len(text.split()))
