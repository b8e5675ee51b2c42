"""The report over an lm-eval run (``--output_path`` with ``--log_samples``): a view of its scored run.

:mod:`.results` scores the run once (every number, with its CI); this module writes it:
``report.json`` (the scored run's report, schema in :mod:`.results`), ``report.md`` (:mod:`.report_md`), ``report.html``
(:mod:`.scorecard`), one confusion-matrix PNG per section with gold classes, one reliability diagram
(``reliability_<section>.png``) and one risk-coverage curve (``risk_coverage_<section>.png``) per section with
calibration, and
``items_<section>.jsonl`` (one record per item of every section: :func:`.results.item_record`), all written
atomically (nothing is written unless every input parsed). Nothing here computes a number.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from . import explorer, pages, plots, scorecard, scored_file, stats
from .data import DataError, read_json
from .files import Hashed, jsonl_lines, utf8, write_atomically
from .machine import Forked, collector_paused
from .report_md import to_markdown
from .results import ScoredRun, item_record, score_path
from .runs import find_results
from .scoring import ScoredItem
from .section import items_file


def render(
    scored: ScoredRun,
    drawer: plots.Drawer | None,
    items_made: ItemsProcess,
    scratch: Path,
    stack: ExitStack,
) -> dict[str, bytes | Iterator[bytes]]:
    """The report's files, in the order they are best written (the items files before the scored run that holds
    their sha256); with a ``drawer``, its figures are drawn in another process while the rest is made.

    The items files are those ``items_made`` wrote into ``scratch`` (a folder of ours, begun while the sections were
    scored), whose process also made what the page's item explorers measure first and makes the rows of each
    section's last items for the page (:class:`ItemsProcess`). The scored run's body (megabytes) is made by another
    process into a file in ``scratch`` while this one makes the page, and read back as it is written: ``stack`` ends
    that process once the files are written (or on any error)."""
    report = scored.report()
    figures = scorecard.figures(report)
    if drawer is not None:
        drawer.draw(figures)
    files = {
        "report.json": utf8(json.dumps(report, indent=2, ensure_ascii=False) + "\n"),
        "report.md": utf8(to_markdown(report)),
    }
    body = stack.enter_context(Forked(_body_into, scored, scratch)) if scored_file.reusable(scored) else None
    details = items_made.records_here()  # while the figures are drawn
    pages.compile_templates()
    drawn = plots.drawn(figures, drawer)
    files |= {name: png for name, png in drawn.items() if name.endswith(".png")}
    written = items_made.written()
    measured = {name: found for name, (_, _, found) in written.items()}
    files["report.html"] = scorecard.render_html(report, details, drawn, measured, items_made.elsewhere())
    files |= {items_file(name): _read_back(path) for name, (path, _, _) in written.items()}
    if body is None:
        return files
    return files | {
        scored_file.FILE: scored_file.saved_file(scored, body.result(), {n: h for n, (_, h, _) in written.items()})
    }


Written = dict[str, tuple[Path, str, explorer.ItemsMeasured]]  # by section: an items file, its sha256, its measures


class ItemsProcess:
    """Each section's items file (:func:`_items_into`), written into ``folder`` (a folder of ours) by another process
    while the sections are scored; that process then makes the page's rows of each section's last half of items
    (:class:`_LastRows`, asked through a pipe), while this one makes the first half's. Where no process can start, or
    it ends before it answers, its work is done here: the files and the page are the same."""

    def __init__(self, items: dict[str, tuple[ScoredItem, ...]], folder: Path, stack: ExitStack) -> None:
        self._items, self._folder = items, folder
        self._written: Written | None = None
        here, there = multiprocessing.Pipe()
        running = stack.enter_context(Forked(_items_into, items, folder, there)).running
        there.close()
        self._talk: Connection | None = here
        stack.callback(self._hang_up)  # that process then ends, before the stack ends it
        if not running:
            self._hang_up()
        # Where each section's items are split: the first part's records are made here, the rest's there.
        self.split = {name: len(section) // 2 if running else len(section) for name, section in items.items()}

    def records_here(self) -> dict[str, list[dict[str, Any]]]:
        """Each section's records made here (its first half, or all of them where no other process helps)."""
        return {name: [item_record(item) for item in items[: self.split[name]]] for name, items in self._items.items()}

    def written(self) -> Written:
        """Each section's items file, its sha256, and what the page measures of its records first."""
        if self._written is None:
            self._written = self.receive() or _items_into(self._items, self._folder)
        return self._written

    def elsewhere(self) -> dict[str, explorer.RowsElsewhere]:
        """The rows of each section's last items, where the other process holds them."""
        return {
            name: _LastRows(self, name, items[self.split[name] :])
            for name, items in self._items.items()
            if self.split[name] < len(items)
        }

    def send(self, question: Any) -> bool:
        """Whether ``question`` reached the other process (False: it is gone, or there is none)."""
        if self._talk is not None:
            try:
                self._talk.send(question)
                return True
            except OSError:
                self._hang_up()
        return False

    def receive(self) -> Any:
        """What the other process sends next; None where it is gone, or there is none."""
        if self._talk is not None:
            try:
                return self._talk.recv()
            except (EOFError, OSError):  # it ended: its work is done here from now on
                self._hang_up()
        return None

    def _hang_up(self) -> None:
        if self._talk is not None:
            self._talk.close()
            self._talk = None


