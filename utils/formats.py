"""Every format of the leaderboard and of ``compare``: leaderboard.md, leaderboard.csv, a forest plot per section,
the self-contained leaderboard.html, the discordant items' file as its lines, leaderboard.tex and methods.md
(:mod:`.paper_tables`), and ``compare``'s Markdown table. They format the numbers :mod:`.leaderboard` and
:mod:`.comparison` computed, never decide one.

leaderboard.html shows each disagreement on its own (the question, both answers side by side, from the scored
runs, :func:`.explorer.pair_record`) and links to each run's report (its item explorer opens the item) and items
file where ``report`` wrote them (:func:`.scored_file.report_folders`), each pair as far as its share of the
page's budget (:func:`.explorer.budget_left`) goes.
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.request import pathname2url

from . import explorer, pages, paper_tables, plots
from .files import jsonl_lines, utf8, write_atomically
from .leaderboard import DISCORDANT_FILE, Disagreements, build, discordant_lines
from .machine import collector_paused, one_blas_thread
from .pages import Html, estimate_attrs, interval
from .results import item_record
from .runs import model_name
from .section import Section, items_file
from .stats import format_estimate
from .text import md

_SETTINGS = ("model", "model_args", "dtype", "chat_template_applied", "n_shot", "limit", "lm_eval_version", "date")
_INTRO = (
    "{n} runs; per section, runs ranked by the headline with 95% percentile bootstrap CIs (each run's report "
    "numbers). *: not paper-comparable (see the reason in each run's report). Published models have no CI."
)
_RANK_HEADER = (
    "rank",
    "run",
    "headline [95% CI]",
    "items",
    "paper-comparable",
    "ECE [95% CI]",
    "AURC [95% CI]",
    "consistency (rotated) [95% CI]",
    "tied items: headline lowest / expected / highest",
)
_PAIR_HEADER = (
    "A",
    "B",
    "items",
    "difference [95% CI]",
    "A only correct",
    "B only correct",
    "p-value",
    "Holm p",
    "detectable difference (80% power)",
)
_FLAGGED_HEADER = ("A", "B", "shared items", "difference [95% CI]", "reasons")
_FLAGGED_NOTE = "Not comparable: no test; the difference is on the shared items only, not a ranking."


def _setting(run: Mapping[str, Any], key: str) -> str:
    value = run.get(key)
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if isinstance(value, (Mapping, list)) else str(value)


def _labels(board: Mapping[str, Any]) -> dict[str, str]:
    return {run["id"]: run["label"] for run in board["runs"]}


def p_text(pair: Mapping[str, Any], key: str = "p_value") -> str:
    """A p-value as printed: 3 significant digits; a resampling p with no resample beyond 0 as ``< bound``; a pair
    whose bootstrap could not carry its p (few discordant items) names the exact test that gave it."""
    value = pair.get(key)
    if value is None:
        return "-"
    exact = " (exact McNemar: few discordant items)" if pair.get("interval_reason") and key == "p_value" else ""
    if pair.get("p_value_is_bound") and key == "p_value":
        return f"< {value:.2g}"
    return f"{value:.3g}{exact}"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _comparison_intro(bench: Mapping[str, Any]) -> str:
    tested = sum(c["comparable"] for c in bench["comparisons"])
    return (
        f"A minus B in {bench['compared_metric']} on the items both scored; p-value: {bench['test']}; "
        f"Holm-adjusted over the {tested} comparable pairs. Detectable difference: the smallest accuracy difference "
        "an exact McNemar test on these items finds with 80% power at alpha 0.05, given the pair's discordant rate "
        "(none: no difference these items could show)."
    )


def _rank_rows(board: Mapping[str, Any], bench: Mapping[str, Any]) -> list[list[Any]]:
    labels = _labels(board)
    rows = []
    for run_id in bench["ranking"]:
        entry = bench["runs"][run_id]
        rank = bench["ranks"][run_id]
        rows.append(
            [
                "-" if rank is None else str(rank),
                f"{labels[run_id]} ({run_id})",
                format_estimate(entry["estimate"]) + ("" if entry["paper_comparable"] else " *"),
                str(entry["n_items"]),
                "yes" if entry["paper_comparable"] else "no",
                format_estimate(entry.get("ece")) if entry.get("ece") else "-",
                format_estimate(entry.get("aurc")) if entry.get("aurc") else "-",
                format_estimate(entry.get("consistency")) if entry.get("consistency") else "-",
                _tie_range(entry.get("ties")),
            ]
        )
    rows += [
        ["", f"{model} (published)", f"{value:.3f}", "", "", "", "", "", ""]
        for model, value in bench["published"].items()
    ]
    return rows


def _tie_range(ties: Any) -> str:
    """A run's tied items and the headline's range under other tie-breaks ("-": no log-likelihood section)."""
    if not isinstance(ties, Mapping):
        return "-"
    if not ties.get("n_tied") or not isinstance(ties.get("lowest"), Mapping):
        return f"{ties.get('n_tied', 0)}"
    warning = "; could move the headline beyond its CI's half-width" if ties.get("could_move_headline") else ""
    return (
        f"{ties['n_tied']}: {format_estimate(ties['lowest'])} / {format_estimate(ties['expected'])} / "
        f"{format_estimate(ties['highest'])}{warning}"
    )


def _detectable_text(c: Mapping[str, Any]) -> str:
    detectable = c.get("detectable")
    if not isinstance(detectable, Mapping):
        return "-"
    mdd = detectable.get("minimum_detectable_difference")
    return "none" if mdd is None else f"{mdd:.3f}"


def _pair_row(c: Mapping[str, Any]) -> list[str]:
    return [
        c["a"],
        c["b"],
        f"{c['n_paired_items']}{' (small)' if c.get('small') else ''}",
        format_estimate(c["difference"]),
        _count(c["a_only_correct"]),
        _count(c["b_only_correct"]),
        p_text(c),
        p_text(c, "holm_p_value"),
        _detectable_text(c),
    ]


def _flagged_row(c: Mapping[str, Any]) -> list[str]:
    return [c["a"], c["b"], str(c["n_paired_items"]), format_estimate(c["difference"]), "; ".join(c["reasons"])]


def to_csv(board: Mapping[str, Any]) -> str:
    """One row per (run or published model, section); spreadsheet formulas in names are defused with a quote."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        ["kind", "section", "id", "label", "value", "low", "high", "n_items", "paper_comparable", *_SETTINGS, "ece"]
    )
    runs = {run["id"]: run for run in board["runs"]}
    for name, bench in board["benchmarks"].items():
        for run_id in bench["ranking"]:
            entry, run = bench["runs"][run_id], runs[run_id]
            estimate = entry["estimate"] or {}
            writer.writerow(
                [
                    "run",
                    name,
                    run_id,
                    _defuse(run["label"]),
                    estimate.get("value", ""),
                    estimate.get("low", ""),
                    estimate.get("high", ""),
                    entry["n_items"],
                    entry["paper_comparable"],
                    *(_defuse(_setting(run["run"], key)) for key in _SETTINGS),
                    (entry.get("ece") or {}).get("value", ""),
                ]
            )
        for model, value in bench["published"].items():
            writer.writerow(
                ["published", name, "", _defuse(model), value, "", "", "", "", *([""] * len(_SETTINGS)), ""]
            )
    return buffer.getvalue()


