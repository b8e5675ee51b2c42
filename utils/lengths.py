"""Reply lengths of a generative section: their distribution and the share that ran into the token budget.

Lengths are counted in tokens with the run's own tokenizer when it can be loaded offline (the
``pretrained=`` folder or a copy already in the local Hugging Face cache; nothing is downloaded), else in
whitespace-separated words, and the summary says which and why. A reply "hit max_gen_toks" when its
re-tokenized length reaches the request's logged ``max_gen_toks``; re-tokenizing the decoded text can differ
from the generated count by a token, so this is read in tokens only (never guessed from words).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .redaction import model_args_value

WORDS = "words"
TOKENS = "tokens"


@dataclass(frozen=True)
class LengthCounter:
    """How replies are measured: ``count(text)`` in ``unit``, with the tokenizer's source or why words."""

    unit: str
    count: Callable[[str], int]
    source: str  # the tokenizer loaded, or why lengths are in words


def word_count(text: str) -> int:
    return len(text.split())


def _may_load_offline(name: str) -> bool:
    """Whether a tokenizer named ``name`` could load offline: a local folder, or a repository in the Hugging Face
    cache. Checked before importing transformers, whose import alone costs seconds."""
    try:
        if Path(name).is_dir():
            return True
        from huggingface_hub.constants import HF_HUB_CACHE

        return (Path(HF_HUB_CACHE) / f"models--{name.replace('/', '--')}").is_dir()
    except (OSError, ValueError):  # a name no file system can hold
        return False


def run_counter(model_args: Any) -> LengthCounter:
    """The run's tokenizer (``pretrained=`` of its model_args), loaded offline, else words with the reason."""
    name = model_args_value(model_args, "pretrained") or model_args_value(model_args, "tokenizer")
    if not isinstance(name, str) or not name.strip():
        return LengthCounter(WORDS, word_count, "words: the run names no pretrained model or tokenizer")
    unavailable = LengthCounter(WORDS, word_count, f"words: the tokenizer of {name!r} is not available offline")
    if not _may_load_offline(name):
        return unavailable
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=True)
    except Exception:  # any failure (not installed, not a folder, not cached, a broken file) means words
        # The reason names no exception: a report must not change with how a folder read later is broken.
        return unavailable

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return LengthCounter(TOKENS, count, f"tokens: the tokenizer of {name}")


def summary(lengths: Sequence[int], budgets: Sequence[int | None], counter: LengthCounter) -> dict[str, Any]:
    """The distribution of ``lengths`` (one per reply) and, in tokens, how many reached their reply's budget
    (``budgets``: each request's logged max_gen_toks, None where not logged)."""
    values = np.asarray(lengths, dtype=float)
    distinct_budgets = sorted({b for b in budgets if b is not None})
    out: dict[str, Any] = {
        "unit": counter.unit,
        "unit_source": counter.source,
        "n": len(lengths),
        "mean": float(values.mean()) if len(values) else None,
        **{
            name: float(np.percentile(values, q)) if len(values) else None
            for name, q in (("min", 0), ("p25", 25), ("median", 50), ("p75", 75), ("p90", 90), ("max", 100))
        },
        "max_gen_toks": distinct_budgets,
        "n_max_gen_toks_not_logged": sum(b is None for b in budgets),
    }
    if counter.unit != TOKENS:
        out["hit_max_gen_toks"] = None
        out["hit_max_gen_toks_reason"] = "lengths are in words: hitting the token budget cannot be read"
        return out
    known = [(n, b) for n, b in zip(lengths, budgets, strict=True) if b is not None]
    hits = sum(n >= b for n, b in known)
    out["hit_max_gen_toks"] = {"n": hits, "of": len(known), "share": hits / len(known) if known else None}
    return out
