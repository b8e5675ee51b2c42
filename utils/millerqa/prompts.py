"""What the model is shown: the per-(item, model) option order and the authors' messages.

The shuffle, as the authors' harness draws it (lm_eval_tasks/millerqa/README.md, "Protocol"): SHA-256 of
``"{seed}:{item_id}:{model_label}"``, the first 64 bits seed Python's ``random.Random``, which shuffles
``list(range(n_options))``; ``permutation[position] = original index``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Any

from ..rotation import doc_fields, rotated
from .constants import DIMENSION_OF, LETTERS, SHUFFLE_SEED

SYSTEM_PROMPT = (
    "You are an expert evaluator. Your task is to answer multiple-choice questions accurately. "
    "Always respond with a single JSON object and nothing else. "
    "Do not add markdown fences, commentary, or extra text outside the JSON."
)
_ANSWER_SKELETON = (
    "Respond with ONLY this JSON object (no markdown, no extra text):\n"
    "{\n"
    '  "selected_answer": "<letter>",\n'
    '  "explanation": "<one to two sentence justification for your choice>",\n'
    '  "confidence": <integer 0-100 reflecting how confident you are>\n'
    "}"
)
_INSTRUCTION = "Answer the following multiple-choice question."


def options_block(options: Sequence[str]) -> str:
    return "\n".join(f"{LETTERS[i]}. {option}" for i, option in enumerate(options))


def user_prompt(question: str, options: Sequence[str]) -> str:
    """The authors' user message for already-shuffled options."""
    return f"{_INSTRUCTION}\n\nQuestion:\n{question}\n\nOptions:\n{options_block(options)}\n\n{_ANSWER_SKELETON}"


def choice_only_prompt(options: Sequence[str]) -> str:
    """The choice-only baseline: the same message with the question section left out."""
    return f"{_INSTRUCTION}\n\nOptions:\n{options_block(options)}\n\n{_ANSWER_SKELETON}"


def loglikelihood_prompt(question: str, options: Sequence[str]) -> str:
    """The log-likelihood variant: question and lettered options, scored on the letter after 'Answer:'."""
    return f"{_INSTRUCTION}\n\nQuestion:\n{question}\n\nOptions:\n{options_block(options)}\n\nAnswer:"


def seed_from_key(item_id: str, model_label: str, seed: int = SHUFFLE_SEED) -> int:
    """The first 64 bits of SHA-256("{seed}:{item_id}:{model_label}") as an integer."""
    return int(hashlib.sha256(f"{seed}:{item_id}:{model_label}".encode()).hexdigest()[:16], 16)


def permutation(item_id: str, model_label: str, n_options: int, seed: int = SHUFFLE_SEED) -> list[int]:
    """``perm[position] = original option index``, exactly as the authors' harness draws it.

    CPython's Mersenne Twister ``shuffle``; numpy or another language gives different orders.
    """
    order = list(range(n_options))
    random.Random(seed_from_key(item_id, model_label, seed)).shuffle(order)
    return order


def shuffled_doc(
    item: Mapping[str, Any],
    benchmark: str,
    release: str,
    model_label: str,
    seed: int = SHUFFLE_SEED,
    model_label_derived: bool = False,
    rotation: int | None = None,
) -> dict[str, Any]:
    """A task doc: the item, its permutation for this model (turned by ``rotation`` places when given:
    :func:`..rotation.rotated`), the shuffled options and the correct letter.

    The doc also carries every setting that can move a score (release, model label and whether it was
    derived from the model's path, shuffle seed), so each logged sample says how it was built.
    """
    perm = permutation(item["id"], model_label, len(item["options"]), seed)
    if rotation is not None:
        perm = rotated(perm, rotation)
    return {
        "benchmark": benchmark,
        "release": release,
        "dimension": DIMENSION_OF[benchmark],
        **item,
        "model_label": model_label,
        "model_label_derived": model_label_derived,
        "shuffle_seed": seed,
        "permutation": perm,
        "shuffled_options": [item["options"][i] for i in perm],
        "correct_position": perm.index(item["target"]),
        "correct_letter": LETTERS[perm.index(item["target"])],
        "system_prompt": SYSTEM_PROMPT,
        **({} if rotation is None else doc_fields(rotation, len(perm))),
    }
