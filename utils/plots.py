"""Figures shared by the scorecard and the leaderboard (matplotlib, Agg backend, PNG bytes), as data: a
:class:`Figure` is what draws it and its arguments, drawn by :meth:`Figure.png` here or by a :class:`Drawer` in a
second process (:func:`drawn`).

Every label may come from a run (model names, component names): mathtext is switched off so a
``$`` in a name is drawn as text instead of being parsed, and every character is drawn, never as an empty box: in
DejaVu Sans or an installed font with the other scripts' glyphs (:data:`FALLBACK_FONTS`), else as its escape
(:func:`drawable`). Labels, legends and titles are wrapped, never cut, and
the figure grows to hold them (:func:`wrapped`). A number over another item set than the published numbers beside
it (:attr:`Row.subset`) is drawn hollow, in another colour, with the set named beside it.
"""

from __future__ import annotations

import base64
import functools
import io
import sys
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .machine import Forked, process_context, usable_cores

# Characters per line of a wrapped label, legend entry and title.
LABEL_WIDTH, LEGEND_WIDTH, TITLE_WIDTH = 40, 30, 70
# A bound far beyond any real label, so that a hostile name cannot ask for a figure too large to draw (the table
# beside each figure names it whole).
MAX_LABEL_CHARS = 600
_PLAIN_TEXT = {"text.parse_math": False, "text.usetex": False}
# Fonts with the glyphs DejaVu Sans (matplotlib's own) lacks: CJK and other scripts (Debian's fonts-noto-cjk and
# fonts-noto-core). Those installed follow DejaVu Sans in the figures' font list, each character drawn in the first
# that has it (matplotlib >= 3.6 falls back glyph by glyph).
FALLBACK_FONTS = (
    "Noto Sans CJK JP",
    "Noto Sans CJK SC",
    "Noto Sans CJK TC",
    "Noto Sans CJK KR",
    "Noto Sans",
    "Noto Sans Arabic",
    "Noto Sans Hebrew",
    "Noto Sans Devanagari",
    "Noto Sans Thai",
    "Noto Sans Symbols",
    "Noto Sans Symbols2",
)
# Distinguishable marker styles for published models; beyond these all are drawn alike (the table names them).
_MARKERS = ("D", "s", "^", "v", "P", "X", "<", ">", "p", "h")


@dataclass(frozen=True)
class Row:
    """One line of a dot-and-whisker plot: a point, with its CI when it has one."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    # The item set the number is over when it is not the published numbers' set, in words (a report section's
    # "subset": "2 of 5 specialties, 355 of 935 items", "100 of 500 items"); None: the published set.
    subset: str | None = None


def _png(fig: Any, **savefig: Any) -> bytes:
    """The figure's PNG bytes (no software tag, so the same figure gives the same bytes); the figure is closed."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    # The layout is done (tight_layout): the engine it leaves behind would have savefig draw the figure once more,
    # without rendering, before drawing it.
    fig.set_layout_engine(None)
    fig.savefig(buffer, format="png", metadata={"Software": None}, **savefig)
    plt.close(fig)
    return buffer.getvalue()


def wrapped(label: str, width: int = LABEL_WIDTH) -> str:
    """``label`` on lines of at most ``width`` characters (a longer word is broken, never dropped), whitespace
    runs as one space; only past :data:`MAX_LABEL_CHARS` is anything left out, and then it says so."""
    text = " ".join(str(label).split())
    if len(text) > MAX_LABEL_CHARS:
        text = f"{text[:MAX_LABEL_CHARS]}… ({len(text):,} characters)"
    return textwrap.fill(text, width, break_long_words=True, break_on_hyphens=False) or text


RUN_LEGEND = "run (95% CI)"
SUBSET_COLOUR = "darkred"  # no colour of the tab10 cycle the published markers are drawn in
SUBSET_LEGEND = (
    "hollow, dark red: over another item set than the published numbers (the set in [brackets] under its label)"
)


