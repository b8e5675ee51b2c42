"""Every reply parser gives a verdict for any string, never an exception (hostile shapes and random text)."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils.text import strip_think

from tests.conftest import examples
from tests.hostile_replies import SHAPES
from tests.reply_parsers import PARSERS

# Pieces of every reply format this package reads, so random replies hit the parsers' edge cases.
PIECES = [
    "<think>",
    "</think>",
    "<score>",
    "</score>",
    "{",
    "}",
    '"selected_answer"',
    ":",
    '"A"',
    "answer",
    "is",
    "A",
    "B",
    " ",
    "\n",
    "- ",
    "1.",
    "True",
    "False",
    "yes",
    "maybe",
    "-2",
    "9" * 30,
    "\ud800",
    "\x00",
    "é",
    # look-alikes and separators: a long s folds to "s" and a fullwidth A is no A; U+2028/2029/0085 end lines
    "ſ",
    "Ａ",
    "\u2028",
    "\u2029",
    "\x85",
    # cut tags, escapes, and numbers json reads specially
    "<score",
    "</think",
    "\\u00",
    "```json",
    '"confidence"',
    "1e999",
    "NaN",
]
replies = st.one_of(st.text(), st.lists(st.sampled_from(PIECES), max_size=40).map("".join))


@pytest.mark.parametrize("name", sorted(PARSERS))
@settings(max_examples=examples(300), deadline=None)
@given(reply=replies)
def test_any_reply_gets_a_verdict(name, reply):
    PARSERS[name](reply)


@pytest.mark.parametrize("name", sorted(PARSERS))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_hostile_shapes_get_a_verdict(name, shape):
    PARSERS[name](SHAPES[shape](50_000))


_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)


def quadratic_strip_think(reply: str) -> str | None:
    """The definition: remove every non-greedy think block; an open one, or text before a stray close, is reasoning."""
    without_blocks = _THINK_BLOCK.sub("", reply)
    if "<think>" in without_blocks:
        return None
    return without_blocks.rsplit("</think>", 1)[1] if "</think>" in without_blocks else without_blocks


@settings(max_examples=examples(3000), deadline=None)
@given(
    reply=st.lists(st.sampled_from(["<think>", "</think>", "<thi", "nk>", "</", "think>", "a", " "]), max_size=14).map(
        "".join
    )
)
def test_strip_think_agrees_with_its_regex_definition(reply):
    assert strip_think(reply) == quadratic_strip_think(reply)


def test_strip_think_examples():
    assert strip_think("<think>a</think> B") == " B"
    assert strip_think("<think>never closed") is None
    assert strip_think("prefilled reasoning</think>C") == "C"
    assert strip_think("<think>x</think><think>y") is None


@settings(max_examples=examples(1000), deadline=None)
@given(st.lists(st.sampled_from(list("ab1 _*[]()!<>&`~|#@\\:/.w-\n") + ["https://", "www.", "a@b.c"])).map("".join))
def test_markdown_text_renders_as_the_text_it_is(text):
    # CommonMark reads md()'s output back as exactly the text (one line): no link, image, emphasis, code or HTML.
    import html

    from lm_eval_tasks.utils.text import md
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").renderInline(md(text))
    assert html.unescape(rendered) == " ".join(text.split())
