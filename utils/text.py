"""Text handling shared by every generative task's answer extraction."""

from __future__ import annotations

import re

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)


def strip_think(reply: str) -> str | None:
    """The reply with every ``<think>...</think>`` block removed.

    Returns None when a think block is left open (the model never reached its answer), and also
    for a stray ``</think>`` with no opening tag when the reasoning was cut from the front (some
    chat templates pre-fill ``<think>``): everything before it is reasoning, so only the text
    after the last ``</think>`` is kept.
    """
    without_blocks = _THINK_BLOCK.sub("", reply)
    if "<think>" in without_blocks:
        return None
    if "</think>" in without_blocks:
        return without_blocks.rsplit("</think>", 1)[1]
    return without_blocks