@functools.cache
def font_families() -> tuple[str, ...]:
    """The figures' fonts: DejaVu Sans, then each of :data:`FALLBACK_FONTS` that is installed (matplotlib's font list
    is cached from when it was first made: Noto fonts installed since are added to it)."""
    from matplotlib import font_manager

    known = {font.fname for font in font_manager.fontManager.ttflist}
    for path in font_manager.findSystemFonts():
        if Path(path).name.startswith("NotoSans") and path not in known:
            font_manager.fontManager.addfont(path)
    installed = {font.name for font in font_manager.fontManager.ttflist}
    return ("DejaVu Sans", *(name for name in FALLBACK_FONTS if name in installed))


@functools.cache
def _covered(families: tuple[str, ...]) -> frozenset[int]:
    """The code points one of ``families`` has a glyph for."""
    from matplotlib import font_manager, ft2font

    codes: set[int] = set()
    for family in families:
        path = font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
        codes.update(ft2font.FT2Font(path).get_charmap())
    return frozenset(codes)


def drawable(text: str) -> str:
    """A label as the figures draw it: each character no font of :func:`font_families` has (e.g. CJK where no CJK
    font is installed; a lone surrogate of a name that was not UTF-8) as its escape (``\\u6a21``), never a box."""
    covered = _covered(font_families())
    return "".join(
        char if char == "\n" or ord(char) in covered else char.encode("ascii", "backslashreplace").decode("ascii")
        for char in str(text)
    )


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def plain_text_png(draw: Callable[..., bytes], *args: Any) -> bytes:
    """``draw(*args)`` (a function returning PNG bytes) with mathtext off (labels are the run's text) and the
    fallback fonts (:meth:`Figure.png`)."""
    import matplotlib

    matplotlib.use("Agg")
    with matplotlib.rc_context({**_PLAIN_TEXT, "font.family": list(font_families())}):
        return draw(*args)


@dataclass(frozen=True)
class Figure:
    """A figure as data: the function that draws it (PNG bytes) and its arguments; :meth:`png` draws it here, a
    :class:`Drawer` in another process."""

    draw: Callable[..., bytes]
    args: tuple[Any, ...]

    def png(self) -> bytes:
        return plain_text_png(self.draw, *self.args)


def _import_matplotlib() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401


def _draw_all(figures: Sequence[tuple[Callable[..., bytes], tuple[Any, ...]]]) -> list[bytes | None]:
    """Each figure's PNG (None where drawing it failed): the second half drawn by a process forked from this one,
    which has matplotlib loaded already (:class:`.machine.Forked`), while this one draws the first."""
    if len(figures) < 2:
        return _draw_each(figures)
    half = (len(figures) + 1) // 2
    with Forked(_draw_each, figures[half:]) as second:
        first = _draw_each(figures[:half])
        return first + second.result()


def _draw_each(figures: Sequence[tuple[Callable[..., bytes], tuple[Any, ...]]]) -> list[bytes | None]:
    drawn: list[bytes | None] = []
    for draw, args in figures:
        try:
            drawn.append(Figure(draw, args).png())
        except Exception:  # noqa: BLE001 - drawn again in the report's process, where its error shows
            drawn.append(None)
    return drawn


# How long a report waits for its figures from the drawing process, from the moment it needs them (the whole
# quickstart's take under a second): past it, they are drawn in the report's own process.
DRAW_DEADLINE_S = 120.0