class _LastRows:
    """A section's last items, whose page rows the items file's process makes (:class:`.explorer.RowsElsewhere`)."""

    def __init__(self, process: ItemsProcess, name: str, items: tuple[ScoredItem, ...]) -> None:
        self._process, self._name, self._items = process, name, items
        self.n = len(items)

    def ask(self, limit: int) -> Callable[[], tuple[list[bytes], int]]:
        sent = self._process.send((self._name, self._process.split[self._name], limit))

        def answer() -> tuple[list[bytes], int]:
            made = self._process.receive() if sent else None
            if made is not None:
                return made
            measured = self._process.written()[self._name][2]
            return explorer.items_rows_json(
                self.entries(), measured.instructions, limit, scorecard.shown_labels(self._name)
            )

        return answer

    def entries(self) -> list[dict[str, Any]]:
        return [item_record(item) for item in self._items]


def _items_into(
    items: dict[str, tuple[ScoredItem, ...]], folder: Path, talk: Connection | None = None
) -> Written | None:
    """Each section's items file (one record per item, :func:`.results.item_record`) written into ``folder``: its
    path and sha256, by section name, and what the page's item explorer measures of the records first
    (:func:`.explorer.items_measured`). With ``talk`` (in another process), these are sent through it, then the
    page's rows of the records it asks for (section, first record, text limit), until it closes."""
    written: Written = {}
    made = {}
    for name, section_items in items.items():
        path = folder / items_file(name)
        records = [item_record(item) for item in section_items]
        lines = Hashed(jsonl_lines(records))
        with path.open("wb") as out:
            out.writelines(lines)
        written[name] = (path, lines.hexdigest(), explorer.items_measured(records, scorecard.shown_labels(name)))
        made[name] = records
    if talk is None:
        return written
    talk.send(written)
    try:
        while True:
            name, start, limit = talk.recv()
            instructions = written[name][2].instructions
            talk.send(explorer.items_rows_json(made[name][start:], instructions, limit, scorecard.shown_labels(name)))
    except EOFError:  # the report is made
        return None


def _body_into(scored: ScoredRun, folder: Path) -> Path:
    path = folder / "scored_run_body.json"
    with path.open("wb") as out:
        scored_file.write_body(scored, out)
    return path


def _read_back(path: Path, size: int = 1024**2) -> Iterator[bytes]:
    """The file at ``path``, read as it is written."""
    with path.open("rb") as handle:
        while chunk := handle.read(size):
            yield chunk


# What a report folder holds beside the report: the names of the files the report wrote, so that the next report
# into it removes only those (a section no longer in the run, a scored run that cannot be reused), never a file it
# did not write.
MANIFEST = ".report_files.json"


def _files_written_before(target: Path) -> set[str]:
    """The names an earlier report wrote into ``target`` (its manifest); a DataError naming ``target`` when it is a
    symbolic link, not a folder, or a folder holding files no report wrote."""
    if target.is_symlink():
        raise DataError(
            f"{target}: a symbolic link; a report is written only into a folder of its own, not through a link"
        )
    if not target.exists():
        return set()
    if not target.is_dir():
        raise DataError(f"{target}: not a folder")
    manifest = target / MANIFEST
    if not manifest.is_file() or manifest.is_symlink():
        if any(target.iterdir()):
            raise DataError(
                f"{target}: holds files no report wrote (no {MANIFEST}); write the report into a new or empty folder"
            )
        return set()
    names = read_json(manifest)
    if not isinstance(names, list) or not all(
        isinstance(n, str) and n == Path(n).name and n not in ("", ".", "..") for n in names
    ):
        raise DataError(f"{manifest}: not a list of file names")
    return set(names)


def write_report(
    path: str | os.PathLike,
    out_dir: str | os.PathLike | None = None,
    tokenizer: str | None = None,
    drawer: plots.Drawer | None = None,
) -> tuple[ScoredRun, list[Path]]:
    """Write the report of the run at ``path`` (reply lengths counted as ``tokenizer`` asks,
    :func:`.lengths.counter`); the folder then holds exactly this report, no file of an earlier one. Its figures are
    drawn by ``drawer`` (one not used before, started early: its process imports matplotlib meanwhile), else by one
    started once the run is read.

    The folder is ``out_dir`` or ``report/`` beside the results file; it must be new, empty, or one a report wrote
    (:data:`MANIFEST`): a report removes only files it wrote before and never writes through a symbolic link."""
    target = Path(out_dir) if out_dir else find_results(path).parent / "report"
    before = _files_written_before(target)
    # Started once the run is read, where none was given: its process imports matplotlib while the sections are
    # scored, not while the run's two processes read it.
    drawers: list[plots.Drawer] = [] if drawer is None else [drawer]
    try:
        with collector_paused(), tempfile.TemporaryDirectory(prefix="report-") as scratch, ExitStack() as stack:
            # The items files are written by another process while the sections are scored; each section's figures
            # are sent to be drawn as soon as it is scored (scorecard.figures: a section's own numbers make them).
            items_made: list[ItemsProcess] = []

            def walked(items: dict[str, tuple[ScoredItem, ...]]) -> None:
                if not drawers:
                    drawers.append(plots.Drawer())
                items_made.append(ItemsProcess(items, Path(scratch), stack))

            scored = score_path(
                path,
                tokenizer,
                lambda name, numbers: drawers[0].draw(scorecard.figures({"benchmarks": {name: numbers}})),
                walked,
            )
            stats.forget_resamples()  # every interval is computed: the page and files only format them
            files = render(scored, drawers[0], items_made[0], Path(scratch), stack)
            written = write_atomically(target, {**files, MANIFEST: utf8(json.dumps(sorted(files)) + "\n")})
    finally:
        for drawer in drawers:
            drawer.wait()
    for name in sorted(before - set(files) - {MANIFEST}):
        (target / name).unlink(missing_ok=True)
    return scored, [path for path in written if path.name != MANIFEST]
