"""Reply lengths of a generative section: their distribution and the share that ran into the token budget.

The unit is the command's choice, never what exists on disk when it runs: whitespace-separated words by default;
tokens with ``--tokenizer NAME_OR_FOLDER``, or with ``--tokenizer run`` each run's own tokenizer (its model_args'
``tokenizer=``, else ``pretrained=``). A tokenizer asked for is loaded offline (a local folder or a copy already in
the local Hugging Face cache; nothing is downloaded), once per name (a relative folder: per folder) in a process, and one that cannot be loaded is
a :class:`~.data.DataError` naming it. A reply "hit max_gen_toks" when its re-tokenized length reaches the
request's logged ``max_gen_toks``; re-tokenizing the decoded text can differ from the generated count by a token,
so this is read in tokens only (never guessed from words).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .data import DataError
from .redaction import mask, model_args_value, secret_values

WORDS = "words"
TOKENS = "tokens"
RUN = "run"  # --tokenizer run: each run's own tokenizer


@dataclass(frozen=True)
class LengthCounter:
    """How replies are measured: ``count(text)`` in ``unit``, with the tokenizer's source or why words."""

    unit: str
    count: Callable[[str], int]
    source: str  # the tokenizer loaded, or why lengths are in words (masked: it is written to the report)


def word_count(text: str) -> int:
    return len(text.split())


def choice_key(tokenizer: str | None) -> str:
    """The ``--tokenizer`` choice as a scored run's key holds it, masked (the key is written beside the report); a
    relative folder joined to the working directory, so that another folder of that name elsewhere is another key."""
    if tokenizer is None:
        return WORDS
    return f"{TOKENS}: {mask(tokenizer if tokenizer == RUN else _located(tokenizer))}"


def _located(name: str) -> str:
    """``name`` as a tokenizer is known by: a relative folder joined to the working directory, so that a folder of that
    name elsewhere (or from another working directory of the same process) is another tokenizer; any other name as
    it is. Joined, not resolved: normalising would turn "https://user:pw@h" into "https:/user:pw@h", which the
    masking no longer reads as a URL."""
    return os.path.join(os.getcwd(), name) if not os.path.isabs(name) and os.path.isdir(name) else name


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


@functools.cache
def _token_count(name: str) -> Callable[[str], int]:
    """The token count of the tokenizer ``name``, loaded offline once per process; LookupError when it cannot be
    (not cached: the next call tries again)."""
    if not _may_load_offline(name):
        raise LookupError(name)
    try:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(name, local_files_only=True, trust_remote_code=False)
    except Exception as exc:  # any failure (not installed, not a folder, not cached, a broken file) is the same
        raise LookupError(name) from exc

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return count


def counter(tokenizer: str | None, model_args: Any) -> LengthCounter:
    """How a run's replies are measured under ``--tokenizer`` (None: not given; :data:`RUN`: the run's own, from its
    ``model_args``; else a tokenizer's name or folder); a :class:`~.data.DataError` when it cannot be loaded."""
    if tokenizer is None:
        return LengthCounter(WORDS, word_count, "words: no --tokenizer given (--tokenizer run counts the run's tokens)")
    secrets = secret_values(model_args)
    if not tokenizer.strip():  # not the working directory's tokenizer, which Path("") would name
        raise DataError("--tokenizer: no name given (a tokenizer's name or folder, or 'run')")
    name = tokenizer
    if tokenizer == RUN:
        name = model_args_value(model_args, "tokenizer") or model_args_value(model_args, "pretrained")
        if not isinstance(name, str) or not name.strip():
            raise DataError("--tokenizer run: the run's model_args name no tokenizer= or pretrained=")
    try:
        count = _token_count(_located(name))
    except LookupError as exc:
        raise DataError(
            f"--tokenizer {mask(tokenizer, secrets)!r}: cannot load the tokenizer {mask(name, secrets)!r} offline "
            "(a local folder, or a model in the local Hugging Face cache); without --tokenizer, lengths are in words"
        ) from exc
    return LengthCounter(TOKENS, count, mask(f"tokens: the tokenizer of {name}", secrets))


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
