"""Text handling shared by modules: think blocks (every generative task's answer extraction), Markdown escaping."""

from __future__ import annotations

import html
from typing import Any

_OPEN, _CLOSE = "<think>", "</think>"


def strip_think(reply: str) -> str | None:
    """The reply with every ``<think>...</think>`` block removed, in time linear in its length.

    Blocks are matched left to right, each ``<think>`` with the nearest ``</think>`` after it.
    Returns None when a think block is left open (the model never reached its answer), and also
    for a stray ``</think>`` with no opening tag when the reasoning was cut from the front (some
    chat templates pre-fill ``<think>``): everything before it is reasoning, so only the text
    after the last ``</think>`` is kept.
    """
    kept, position = [], 0
    while (start := reply.find(_OPEN, position)) != -1:
        end = reply.find(_CLOSE, start + len(_OPEN))
        if end == -1:
            return None  # this block, and every later one, is never closed
        kept.append(reply[position:start])
        position = end + len(_CLOSE)
    kept.append(reply[position:])
    without_blocks = "".join(kept)
    if _OPEN in without_blocks:
        return None
    if _CLOSE in without_blocks:
        return without_blocks.rsplit(_CLOSE, 1)[1]
    return without_blocks


def md(text: Any) -> str:
    """Text for Markdown: one line, with <, > and & escaped (a Markdown viewer renders raw HTML; quotes stay quotes),
    pipes escaped."""
    return html.escape(" ".join(str(text).split()), quote=False).replace("\\", "\\\\").replace("|", "\\|")