class Drawer:
    """Figures drawn in another process while this one goes on: made early, it imports matplotlib there meanwhile;
    :meth:`draw` sends the figures, :meth:`wait` gives them back as drawn (:func:`drawn`). With one core, or where
    no process can start, it does nothing and figures are drawn in this process."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._pending: list[tuple[list[str], Future[list[bytes | None]]]] = []
        if usable_cores() < 2:
            return
        try:
            self._pool = ProcessPoolExecutor(1, process_context())
            self._pool.submit(_import_matplotlib)
        except (OSError, RuntimeError):  # no process can start (limits, a broken pool): figures are drawn here
            self._pool = None

    def draw(self, figures: Mapping[str, Figure]) -> None:
        """Send ``figures`` (by name) to be drawn, those not sent before."""
        if self._pool is None:
            return
        sent_before = {name for names, _ in self._pending for name in names}
        figures = {name: figure for name, figure in figures.items() if name not in sent_before}
        if not figures:
            return
        try:
            sent = [(figure.draw, figure.args) for figure in figures.values()]
            self._pending.append((list(figures), self._pool.submit(_draw_all, sent)))
        except RuntimeError:  # the worker died (a broken pool): what it did not take is drawn here when asked for
            pass

    def wait(self) -> dict[str, bytes]:
        """Every figure sent, by name, as drawn there (one that failed there, or was not drawn within
        DRAW_DEADLINE_S of this call, is not among them); the process ends, killed if it is past the deadline
        (stopped or deadlocked)."""
        deadline = time.monotonic() + DRAW_DEADLINE_S
        late, drawn = False, {}
        for names, future in self._pending:
            try:
                pngs = future.result(timeout=max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                late = True
                break
            except Exception:  # noqa: BLE001 - drawn again here, where its error shows
                continue
            drawn |= {name: png for name, png in zip(names, pngs, strict=True) if png is not None}
        self._pending = []
        if self._pool is None:
            return drawn
        if late:
            sys.stderr.write(f"figures: the drawing process gave nothing for {DRAW_DEADLINE_S:.0f} s; drawn here\n")
            # No public way to stop a pool's worker before Python 3.14 (terminate_workers): SIGKILL, then drop it.
            for process in list(getattr(self._pool, "_processes", {}).values()):
                process.kill()
            self._pool.shutdown(wait=False, cancel_futures=True)
        else:
            self._pool.shutdown()
        self._pool = None
        return drawn


def drawn(figures: Mapping[str, Figure], drawer: Drawer | None = None) -> dict[str, bytes]:
    """Each figure's PNG, by name: as ``drawer`` drew it (given the figures before), else drawn here."""
    there = drawer.wait() if drawer is not None else {}
    return {name: there[name] if name in there else figure.png() for name, figure in figures.items()}


def dot_whisker_figure(
    rows: Sequence[Row],
    title: str,
    xlabel: str,
    markers: Mapping[str, Sequence[float | None]] | None = None,
    xlim: tuple[float, float] = (0.0, 1.0),
) -> Figure:
    """Rows top to bottom, each a dot with its CI whisker (a hollow diamond when it has no CI);
    ``markers`` adds, per name, one value per row (None: none on that row), e.g. published numbers."""
    return Figure(_dot_whisker, (list(rows), title, xlabel, dict(markers or {}), xlim))


