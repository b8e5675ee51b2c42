"""Any text as plain LaTeX text (:func:`latex`): run texts (labels, model names, settings) are hostile, and a
table written for a paper must print them as they are.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

# Characters LaTeX reads as markup, and those its default (OT1) fonts print as other characters (< as an inverted
# exclamation mark); [ and * would be read as the optional argument or star of the \\ that ends the row before.
_LATEX = {
    "\\": r"\textbackslash{}",
    "{": r"\{",
    "}": r"\}",
    "$": r"\$",
    "&": r"\&",
    "#": r"\#",
    "^": r"\textasciicircum{}",
    "_": r"\_",
    "~": r"\textasciitilde{}",
    "%": r"\%",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    '"': r"\texttt{\char34}",  # OT1 has straight quotes in its typewriter font only
    "`": r"\texttt{\char96}",
    "[": "{[}",
    "]": "{]}",
    "*": "{*}",
}
# Combining accents pdflatex can set on an ASCII letter (é is e and U+0301 decomposed).
_ACCENTS = {
    "\u0300": "`",
    "\u0301": "'",
    "\u0302": "^",
    "\u0303": "~",
    "\u0304": "=",
    "\u0306": "u",
    "\u0307": ".",
    "\u0308": '"',
    "\u030a": "r",
    "\u030b": "H",
    "\u030c": "v",
    "\u0327": "c",
    "\u0328": "k",
}
_LIGATURE = re.compile(r"([-',])(?=\1)")


def latex(text: Any) -> str:
    """``text`` as LaTeX text that typesets as itself with pdflatex's default fonts: one line (whitespace as one
    space), control and format characters dropped, specials escaped, accents on ASCII letters as accent commands,
    any other character as its code point (``\\texttt{U+4E2D}``: pdflatex stops at a character its fonts lack)."""
    kept = "".join(
        " " if c.isspace() else c for c in str(text) if c.isspace() or unicodedata.category(c) not in ("Cc", "Cf")
    )
    out = []
    for cluster in _clusters(" ".join(kept.split())):
        base = cluster[0]
        if not base.isascii():
            out.append("".join(_code_point(c) for c in cluster))
            continue
        letter = _LATEX.get(base, base)
        for mark in cluster[1:]:  # in order, so that the text reads back mark by mark
            letter = (
                f"\\{_ACCENTS[mark]}{{{letter}}}" if base.isalpha() and mark in _ACCENTS else letter + _code_point(mark)
            )
        out.append(letter)
    # "--" would print as a dash, "''" and ",," as quotes: an empty group between them keeps the characters.
    return _LIGATURE.sub(r"\1{}", "".join(out))


def _code_point(char: str) -> str:
    return f"\\texttt{{U+{ord(char):04X}}}"


def _clusters(text: str) -> list[str]:
    """Each character with the combining marks after it, decomposed (NFD)."""
    clusters: list[str] = []
    for char in unicodedata.normalize("NFD", text):
        if clusters and unicodedata.combining(char):
            clusters[-1] += char
        else:
            clusters.append(char)
    return clusters
