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
import os
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

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
    items_written: Forked[dict[str, tuple[Path, str, explorer.ItemsMeasured]]],
    scratch: Path,
    stack: ExitStack,
) -> dict[str, bytes | Iterator[bytes]]:
    """The report's files, in the order they are best written (the items files before the scored run that holds
    their sha256); with a ``drawer``, its figures are drawn in another process while the rest is made.

    The items files are those ``items_written`` wrote into ``scratch`` (a folder of ours; :func:`_items_into`, begun
    while the sections were scored), which also measured each section's rows for the page's item explorer. The
    scored run's body (megabytes) is made by another process into a file in ``scratch`` while this one makes the
    page, and read back as it is written: ``stack`` ends that process once the files are written (or on any
    error)."""
    report = scored.report()
    figures = scorecard.figures(report)
    if drawer is not None:
        drawer.draw(figures)
    files = {
        "report.json": utf8(json.dumps(report, indent=2, ensure_ascii=False) + "\n"),
        "report.md": utf8(to_markdown(report)),
    }
    body = stack.enter_context(Forked(_body_into, scored, scratch)) if scored_file.reusable(scored) else None
    details = scored.item_details()  # while the figures are drawn
    pages.compile_templates()
    drawn = plots.drawn(figures, drawer)
    files |= {name: png for name, png in drawn.items() if name.endswith(".png")}
    written = items_written.result()
    measured = {name: found for name, (_, _, found) in written.items()}
    files["report.html"] = scorecard.render_html(report, details, drawn, measured)
    files |= {items_file(name): _read_back(path) for name, (path, _, _) in written.items()}
    if body is None:
        return files
    return files | {
        scored_file.FILE: scored_file.saved_file(scored, body.result(), {n: h for n, (_, h, _) in written.items()})
    }


def _items_into(
    items: dict[str, tuple[ScoredItem, ...]], folder: Path
) -> dict[str, tuple[Path, str, explorer.ItemsMeasured]]:
    """Each section's items file (one record per item, :func:`.results.item_record`) written into ``folder``: its
    path and sha256, by section name, and what the page's item explorer measures of the records first
    (:func:`.explorer.items_measured`)."""
    written = {}
    for name, section_items in items.items():
        path = folder / items_file(name)
        records = [item_record(item) for item in section_items]
        lines = Hashed(jsonl_lines(records))
        with path.open("wb") as out:
            out.writelines(lines)
        written[name] = (path, lines.hexdigest(), explorer.items_measured(records, scorecard.shown_labels(name)))
    return written


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
            items_written: list[Forked[dict[str, tuple[Path, str, explorer.ItemsMeasured]]]] = []

            def walked(items: dict[str, tuple[ScoredItem, ...]]) -> None:
                if not drawers:
                    drawers.append(plots.Drawer())
                items_written.append(stack.enter_context(Forked(_items_into, items, Path(scratch))))

            scored = score_path(
                path,
                tokenizer,
                lambda name, numbers: drawers[0].draw(scorecard.figures({"benchmarks": {name: numbers}})),
                walked,
            )
            stats.forget_resamples()  # every interval is computed: the page and files only format them
            files = render(scored, drawers[0], items_written[0], Path(scratch), stack)
            written = write_atomically(target, {**files, MANIFEST: utf8(json.dumps(sorted(files)) + "\n")})
    finally:
        for drawer in drawers:
            drawer.wait()
    for name in sorted(before - set(files) - {MANIFEST}):
        (target / name).unlink(missing_ok=True)
    return scored, [path for path in written if path.name != MANIFEST]
