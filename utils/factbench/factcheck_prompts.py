"""The fact-checker's two LLM prompts, decomposer and CoT judge, and the parsers of their replies.

Both prompts are our own (README, "Our decisions"), pinned by :data:`DECOMPOSER_PROMPT_HASH` and
:data:`JUDGE_PROMPT_HASH`. Both parsers give a verdict for any string, in time linear in its length,
and never raise.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from ..openai_client import prompt_hash
from ..text import strip_think

HAS_CONTENT = re.compile(r"[^\W_]", re.UNICODE)  # a letter or a digit

# ----------------------------------------------------------------------------- decomposer

DECOMPOSER_SYSTEM = (
    "You split sentences from medical and scientific texts into atomic facts. An atomic fact is a short, "
    "self-contained statement that conveys exactly one piece of information and can be checked on its own. "
    "Repeat names instead of using pronouns. Do not add anything that the sentence does not say. "
    'Write one fact per line, each starting with "- ". If the sentence states no fact (a heading, a '
    "greeting, a question, an announcement of what follows), answer exactly: No facts."
)
DECOMPOSER_REQUEST = "Split this sentence into atomic facts:\n{sentence}"
DECOMPOSER_DEMOS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Metformin, a biguanide, is the first-line drug for type 2 diabetes and lowers hepatic glucose production.",
        (
            "Metformin is a biguanide.",
            "Metformin is the first-line drug for type 2 diabetes.",
            "Metformin lowers hepatic glucose production.",
        ),
    ),
    (
        "The trial randomized 412 adults with moderate asthma to inhaled budesonide or placebo for 12 weeks.",
        (
            "The trial was randomized.",
            "The trial enrolled 412 adults.",
            "The participants had moderate asthma.",
            "The participants received inhaled budesonide or placebo.",
            "The treatment lasted 12 weeks.",
        ),
    ),
    ("Here is a summary of the article:", ()),
    (
        "Vitamin D supplementation did not reduce the risk of hip fracture in women over 70.",
        ("Vitamin D supplementation did not reduce the risk of hip fracture in women over 70.",),
    ),
    (
        "**Key Findings:** Mortality was 12% lower in the intervention group (p = 0.03).",
        (
            "Mortality was 12% lower in the intervention group than in the comparison group.",
            "The difference in mortality had a p-value of 0.03.",
        ),
    ),
)
NO_FACTS = "No facts."


def _demo_reply(facts: Sequence[str]) -> str:
    return "\n".join(f"- {fact}" for fact in facts) if facts else NO_FACTS


def decomposer_messages(sentence: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": DECOMPOSER_SYSTEM}]
    for demo, facts in DECOMPOSER_DEMOS:
        messages += [
            {"role": "user", "content": DECOMPOSER_REQUEST.format(sentence=demo)},
            {"role": "assistant", "content": _demo_reply(facts)},
        ]
    return messages + [{"role": "user", "content": DECOMPOSER_REQUEST.format(sentence=sentence)}]


DECOMPOSER_PROMPT_HASH = prompt_hash(json.dumps(decomposer_messages("{sentence}"), ensure_ascii=False))
# A bullet ("-", "*", "•", "–") or a number of 1-3 ASCII digits with "." or ")", then whitespace. Only the
# prefix is matched: the fact is the rest of the line, stripped (a pattern spanning the whole line
# backtracks quadratically on a marker followed by a long run of spaces).
_BULLET = re.compile(r"\s*(?:[-*•–]|[0-9]{1,3}[.)])\s")
_NO_FACTS = re.compile(r"\bno (?:atomic )?facts?\b", re.IGNORECASE)


def parse_facts(reply: str | None) -> tuple[list[str], str]:
    """``(facts, outcome)``; outcome is "facts", "no_facts" or "unparsed".

    Bullet or numbered lines are the facts (markdown emphasis stripped, exact repeats dropped); a reply
    with no such line that says "no facts" is "no_facts"; anything else (also an unclosed think block)
    is "unparsed".
    """
    text = strip_think(reply) if reply is not None else None
    if text is None:
        return [], "unparsed"
    facts: dict[str, None] = {}
    for line in text.splitlines():
        match = _BULLET.match(line)
        if match:
            fact = line[match.end() :].strip().replace("**", "").strip()
            if HAS_CONTENT.search(fact):
                facts.setdefault(fact)
    if facts:
        return list(facts), "facts"
    return [], "no_facts" if _NO_FACTS.search(text) else "unparsed"


# ----------------------------------------------------------------------------- CoT judge

JUDGE_SYSTEM = (
    "You check statements against a given context from medical and scientific sources. Decide whether the "
    "context supports the statement: it is supported only if the context states it or it follows directly "
    "from the context. Think step by step: quote or point to the relevant part of the context, compare it "
    "with the statement, then give your verdict. End your reply with a final line that is exactly "
    '"Answer: True" (supported) or "Answer: False" (not supported or contradicted).'
)
JUDGE_REQUEST = "Context:\n{context}\n\nStatement: {fact}\n\nIs the statement supported by the context?"
_DEMO_CONTEXT = (
    "Metformin was given to 120 adults with type 2 diabetes for 24 weeks. HbA1c fell by 0.9% compared with placebo."
)
# (statement, reasoning and verdict): one supported, one contradicted, one not mentioned.
JUDGE_DEMOS: tuple[tuple[str, str], ...] = (
    (
        "Metformin lowered HbA1c compared with placebo.",
        "The context says HbA1c fell by 0.9% with metformin compared with placebo, so metformin lowered HbA1c.\n"
        "Answer: True",
    ),
    ("The trial lasted 12 weeks.", "The context says the trial lasted 24 weeks, not 12 weeks.\nAnswer: False"),
    (
        "Metformin causes weight loss.",
        "The context does not mention body weight, so it does not support the statement.\nAnswer: False",
    ),
)


def judge_messages(context: str, fact: str) -> list[dict[str, str]]:
    """System rules, three worked demonstrations, then the context and the fact (the fact last, so
    consecutive facts of one document share a cacheable prompt prefix)."""
    messages = [{"role": "system", "content": JUDGE_SYSTEM}]
    for statement, answer in JUDGE_DEMOS:
        messages += [
            {"role": "user", "content": JUDGE_REQUEST.format(context=_DEMO_CONTEXT, fact=statement)},
            {"role": "assistant", "content": answer},
        ]
    return messages + [{"role": "user", "content": JUDGE_REQUEST.format(context=context, fact=fact)}]


JUDGE_PROMPT_HASH = prompt_hash(json.dumps(judge_messages("{context}", "{fact}"), ensure_ascii=False))
# Bounded gaps only: each is tried at most a fixed number of characters from where "answer" starts.
_ANSWER = re.compile(r"answer\W{0,6}(?:is\W{0,3})?(true|false)\b", re.IGNORECASE)
_BARE = re.compile(r"\W*(true|false)\W*", re.IGNORECASE)


def parse_verdict(reply: str | None) -> bool | None:
    """The judge's verdict, or None when it cannot be read (never guessed: the authors' parser calls a
    reply without True or False "supported"; README, "Differences from the authors' code").

    Think blocks are removed first (an unclosed one means no verdict). Then: the last
    "Answer: True/False" (any case; markdown, quotes or "is" allowed in between) decides; failing
    that, a last non-empty line that is only True or False; anything else is unparsed.
    """
    text = strip_think(reply) if reply is not None else None
    if text is None:
        return None
    answers = _ANSWER.findall(text)
    if answers:
        return answers[-1].lower() == "true"
    last = next((line for line in reversed(text.splitlines()) if line.strip()), None)
    bare = _BARE.fullmatch(last) if last is not None else None
    return bare.group(1).lower() == "true" if bare else None