def _defuse(text: str) -> str:
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    return ["| " + " | ".join(map(md, header)) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(map(md, row)) + " |" for row in rows
    ]


_COMPARE_HEADER = (
    "section",
    "A [95% CI]",
    "B [95% CI]",
    "paired items",
    "A minus B [95% CI]",
    "test",
    "p",
    "comparable",
    "detectable difference (80% power)",
)


def compare_markdown(comparison: Mapping[str, Any]) -> str:
    """``compare``'s table: per section, each run's number, the paired difference with its test and p-value, whether
    the runs are comparable (else every reason) and the smallest difference the items could show."""
    lines = [
        f"A: {_plain(model_name(comparison['a']))} ({_plain(comparison['a'].get('results_file'))})",
        f"B: {_plain(model_name(comparison['b']))} ({_plain(comparison['b'].get('results_file'))})",
        "",
    ]
    rows = []
    for name, pair in comparison["benchmarks"].items():
        metric = pair.get("metric")
        rows.append(
            [
                f"{name} ({metric})" if metric else name,
                format_estimate(pair.get("a_estimate")),
                format_estimate(pair.get("b_estimate")),
                f"{pair['n_paired_items']}{' (small)' if pair.get('small') else ''}",
                format_estimate(pair.get("difference")),
                pair.get("test") or "-",
                p_text(pair),
                "yes" if pair["comparable"] else "no: " + "; ".join(pair["reasons"]),
                _detectable_text(pair),
            ]
        )
    table = [" | ".join(_COMPARE_HEADER), " | ".join("---" for _ in _COMPARE_HEADER)]
    table += [" | ".join(_plain(cell) for cell in row) for row in rows]
    aurc = [
        _aurc_line(name, pair["aurc_difference"])
        for name, pair in comparison["benchmarks"].items()
        if pair.get("aurc_difference")
    ]
    after = ["", "AURC (selective prediction; lower is better), A minus B, paired bootstrap:", *aurc] if aurc else []
    return "\n".join(lines + [f"| {line} |" for line in table] + after) + "\n"


