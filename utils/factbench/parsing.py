"""What lm-eval and the report measure on a FActBench generation: its length (README, "Protocol").

Factuality is not measured here: it needs the fact-checker (``python -m lm_eval_tasks factbench-check``),
whose own reply parsers are in :mod:`.factcheck_prompts`.
"""

from __future__ import annotations


def score_generation(reply: str) -> dict[str, float]:
    """``generated_words`` (whitespace-separated words) and ``empty_generation`` (1.0 when there are none).

    The one measure of a reply: lm-eval's ``process_results`` and the report's spec both call it.
    """
    words = len(reply.split())
    return {"generated_words": float(words), "empty_generation": float(words == 0)}