def _dot_whisker(
    rows: Sequence[Row],
    title: str,
    xlabel: str,
    markers: Mapping[str, Sequence[float | None]],
    xlim: tuple[float, float],
) -> bytes:
    import matplotlib.pyplot as plt

    rows = [
        replace(row, label=drawable(row.label), subset=None if row.subset is None else drawable(row.subset))
        for row in rows
    ]
    markers = {drawable(name): values for name, values in markers.items()}
    title, xlabel = drawable(title), drawable(xlabel)
    distinct = len(markers) <= len(_MARKERS)
    labels = [wrapped(row.label) + (f"\n[{wrapped(row.subset)}]" if row.subset else "") for row in rows]
    # Each row as tall as its label's lines; positions run top to bottom.
    pitches = [max(1.0, 0.5 * label.count("\n") + 0.5) for label in labels]
    positions = [sum(pitches) - sum(pitches[: i + 1]) + pitches[i] / 2 for i in range(len(rows))]
    names = {name: wrapped(name, LEGEND_WIDTH) for name in markers}
    legend = [*(names.values() if distinct else ["published models (see table)"]), RUN_LEGEND] if markers else []
    if any(row.subset for row in rows):
        legend.append(wrapped(SUBSET_LEGEND, LEGEND_WIDTH))
    legend_lines = sum(entry.count("\n") + 1 for entry in legend)
    height = 1.3 + 0.38 * max(sum(pitches), 1) + 0.15 * legend_lines
    fig, ax = plt.subplots(figsize=(8.0 if legend else 6.5, height))
    labelled = False
    for y, row in zip(positions, rows, strict=True):
        colour = SUBSET_COLOUR if row.subset else "tab:blue"
        face = "white" if row.subset else colour
        if row.value is None:
            ax.text(xlim[0], y, "  n/a", va="center", ha="left", color="grey", fontsize=8)
        elif row.low is None or row.high is None:
            edge = SUBSET_COLOUR if row.subset else "black"
            ax.plot(row.value, y, marker="D", markerfacecolor="white", markeredgecolor=edge, linestyle="none")
        else:
            ax.errorbar(
                row.value,
                y,
                xerr=[[row.value - row.low], [row.high - row.value]],
                fmt="o",
                color=colour,
                ecolor=colour,
                markerfacecolor=face,
                markeredgewidth=1.5,
                capsize=3,
                markersize=7,
                zorder=3,
                label=None if labelled or row.subset else RUN_LEGEND,
            )
            labelled = labelled or not row.subset
    if any(row.subset for row in rows):
        ax.plot(
            [],
            [],
            linestyle="none",
            marker="o",
            markerfacecolor="white",
            markeredgecolor=SUBSET_COLOUR,
            markeredgewidth=1.5,
            label=wrapped(SUBSET_LEGEND, LEGEND_WIDTH),
        )
    colours = plt.get_cmap("tab10")
    for index, (name, values) in enumerate(markers.items()):
        points = [(v, y) for v, y in zip(values, positions, strict=True) if v is not None]
        if not points:
            continue
        xs, ys = zip(*points, strict=True)
        ax.plot(
            xs,
            ys,
            linestyle="none",
            marker=_MARKERS[index] if distinct else "x",
            color=colours(index % 10) if distinct else "grey",
            alpha=0.8,
            markersize=5,
            label=names[name] if distinct else None,
        )
    if markers and not distinct:
        ax.plot([], [], linestyle="none", marker="x", color="grey", label="published models (see table)")
    ax.set_yticks(positions, labels)
    for tick, row in zip(ax.get_yticklabels(), rows, strict=True):
        if row.subset:
            tick.set_color(SUBSET_COLOUR)
    pad = 0.04 * (xlim[1] - xlim[0])  # points on the limits stay whole
    ax.set_xlim(xlim[0] - pad, xlim[1] + pad)
    ax.set_ylim(-0.2, sum(pitches) + 0.2)
    ax.set_xlabel(wrapped(xlabel, TITLE_WIDTH))
    fig.suptitle(wrapped(title, TITLE_WIDTH), fontsize=11)  # over the figure: long labels leave room
    ax.grid(axis="x", alpha=0.3)
    if legend:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    fig.tight_layout()
    return _png(fig, dpi=110, bbox_inches="tight")  # legend whole


def confusion_figure(bench: Mapping[str, Any]) -> Figure:
    """The confusion matrix of a report's section (gold rows, predicted columns), titled by its ``title``."""
    return Figure(_confusion, (bench,))


def _confusion(bench: Mapping[str, Any]) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cm = bench["confusion_matrix"]
    counts = cm["counts"]
    fig, ax = plt.subplots(figsize=(1.4 + 1.1 * len(cm["predicted"]), 1.2 + 0.9 * len(cm["gold"])))
    image = ax.imshow(counts, cmap="Blues")
    ax.set_xticks(range(len(cm["predicted"])), [drawable(p) for p in cm["predicted"]], rotation=30, ha="right")
    ax.set_yticks(range(len(cm["gold"])), [drawable(g) for g in cm["gold"]])
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    peak = max((max(row) for row in counts), default=0)
    for r, row in enumerate(counts):
        for c, value in enumerate(row):
            ax.text(c, r, str(value), ha="center", va="center", color="white" if value > peak / 2 else "black")
    ax.set_title(drawable(bench["title"]))
    fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    return _png(fig, dpi=120)