def _aurc_line(name: str, aurc: Mapping[str, Any]) -> str:
    if aurc.get("reason"):
        return _plain(f"- {name}: not computable: {aurc['reason']}")
    p = "" if aurc.get("p_value") is None else f"; p {p_text(aurc)}"
    return _plain(f"- {name}: {format_estimate(aurc['difference'])} on {aurc['n_paired_items']} shared items{p}")


def _plain(text: Any) -> str:
    """Text for a terminal table: one line, pipes escaped, control characters dropped (names are hostile input)."""
    return "".join(c for c in " ".join(str(text).split()) if c.isprintable()).replace("|", "\\|")


def to_markdown(board: Mapping[str, Any]) -> str:
    lines = ["# Leaderboard", "", _INTRO.format(n=len(board["runs"])), "", "Runs:", ""]
    lines += [
        f"- {run['id']}: {md(run['label'])}; {md(run['results_file'])}; model {md(run['run'].get('model'))} "
        f"{md(_setting(run['run'], 'model_args'))}"
        for run in board["runs"]
    ]
    for name, bench in board["benchmarks"].items():
        lines += ["", f"## {md(bench['title'])} (`{name}`): {bench['headline_metric']}", ""]
        lines += _md_table(_RANK_HEADER, _rank_rows(board, bench))
        if bench["comparisons_unavailable"]:
            lines += ["", f"Runs not compared: {md(bench['comparisons_unavailable'])}."]
        if bench["comparisons"]:
            lines += ["", md(_comparison_intro(bench)), ""]
            comparable = [_pair_row(c) for c in bench["comparisons"] if c["comparable"]]
            flagged = [_flagged_row(c) for c in bench["comparisons"] if not c["comparable"]]
            lines += _md_table(_PAIR_HEADER, comparable) + [""] if comparable else []
            lines += [_FLAGGED_NOTE, "", *_md_table(_FLAGGED_HEADER, flagged)] if flagged else []
    return "\n".join(lines) + "\n"


def forest_rows(board: Mapping[str, Any], name: str) -> list[plots.Row]:
    """The forest plot's rows of section ``name``: the runs ranked, each marked with its item set when that is not
    the published one, then the published models."""
    bench = board["benchmarks"][name]
    labels = _labels(board)
    rows = [
        plots.Row(
            f"{run_id}: {labels[run_id]}",
            *interval(bench["runs"][run_id]["estimate"]),
            subset=bench["runs"][run_id]["subset"],
        )
        for run_id in bench["ranking"]
    ]
    published = sorted(((v, m) for m, v in bench["published"].items()), reverse=True)
    return rows + [plots.Row(f"{model} (published)", value) for value, model in published]


def forest_figures(board: Mapping[str, Any]) -> dict[str, plots.Figure]:
    """Each section's forest plot (:func:`forest_rows`), by section name."""
    return {
        name: plots.dot_whisker_figure(
            forest_rows(board, name),
            f"{bench['title']}: {bench['headline_metric']}",
            f"{bench['headline_metric']} (95% CI)",
        )
        for name, bench in board["benchmarks"].items()
    }


def _span(css: str, text: str, **data: Any) -> Html:
    return pages.macro("span", css, text, data)


def _repr(value: float | None) -> str | None:
    return None if value is None else repr(value)


def _rank_rows_html(board: Mapping[str, Any], name: str, bench: Mapping[str, Any]) -> list[list[Any]]:
    rows = _rank_rows(board, bench)
    for row, run_id in zip(rows, bench["ranking"], strict=False):
        entry = bench["runs"][run_id]
        row[2] = _span("headline", row[2], run=run_id, benchmark=name, **estimate_attrs(entry["estimate"]))
    for row, (model, value) in zip(rows[len(bench["ranking"]) :], bench["published"].items(), strict=True):
        row[2] = _span("published-value", row[2], model=model, benchmark=name, value=repr(value))
    return rows


def _href(folder: str, name: str, out_dir: Path | None) -> str:
    """A link from the leaderboard page to ``name`` in a run's report folder: relative when the page's folder is
    known (the pair of folders can move together), else a file URI."""
    target = Path(folder) / name
    if out_dir is None:
        return target.resolve().as_uri() if target.is_absolute() else pathname2url(str(target))
    return pathname2url(os.path.relpath(target, out_dir))


