"""What the models read: the 300-word context and the zero-shot, generative and probe texts.

Protocol in lm_eval_tasks/pubmedqa_atlas/README.md (sections "Protocol", "The generative variant", "The probe").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .constants import CONTEXT_WORDS, LABELS


def generative_instruction(order: Sequence[str] = LABELS) -> str:
    """The generative instruction, naming the answers in ``order`` (a rotated doc's ``label_order``)."""
    return f"Answer the question with {', '.join(order[:-1])} or {order[-1]}."


GENERATIVE_INSTRUCTION = generative_instruction()
PROBE_TEXT = "Question: {question}\nContext: {context}"

_WORD = re.compile(r"\S+")


def first_words(text: str, n: int = CONTEXT_WORDS) -> str:
    """``text`` up to the end of its ``n``-th word (words are runs of non-whitespace); unchanged if shorter."""
    for count, match in enumerate(_WORD.finditer(text), start=1):
        if count == n:
            return text[: match.end()]
    return text


def context_of(sections: Sequence[str]) -> str:
    """The abstract's sections joined by single spaces, cut after the 300th word."""
    return first_words(" ".join(sections))


def zero_shot_prompt(doc: Mapping[str, Any]) -> str:
    return f"Abstract: {doc['context']}\nQuestion: {doc['question']}\nAnswer:"


def generative_prompt(doc: Mapping[str, Any]) -> str:
    instruction = generative_instruction(doc["label_order"]) if "label_order" in doc else GENERATIVE_INSTRUCTION
    return f"Abstract: {doc['context']}\nQuestion: {doc['question']}\n{instruction}\nAnswer:"


def probe_text(doc: Mapping[str, Any]) -> str:
    """What the probe's encoder reads: the question first, so truncation only ever cuts context."""
    return PROBE_TEXT.format(question=doc["question"], context=doc["context"])
