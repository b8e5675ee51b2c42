"""The page kit of report.html and leaderboard.html: Jinja2 templates (``templates/``, autoescaped) and the
stylesheet and script (``static/``) that each page inlines, so that every page is one self-contained file.

Every value a template prints is escaped unless it is :class:`Html` (markup built by a template or by
:func:`.explorer.script_json`); a page formats the numbers it is given and decides none.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from .files import utf8
from .stats import format_estimate

Html = Markup  # markup that is already safe to place in a page


class Blocks:
    """A page's large blocks (its explorers' data: megabytes each, as UTF-8), each placed by a marker while the page is
    made and written into it once, when the page is whole and encoded (:meth:`filled`). Joined on the way, a block
    would be copied by each concatenation that holds it (the block's own, its fragment's, the page's), and a text that
    holds one character past Latin-1 takes 2 or 4 bytes a character. Markers hold a token of this page's own
    (random): no run text, which the page escapes anyway, can name one."""

    def __init__(self) -> None:
        self._parts: list[list[bytes]] = []
        token = secrets.token_hex(16)
        self._marker = f"<!--block {token} {{}}-->"
        self._markers = re.compile(re.escape(f"<!--block {token} ") + "([0-9]+)-->")

    def place(self, parts: list[bytes]) -> Html:
        self._parts.append(parts)
        return Html(self._marker.format(len(self._parts) - 1))

    def filled(self, text: str) -> bytes:
        """``text`` (a page made while the blocks were placed), as the page's file holds it (:func:`.files.utf8`), with
        each block where its marker stands."""
        whole = []
        for n, piece in enumerate(self._markers.split(text)):
            if n % 2:
                whole += self._parts[int(piece)]
            else:
                whole.append(utf8(piece))
        return b"".join(whole)


_PLACING: ContextVar[Blocks | None] = ContextVar("placing", default=None)


@contextmanager
def blocks_placed() -> Iterator[Blocks]:
    """Large blocks made in the block (:func:`block`) placed by markers, to be filled into the page once it is made
    (:meth:`Blocks.filled`)."""
    blocks = Blocks()
    reset = _PLACING.set(blocks)
    try:
        yield blocks
    finally:
        _PLACING.reset(reset)


def block(parts: list[bytes]) -> Html:
    """Markup in parts of UTF-8 (a data block of megabytes): its marker where a page is being made
    (:func:`blocks_placed`), else the markup itself."""
    blocks = _PLACING.get()
    return Html(b"".join(parts).decode("utf-8")) if blocks is None else blocks.place(parts)


def page_bytes(markup: str) -> int:
    """Bytes of ``markup`` as a page's file holds it: the blocks placed in it filled in (:func:`blocks_placed`)."""
    blocks = _PLACING.get()
    return len(utf8(markup) if blocks is None else blocks.filled(markup))


@cache
def static(name: str) -> str:
    """A file of ``static/`` (the page's CSS, the explorer's script), as text."""
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


@cache
def environment() -> jinja2.Environment:
    """The templates' environment, compiled once per process and never cached on disk: compiled templates are code
    (Jinja2's bytecode cache unpickles and runs them), and compiling all of them costs about 0.1 s."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(__package__, "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals["static"] = static
    _install(env)
    return env


def compile_templates() -> None:
    """Compile every template of :func:`environment` now, not when a page first needs it: for a command that waits
    for something else before it makes its page (the report, for its figures)."""
    env = environment()
    for name in env.list_templates():
        env.get_template(name)


def is_estimate(value: Any) -> bool:
    return isinstance(value, Mapping) and all(key in value for key in ("value", "low", "high"))


def number(value: Any) -> float | None:
    """A report field as a float; None for anything that is not a number (booleans included)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def estimate_attrs(estimate: Any) -> dict[str, Any]:
    """The exact numbers of an estimate for data attributes (``repr`` of each float, as JSON writes it)."""
    if not is_estimate(estimate):
        return {"value": ""}
    return {
        key: repr(number(estimate.get(key))) if number(estimate.get(key)) is not None else ""
        for key in ("value", "low", "high")
    } | ({"n": estimate["n"]} if "n" in estimate else {})


def interval(estimate: Any) -> tuple[float | None, float | None, float | None]:
    if not is_estimate(estimate):
        return None, None, None
    return number(estimate["value"]), number(estimate["low"]), number(estimate["high"])


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _flat(value: Any) -> bool:
    return _scalar(value) or is_estimate(value) or (isinstance(value, (list, tuple)) and all(_scalar(v) for v in value))


def scalar_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(round(value, 6))  # settings such as a timestamp keep every digit before the point
    return str(value)


def shape(value: Any) -> str:
    """How the page's ``generic`` macro shows a JSON value."""
    if is_estimate(value):
        return "estimate"
    if isinstance(value, Mapping):
        if not value:
            return "empty mapping"
        records = list(value.values())
        if len(records) > 1 and all(
            isinstance(r, Mapping) and not is_estimate(r) and all(_flat(v) for v in r.values()) for r in records
        ):
            return "records"
        return "mapping"
    if isinstance(value, (list, tuple)):
        return "scalars" if all(_scalar(v) for v in value) else "list"
    return "scalar"


def record_columns(value: Mapping[str, Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(key for record in value.values() for key in record))


def cell(value: Any) -> str:
    """A number in a table of results: floats to 3 places, None (nothing to average) as n/a."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    return format_estimate(value) if is_estimate(value) else scalar_text(value)


def _small_n(entry: Mapping[str, Any], key: str = "n") -> str:
    return f"{entry.get(key)}" + (" (small: n < 30)" if entry.get("small") else "")


def _install(env: jinja2.Environment) -> None:
    env.filters.update(
        estimate=format_estimate,
        estimate_attrs=estimate_attrs,
        estimate_row=lambda pair: [pair[0], format_estimate(pair[1])],
        cell=cell,
        scalar=scalar_text,
        small_n=_small_n,
        combine=lambda a, b: {**a, **b},
    )
    env.globals.update(shape=shape, record_columns=record_columns)


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def macro(name: str, *args: Any) -> Html:
    """A macro of templates/macros.html.j2 (``generic``, ``span``, ``link``), called: markup for a table's cell."""
    return Html(getattr(environment().get_template("macros.html.j2").module, name)(*args))


def fragment(template: str, **context: Any) -> Html:
    """A template rendered as markup to place inside another page."""
    return Html(render(template, **context))
