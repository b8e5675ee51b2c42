"""MedExQA prompts, as the authors' scripts build them (lm_eval_tasks/medexqa/README.md, both protocol sections)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .constants import LETTERS, SPECIALTIES

GENERATION_INSTRUCTION = (
    "The following is a multiple-choice question. Please choose the most suitable one among A, B, C and D "
    "as the answer to this question. Your answer should be paired with an explanation why you chose that answer."
)


def logit_header(code: str) -> str:
    """The authors' header line and blank line (lm-eval ``description``)."""
    return f"The following are multiple choice questions (with answers) about {SPECIALTIES[code].words}.\n\n"


def logit_prompt(doc: Mapping[str, Any]) -> str:
    options = "".join(f"\n{letter}. {doc[letter]}" for letter in LETTERS)
    return f"Question: {doc['question']}{options}\nAnswer:"


def generation_prompt(doc: Mapping[str, Any]) -> str:
    options = "".join(f"{letter}. {doc[letter]}\n" for letter in LETTERS)
    return f"{GENERATION_INSTRUCTION}\n\n{doc['question']}\n{options}"


def doc_options(doc: Mapping[str, Any]) -> list[str]:
    """The option texts in shown order (A-D)."""
    return [doc[letter] for letter in LETTERS]
