"""The MedFact-Bench user message; the system message is the dataset's own (see lm_eval_tasks/medfact_bench/README.md)."""

from __future__ import annotations


def user_prompt(source: str, claim: str) -> str:
    """The Med-V1 user message, which equals the dataset's ``user_prompt`` column on every row."""
    return f"Article:\n{source}\n\nClaim:\n{claim}"
