"""Text handling shared by modules: think blocks (every generative task's answer extraction), Markdown escaping."""

from __future__ import annotations

import html
import re
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


# What makes Markdown of a text, each written with a backslash (which CommonMark and GitHub read as the character
# itself): a backslash, a table cell's pipe, code, strikethrough and GitHub's e-mail links always; emphasis only
# where a '*' or '_' touches a word as a delimiter does (a lone ' * ' marker and snake_case stay as they are); a
# link or an image only where a ']' runs into its target ('](' or '][': a text placed inside a line can define no
# reference, so a '[...]' alone is text).
_MARKDOWN_SYNTAX = re.compile(
    r"[\\`~|@]|\*(?=\S)|(?<=\S)\*|(?<![A-Za-z0-9])_(?=\S)|(?<=\S)_(?![A-Za-z0-9])|\](?=[(\[])"
)
# What GitHub turns into a link without any syntax (its autolink extension): broken by an escaped character.
_BARE_LINK = re.compile(r"(?i)(?<=[a-z])://|(?<![a-z0-9])www\.")


def md(text: Any) -> str:
    """A text for Markdown, placed inside a line, rendered as the text it is: one line; <, > and & as entities (a
    Markdown viewer renders raw HTML; quotes stay quotes); what would make a link, an image, emphasis, code,
    strikethrough or a table cell backslash-escaped (:data:`_MARKDOWN_SYNTAX`); a bare URL or www. address broken
    so that it is no link."""
    one_line = html.escape(" ".join(str(text).split()), quote=False)
    escaped = _MARKDOWN_SYNTAX.sub(lambda match: "\\" + match.group(), one_line)
    return _BARE_LINK.sub(lambda match: match.group().replace("/", "\\/").replace(".", "\\."), escaped)