# The discordant items of each kind, per pair, that a section's instructions are read from (the first, which the
# page shows).
INSTRUCTION_SAMPLE = 8


def _instructions(name: str, bench: Mapping[str, Any], disagreements: Disagreements) -> dict[str, Any]:
    """Each task's instruction that the prompts of section ``name``'s discordant items begin with (both runs' prompts
    of the first :data:`INSTRUCTION_SAMPLE` of each kind, per pair): a prompt that does not begin with it is shown
    whole."""
    prompts: dict[str, list[Any]] = {}
    for c in bench["comparisons"]:
        pair = disagreements.get((name, c["a"], c["b"]))
        if pair is None:
            continue
        sa, sb, found = pair
        for key in ("a_only_correct", "b_only_correct"):
            for item_a, item_b in found.items(sa, sb, key, INSTRUCTION_SAMPLE):
                prompts.setdefault(item_a.task, []).extend((item_a.prompt, item_b.prompt))
    return explorer.shared_instructions(prompts)


def _record(entry: tuple[Section, int]) -> dict[str, Any]:
    section, position = entry
    return item_record(section.item(position))


def _disagreements(
    board: Mapping[str, Any],
    name: str,
    bench: Mapping[str, Any],
    disagreements: Disagreements,
    out_dir: Path | None,
    budget: list[int],
    instructions: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """Per pair, the items where one run is right and the other wrong, each by its question after ``instructions``
    (:func:`_instructions`); each pair's explorer gets an equal share of what is left of the page's budget
    (``budget``: [bytes left, pairs left])."""
    runs = {run["id"]: run for run in board["runs"]}
    labels = _labels(board)
    parts = []
    for c in bench["comparisons"]:
        pair = disagreements.get((name, c["a"], c["b"]))
        if pair is None:
            continue
        sa, sb, found = pair
        n_a, n_b = len(found.a_only_correct.a), len(found.b_only_correct.a)
        share = budget[0] // max(budget[1], 1)
        budget[1] -= 1
        part = {
            "a": c["a"],
            "b": c["b"],
            "counts": f"{c['a']} vs {c['b']}: A right, B wrong: {n_a}; B right, A wrong: {n_b}",
        }
        first = share // explorer.MIN_PAIR_ROW + 1  # no more of each kind fit in the pair's share
        # Each item read (its texts from the spool, where kept there) only when its row is built: most never are.
        a_only, b_only = (
            [((sa, i), (sb, j)) for i, j in found.positions(key, first)] for key in ("a_only_correct", "b_only_correct")
        )
        sides = {
            side: {
                "id": run_id,
                "label": labels[run_id],
                **(
                    {
                        "report": _href(runs[run_id]["report_folder"], "report.html", out_dir),
                        "items": _href(runs[run_id]["report_folder"], items_file(name), out_dir),
                    }
                    if runs[run_id]["report_folder"]
                    else {"report": None, "items": None}
                ),
            }
            for side, run_id in (("a", c["a"]), ("b", c["b"]))
        }
        data = explorer.pairs_data(
            name, sides["a"], sides["b"], a_only, b_only, share, n_a + n_b, _record, instructions,
            sa.spec.report.shown_labels,
        )  # fmt: skip
        if data["rows"] or not data["n_total"]:
            heading = (
                f"A = {labels[c['a']]}, B = {labels[c['b']]}: filter, search, click an item for both answers and "
                "links to each run's report (written by python -m lm_eval_tasks report RUN) and items file."
            )
            part["explorer"] = explorer.explorer(f"pairs-{name}-{c['a']}-{c['b']}", data, heading)
        # What the pair takes of the page: its explorer, or the line saying DISCORDANT_FILE lists its items.
        budget[0] -= pages.page_bytes(part.get("explorer", part["counts"] + DISCORDANT_FILE)) + 100
        parts.append(part)
    return parts


def to_html(
    board: Mapping[str, Any],
    disagreements: Disagreements | None = None,
    out_dir: str | os.PathLike | None = None,
    drawer: plots.Drawer | None = None,
) -> bytes:
    """leaderboard.html (UTF-8); ``disagreements`` (from :func:`build`) adds each pair's discordant items, with links to
    each run's report relative to ``out_dir``, the page's folder; the forest plots as ``drawer`` drew them (sent
    :func:`forest_figures` before), else drawn here."""
    disagreements = disagreements or {}
    folder = Path(out_dir) if out_dir is not None else None
    shared = {name: _instructions(name, bench, disagreements) for name, bench in board["benchmarks"].items()}
    forests = plots.drawn(forest_figures(board), drawer)
    with pages.blocks_placed() as blocks:
        sections = []
        for name, bench in board["benchmarks"].items():
            comparable = [c for c in bench["comparisons"] if c["comparable"]]
            flagged = [c for c in bench["comparisons"] if not c["comparable"]]
            instructions = shared[name]
            sections.append(
                {
                    "name": name,
                    "title": bench["title"],
                    "n_runs": len(bench["runs"]),
                    "headline_metric": bench["headline_metric"],
                    "ranks": _rank_rows_html(board, name, bench),
                    "rank_css": [""] * len(bench["ranking"]) + ["published"] * len(bench["published"]),
                    "forest": plots.data_uri(forests[name]),
                    "unavailable": bench["comparisons_unavailable"],
                    "comparison_intro": _comparison_intro(bench) if bench["comparisons"] else None,
                    "comparable": [
                        [
                            *_pair_row(c)[:6],
                            _span("p-value", p_text(c), a=c["a"], b=c["b"], value=_repr(c["p_value"]), test=c["test"]),
                            _span(
                                "holm", p_text(c, "holm_p_value"), a=c["a"], b=c["b"], value=_repr(c["holm_p_value"])
                            ),
                            _detectable_text(c),
                        ]
                        for c in comparable
                    ],
                    "flagged": [
                        [*_flagged_row(c)[:4], _span("not-comparable", "; ".join(c["reasons"]), a=c["a"], b=c["b"])]
                        for c in flagged
                    ],
                    "disagreements": [],
                    "instructions": instructions,
                    "instructions_data": explorer.instructions_data(f"instructions-{name}-data", instructions),
                }
            )

        def page() -> bytes:
            return blocks.filled(
                pages.render(
                    "leaderboard.html.j2",
                    intro=_INTRO.format(n=len(board["runs"])),
                    origin=f"{board['generated_by']}; leaderboard schema {board['schema_version']}",
                    sections=sections,
                    runs=board["runs"],
                    rank_header=_RANK_HEADER,
                    pair_header=_PAIR_HEADER,
                    flagged_header=_FLAGGED_HEADER,
                    flagged_note=_FLAGGED_NOTE,
                    discordant_file=DISCORDANT_FILE,
                    script=explorer.script_tag() if disagreements else None,
                )
            )

        # The pairs' explorers share what the rest of the page leaves of its limit.
        budget = [explorer.budget_left(page()), len(disagreements)]
        for section in sections:
            name = section["name"]
            section["disagreements"] = _disagreements(
                board, name, board["benchmarks"][name], disagreements, folder, budget, section["instructions"]
            )
        return page()


def render(
    board: Mapping[str, Any],
    disagreements: Disagreements | None = None,
    out_dir: str | os.PathLike | None = None,
    drawer: plots.Drawer | None = None,
) -> dict[str, bytes | Iterator[bytes]]:
    """The leaderboard's files; the discordant items' file as lines made while it is written (over thousands of
    pairs it is larger than the rest together); the forest plots as in :func:`to_html`."""
    return {
        "leaderboard.json": utf8(json.dumps(board, indent=2, ensure_ascii=False) + "\n"),
        "leaderboard.md": utf8(to_markdown(board)),
        "leaderboard.csv": utf8(to_csv(board)),
        DISCORDANT_FILE: jsonl_lines(discordant_lines(disagreements or {})),
        "leaderboard.html": to_html(board, disagreements, out_dir, drawer),
        "leaderboard.tex": utf8(paper_tables.to_latex(board)),
        "methods.md": utf8(paper_tables.to_methods(board)),
    }


def write_leaderboard(
    run_paths: Sequence[str | os.PathLike], out_dir: str | os.PathLike, tokenizer: str | None = None
) -> list[Path]:
    # The runs' texts are kept on disk while the board is built and its pages read the rows they show. The runs and
    # pairs are scored in worker processes, one per core. The forest plots are drawn by another process, started
    # before any run is held (it imports matplotlib meanwhile), while this one makes the other files.
    drawer = plots.Drawer()
    try:
        with tempfile.TemporaryDirectory(prefix="leaderboard-texts-") as spool, collector_paused(), one_blas_thread():
            board, disagreements = build(run_paths, tokenizer, Path(spool))
            drawer.draw(forest_figures(board))
            return write_atomically(out_dir, render(board, disagreements, Path(out_dir).resolve(), drawer))
    finally:
        drawer.wait()