def risk_coverage_figure(selective: Mapping[str, Any], title: str) -> Figure:
    """The risk-coverage curve of a report's ``selective`` entry: the error rate among the answered items as the
    least confident are left unanswered (a step per tie group), with the optimal curve's AURC and the AURC in the
    legend; where the section cannot carry it, the reason instead."""
    return Figure(_risk_coverage, (selective, title))


def _risk_coverage(selective: Mapping[str, Any], title: str) -> bytes:
    import matplotlib.pyplot as plt

    points = [p for p in selective.get("curve") or [] if isinstance(p, Mapping)]
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    if points:
        aurc = selective.get("aurc") or {}
        label = f"risk (AURC {aurc.get('value', float('nan')):.3f}; optimal {selective.get('aurc_optimal', 0.0):.3f})"
        # Each point's risk holds from the previous point's coverage up to its own (the area AURC measures).
        ax.step(
            [0.0] + [p["coverage"] for p in points],
            [points[0]["risk"]] + [p["risk"] for p in points],
            where="pre",
            color="tab:red",
            label=label,
        )
        ax.plot([p["coverage"] for p in points], [p["risk"] for p in points], "o", color="tab:red", markersize=3)
        ax.legend(loc="upper left", fontsize=7, frameon=False)
    else:
        reason = drawable(selective.get("reason") or "no item with a confidence")
        ax.text(0.5, 0.5, wrapped(reason, 40), ha="center", va="center", color="grey")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("coverage (share of items answered, most confident first)")
    ax.set_ylabel("risk (error rate among the answered)")
    fig.suptitle(wrapped(drawable(title), 60), fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _png(fig, dpi=110)


def reliability_figure(calibration: Mapping[str, Any], title: str) -> Figure:
    """The reliability diagram of a report's ``calibration`` entry: per confidence bin, accuracy (bars, with the
    bin's item count) against the diagonal of perfect calibration, and the bin's mean confidence (dots)."""
    return Figure(_reliability, (calibration, title))


def _reliability(calibration: Mapping[str, Any], title: str) -> bytes:
    import matplotlib.pyplot as plt

    bins = [b for b in calibration.get("reliability") or [] if isinstance(b, Mapping)]
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfect calibration")
    filled = [b for b in bins if b.get("n")]
    if filled:
        ax.bar(
            [(b["low"] + b["high"]) / 2 for b in filled],
            [b["accuracy"] for b in filled],
            width=[b["high"] - b["low"] for b in filled],
            edgecolor="tab:blue",
            color="tab:blue",
            alpha=0.35,
            label="accuracy in bin",
        )
        ax.plot(
            [b["mean_confidence"] for b in filled],
            [b["accuracy"] for b in filled],
            "o",
            color="tab:blue",
            markersize=4,
            label="(mean confidence, accuracy)",
        )
        for b in filled:
            ax.text((b["low"] + b["high"]) / 2, min(b["accuracy"] + 0.04, 0.96), str(b["n"]), ha="center", fontsize=7)
    else:
        ax.text(0.5, 0.5, "no item with a confidence", ha="center", va="center", color="grey")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xticks([b / 10 for b in range(11)])
    source = drawable(calibration.get("source", ""))
    ax.set_xlabel(wrapped(f"confidence ({source}); numbers: items per bin", TITLE_WIDTH))
    ax.set_ylabel("accuracy")
    ax.legend(loc="upper left", fontsize=7, frameon=False)
    fig.suptitle(wrapped(drawable(title), 60), fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _png(fig, dpi=110)
