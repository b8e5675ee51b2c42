"""The page kit of report.html and leaderboard.html: Jinja2 templates (``templates/``, autoescaped) and the
stylesheet and script (``static/``) that each page inlines, so that every page is one self-contained file.

Every value a template prints is escaped unless it is :class:`Html` (markup built by a template or by
:func:`.explorer.script_json`); a page formats the numbers it is given and decides none.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

Html = Markup  # markup that is already safe to place in a page


@cache
def static(name: str) -> str:
    """A file of ``static/`` (the page's CSS, the explorer's script), as text."""
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(__package__, "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.globals["static"] = static
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def fragment(template: str, **context: Any) -> Html:
    """A template rendered as markup to place inside another page."""
    return Html(render(template, **context))
