"""A leaderboard over runs: every run's headline numbers, the published models, and paired comparisons.

``write_leaderboard(run_paths, out_dir)`` writes ``leaderboard.json`` (schema below), ``leaderboard.md``,
``leaderboard.csv`` and a self-contained ``leaderboard.html`` (forest plot per benchmark). Each run folder
contributes every ``results_*.json`` under it (each timestamp, each model subfolder).

The numbers are the per-run reports' numbers: each run's report is built by the report module itself
(:func:`_load`, the only place this module calls it), and the leaderboard copies its headline estimates.

Every pair of runs is compared per benchmark on the items both scored (paired bootstrap CI of A minus B,
stratified as the report's bootstrap; exact McNemar test on per-item correctness, Holm-adjusted over the
comparable pairs of that benchmark). Pairs whose item sets, tasks, chat-template setting or task versions
differ are flagged "not comparable" with the reasons, and get no p-value: a different protocol is not a
ranking. Benchmarks that score accuracy over answered items only are compared with unanswered items
counted wrong (``accuracy_all_*``), since a paired test needs one denominator for both runs.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import plots, stats
from .data import DataError
from .files import write_atomically
from .runs import find_all_results
from .scorecard import (
    Html,
    attrs,
    esc,
    estimate_attrs,
    fmt_estimate,
    generic,
    interval,
    page,
    published_headline,
    run_label,
    table,
)

SCHEMA_VERSION = "1.0"
_COMPARED_METRICS = ("accuracy_micro", "accuracy_macro")


# ----------------------------------------------------------------------------- the report module, in one place


def _load(results_path: Path) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """One run's report, exactly as the report command builds it, and its scored items per benchmark."""
    from .report import build_with_items
    from .runs import load_run

    report, _details, items = build_with_items(load_run(results_path))
    return report, items


# ----------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class LoadedRun:
    id: str
    label: str
    results_path: Path
    report: dict[str, Any]
    items: dict[str, list[Any]]  # benchmark -> scored items


def _item_key(item: Any) -> tuple:
    """What makes two runs' items the same item. MillerQA docs differ per model (the option shuffle is
    keyed by the model label, and so is the doc hash): its items are matched by their own id."""
    item_id = item.details.get("id") if isinstance(item.details, Mapping) else None
    return (item.task, "id", str(item_id)) if item_id is not None else (item.task, item.doc_id, item.doc_hash)


def _keyed(run: LoadedRun, benchmark: str) -> dict[tuple, Any]:
    keyed: dict[tuple, Any] = {}
    for item in run.items.get(benchmark, []):
        key = _item_key(item)
        if key in keyed:
            raise DataError(f"{run.results_path}: {benchmark} scored item {key} twice; it would be counted twice")
        keyed[key] = item
    return keyed


def load_runs(run_paths: Sequence[str | os.PathLike]) -> list[LoadedRun]:
    paths = list(dict.fromkeys(p.resolve() for path in run_paths for p in find_all_results(path)))
    if not paths:
        raise DataError("no runs given")
    loaded = [(path, *_load(path)) for path in paths]
    bases = [run_label(report["run"]) for _, report, _ in loaded]
    repeated = Counter(bases)
    return [
        LoadedRun(
            f"run-{index}",
            base if repeated[base] == 1 else f"{base} ({path.parent.name}/{path.stem})",
            path,
            report,
            items,
        )
        for index, ((path, report, items), base) in enumerate(zip(loaded, bases, strict=True), start=1)
    ]


# ----------------------------------------------------------------------------- statistics


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment, in the input order: the i-th smallest of m p-values becomes
    max over j <= i of min(1, (m - j + 1) * p_(j))."""
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(sorted(range(len(p_values)), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def compared_metric(bench: Mapping[str, Any]) -> str | None:
    """The metric a pair of runs is compared on: the headline, over all items (see the module notes)."""
    metric = bench.get("headline_metric")
    if metric not in _COMPARED_METRICS:
        return None
    return metric if bench.get("accuracy_over", "all") == "all" else metric.replace("accuracy_", "accuracy_all_")


def _reasons(a: LoadedRun, b: LoadedRun, benchmark: str, only_a: int, only_b: int) -> list[str]:
    bench_a, bench_b = a.report["benchmarks"][benchmark], b.report["benchmarks"][benchmark]
    run_a, run_b = a.report["run"], b.report["run"]
    reasons = []
    if only_a or only_b:
        reasons.append(f"different items: {only_a} only in {a.id}, {only_b} only in {b.id}")
    tasks_a, tasks_b = bench_a.get("tasks", []), bench_b.get("tasks", [])
    if tasks_a != tasks_b:
        reasons.append(f"different tasks (protocol): {a.id} ran {', '.join(tasks_a)}; {b.id} ran {', '.join(tasks_b)}")
    if run_a.get("chat_template_applied") != run_b.get("chat_template_applied"):
        reasons.append(
            f"chat template applied: {run_a.get('chat_template_applied')} in {a.id}, "
            f"{run_b.get('chat_template_applied')} in {b.id}"
        )
    versions_a, versions_b = run_a.get("task_versions") or {}, run_b.get("task_versions") or {}
    changed = [t for t in sorted(set(tasks_a) & set(tasks_b)) if versions_a.get(t) != versions_b.get(t)]
    if changed:
        reasons.append(
            "different task versions: " + ", ".join(f"{t} {versions_a.get(t)} vs {versions_b.get(t)}" for t in changed)
        )
    return reasons


def compare_pair(a: LoadedRun, b: LoadedRun, benchmark: str) -> dict[str, Any]:
    """A minus B on the items both scored; p-values only when the pair is comparable."""
    keyed_a, keyed_b = _keyed(a, benchmark), _keyed(b, benchmark)
    shared = sorted(set(keyed_a) & set(keyed_b), key=str)
    only_a, only_b = len(set(keyed_a) - set(keyed_b)), len(set(keyed_b) - set(keyed_a))
    reasons = _reasons(a, b, benchmark, only_a, only_b)
    bench = a.report["benchmarks"][benchmark]
    metric = compared_metric(bench)
    if metric is None:
        raise ValueError(f"{benchmark}: no paired comparison for the headline metric {bench.get('headline_metric')!r}")
    out: dict[str, Any] = {
        "a": a.id,
        "b": b.id,
        "metric": metric,
        "comparable": not reasons,
        "reasons": reasons,
        "n_paired_items": len(shared),
        "only_in_a": only_a,
        "only_in_b": only_b,
        "difference": None,
        "bootstrap_p_value": None,
        "mcnemar_p_value": None,
        "a_only_correct": None,
        "b_only_correct": None,
        "holm_p_value": None,
    }
    if not shared:
        return out
    items_a, items_b = [keyed_a[k] for k in shared], [keyed_b[k] for k in shared]
    correct_a, correct_b = [i.correct for i in items_a], [i.correct for i in items_b]
    by_gold = a.report.get("bootstrap", {}).get("stratified_by", {}).get(benchmark) == "gold"
    strata = [i.gold if by_gold else i.component for i in items_a]
    if metric.endswith("_micro"):
        statistic_a, statistic_b = stats.mean_of(correct_a), stats.mean_of(correct_b)
    else:
        components = [i.component for i in items_a]
        statistic_a, statistic_b = (
            stats.macro_mean_of(correct_a, components),
            stats.macro_mean_of(correct_b, components),
        )
    result = stats.paired_comparison(
        statistic_a, statistic_b, len(shared), strata, binary_a=correct_a, binary_b=correct_b
    )
    out["difference"] = result.difference.as_dict()
    if not reasons:
        out.update(
            bootstrap_p_value=result.p_value,
            mcnemar_p_value=result.mcnemar_p_value,
            a_only_correct=result.a_only_correct,
            b_only_correct=result.b_only_correct,
        )
    return out


# ----------------------------------------------------------------------------- the leaderboard


def build_leaderboard(run_paths: Sequence[str | os.PathLike]) -> dict[str, Any]:
    runs = load_runs(run_paths)
    names = list(dict.fromkeys(name for run in runs for name in run.report["benchmarks"]))
    benchmarks = {}
    for name in names:
        present = [run for run in runs if name in run.report["benchmarks"]]
        first = present[0].report["benchmarks"][name]
        metric = first.get("headline_metric")
        unavailable = (
            f"no paired comparison for the headline metric {metric!r}"
            if compared_metric(first) is None
            else "no per-item scores"
            if not any(run.items.get(name) for run in present)
            else None
        )
        pairs = [(a, b) for i, a in enumerate(present) for b in present[i + 1 :]]
        comparisons = [] if unavailable else [compare_pair(a, b, name) for a, b in pairs]
        tested = [c for c in comparisons if c["mcnemar_p_value"] is not None]
        for comparison, adjusted in zip(tested, holm([c["mcnemar_p_value"] for c in tested]), strict=True):
            comparison["holm_p_value"] = adjusted
        benchmarks[name] = {
            "title": first.get("title", name),
            "headline_metric": metric,
            "compared_metric": compared_metric(first),
            "comparisons_unavailable": unavailable,
            "runs": {run.id: _headline(run.report["benchmarks"][name]) for run in present},
            "published": {
                str(model): published_headline(numbers, str(metric))
                for model, numbers in (first.get("reference") or {}).items()
                if isinstance(numbers, Mapping)
            },
            "comparisons": comparisons,
        }
    from lm_eval_tasks import __version__

    return {
        "schema_version": SCHEMA_VERSION,
        "generated_by": f"lm-eval-medical-tasks {__version__}",
        "runs": [
            {
                "id": run.id,
                "label": run.label,
                "results_file": str(run.results_path),
                "report_schema_version": run.report.get("schema_version"),
                "run": run.report["run"],
            }
            for run in runs
        ],
        "benchmarks": benchmarks,
    }


def _headline(bench: Mapping[str, Any]) -> dict[str, Any]:
    comparable = bench.get("paper_comparable") or {}
    return {
        "estimate": bench.get(bench.get("headline_metric", "")),
        "n_items": bench.get("n_items"),
        "full_coverage": bench.get("full_coverage"),
        "paper_comparable": comparable.get("value") is not None,
        "paper_comparable_reason": comparable.get("reason"),
    }


# ----------------------------------------------------------------------------- rendering


_SETTINGS = ("model", "model_args", "chat_template_applied", "limit", "lm_eval_version", "date")
_INTRO = (
    "{n} runs; headline numbers with 95% percentile bootstrap CIs, copied from each run's report. *: partial "
    "coverage, not comparable with the paper. Published models have no CI."
)
_PAIR_HEADER = ("A", "B", "items", "difference [95% CI]", "A only correct", "B only correct", "McNemar p", "Holm p")
_FLAGGED_HEADER = ("A", "B", "shared items", "difference [95% CI]", "reasons")
_FLAGGED_NOTE = "Not comparable: no test; the difference is on the shared items only, not a ranking."


def _setting(run: Mapping[str, Any], key: str) -> str:
    value = run.get(key)
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if isinstance(value, (Mapping, list)) else str(value)


def _column(bench: Mapping[str, Any]) -> str:
    return f"{bench['title']} ({bench['headline_metric']})"


def _entries(board: Mapping[str, Any], run_id: str) -> list[Mapping[str, Any] | None]:
    """A run's headline entry per benchmark (None where it did not run that benchmark)."""
    return [bench["runs"].get(run_id) for bench in board["benchmarks"].values()]


def _published(board: Mapping[str, Any]) -> dict[str, list[float | None]]:
    """Each published model's number per benchmark (None where its paper has none)."""
    models = dict.fromkeys(model for bench in board["benchmarks"].values() for model in bench["published"])
    return {model: [bench["published"].get(model) for bench in board["benchmarks"].values()] for model in models}


def _headline_text(entry: Mapping[str, Any] | None) -> str:
    return "-" if entry is None else fmt_estimate(entry["estimate"]) + ("" if entry["paper_comparable"] else " *")


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _comparison_intro(bench: Mapping[str, Any]) -> str:
    tested = sum(c["comparable"] for c in bench["comparisons"])
    return (
        f"A minus B in {bench['compared_metric']} on the items both scored; exact McNemar test on per-item "
        f"correctness, Holm-adjusted over the {tested} comparable pairs."
    )


def _pair_row(c: Mapping[str, Any]) -> list[str]:
    return [
        c["a"],
        c["b"],
        str(c["n_paired_items"]),
        fmt_estimate(c["difference"]),
        _count(c["a_only_correct"]),
        _count(c["b_only_correct"]),
        _p(c["mcnemar_p_value"]),
        _p(c["holm_p_value"]),
    ]


def _flagged_row(c: Mapping[str, Any]) -> list[str]:
    return [c["a"], c["b"], str(c["n_paired_items"]), fmt_estimate(c["difference"]), "; ".join(c["reasons"])]


def to_csv(board: Mapping[str, Any]) -> str:
    """One row per run and per published model; spreadsheet formulas in names are defused with a quote."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    suffixes = ("", "_low", "_high", "_n_items", "_paper_comparable")
    writer.writerow(
        [
            "kind",
            "id",
            "label",
            *_SETTINGS,
            "results_file",
            *(f"{name}{suffix}" for name in board["benchmarks"] for suffix in suffixes),
        ]
    )
    for run in board["runs"]:
        cells = []
        for entry in _entries(board, run["id"]):
            estimate = (entry or {}).get("estimate") or {}
            cells += [
                estimate.get("value", ""),
                estimate.get("low", ""),
                estimate.get("high", ""),
                (entry or {}).get("n_items", ""),
                (entry or {}).get("paper_comparable", ""),
            ]
        settings = [_defuse(_setting(run["run"], key)) for key in _SETTINGS]
        writer.writerow(["run", run["id"], _defuse(run["label"]), *settings, _defuse(run["results_file"]), *cells])
    for model, values in _published(board).items():
        cells = [cell for value in values for cell in ("" if value is None else value, "", "", "", "")]
        writer.writerow(["published", "", _defuse(model), *([""] * len(_SETTINGS)), "", *cells])
    return buffer.getvalue()


def _defuse(text: str) -> str:
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _md(text: Any) -> str:
    """A Markdown table cell: one line, pipes escaped, HTML escaped (Markdown renders raw HTML)."""
    return esc(" ".join(str(text).split())).replace("\\", "\\\\").replace("|", "\\|")


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    return ["| " + " | ".join(map(_md, header)) + " |", "|" + "---|" * len(header)] + [
        "| " + " | ".join(map(_md, row)) + " |" for row in rows
    ]


def to_markdown(board: Mapping[str, Any]) -> str:
    header = ["id", "run", "chat template", "limit", *map(_column, board["benchmarks"].values())]
    rows = [
        [
            run["id"],
            run["label"],
            run["run"].get("chat_template_applied"),
            run["run"].get("limit"),
            *map(_headline_text, _entries(board, run["id"])),
        ]
        for run in board["runs"]
    ]
    rows += [
        ["published", model, "", "", *("-" if v is None else f"{v:.3f}" for v in values)]
        for model, values in _published(board).items()
    ]
    lines = ["# Leaderboard", "", _INTRO.format(n=len(board["runs"])), "", *_md_table(header, rows), "", "Runs:", ""]
    lines += [
        f"- {run['id']}: {_md(run['results_file'])}; model {_md(run['run'].get('model'))} "
        f"{_md(_setting(run['run'], 'model_args'))}"
        for run in board["runs"]
    ]
    for name, bench in board["benchmarks"].items():
        lines += ["", f"## {_md(bench['title'])} (`{name}`)", ""]
        if bench["comparisons_unavailable"]:
            lines.append(f"Runs not compared: {_md(bench['comparisons_unavailable'])}.")
        if bench["comparisons"]:
            lines += [_comparison_intro(bench), ""]
            comparable = [_pair_row(c) for c in bench["comparisons"] if c["comparable"]]
            flagged = [_flagged_row(c) for c in bench["comparisons"] if not c["comparable"]]
            lines += _md_table(_PAIR_HEADER, comparable) + [""] if comparable else []
            lines += [_FLAGGED_NOTE, "", *_md_table(_FLAGGED_HEADER, flagged)] if flagged else []
    return "\n".join(lines) + "\n"


def forest_png(board: Mapping[str, Any], name: str) -> bytes:
    bench = board["benchmarks"][name]
    labels = {run["id"]: run["label"] for run in board["runs"]}
    rows = [
        plots.Row(f"{run_id}: {plots.short(labels[run_id], 38)}", *interval(entry["estimate"]))
        for run_id, entry in bench["runs"].items()
    ]
    published = sorted(((v, m) for m, v in bench["published"].items() if v is not None), reverse=True)
    rows += [plots.Row(f"{plots.short(model, 36)} (published)", value) for value, model in published]
    metric = bench["headline_metric"]
    return plots.dot_whisker_png(rows, f"{bench['title']}: {metric}", f"{metric} (95% CI)")


def _span(css: str, text: str, **data: Any) -> Html:
    return Html(f'<span class="{css}"{attrs(**data)}>{esc(text)}</span>')


def _repr(value: float | None) -> str | None:
    return None if value is None else repr(value)


def to_html(board: Mapping[str, Any]) -> str:
    names = list(board["benchmarks"])
    header = [
        "kind",
        "id",
        "run",
        "chat template",
        "limit",
        *(
            Html(
                f'<a href="#benchmark-{esc(n)}" title="{esc(b["title"])}">{esc(n)}</a><br>'
                f'<span class="muted">{esc(b["headline_metric"])}</span>'
            )
            for n, b in board["benchmarks"].items()
        ),
    ]
    rows, css = [], []
    for run in board["runs"]:
        cells = [
            "-"
            if entry is None
            else Html(
                _span(
                    "headline",
                    fmt_estimate(entry["estimate"]),
                    run=run["id"],
                    benchmark=name,
                    **estimate_attrs(entry["estimate"]),
                )
                + ("" if entry["paper_comparable"] else " *")
            )
            for name, entry in zip(names, _entries(board, run["id"]), strict=True)
        ]
        rows.append(
            ["run", run["id"], run["label"], run["run"].get("chat_template_applied"), run["run"].get("limit"), *cells]
        )
        css.append("")
    for model, values in _published(board).items():
        cells = [
            "-" if v is None else _span("published-value", f"{v:.3f}", model=model, benchmark=n, value=repr(v))
            for n, v in zip(names, values, strict=True)
        ]
        rows.append(["published", "", model, "", "", *cells])
        css.append("published")
    body = [
        "<h1>Leaderboard</h1>",
        (
            f'<p class="muted">{esc(board["generated_by"])}; leaderboard schema {esc(board["schema_version"])}. '
            f"{esc(_INTRO.format(n=len(board['runs'])))}</p>"
        ),
        '<div class="wide">',
        table(header, rows, numeric=tuple(range(5, 5 + len(names))), row_css=css),
        "</div>",
        "<h2>Runs</h2>",
    ]
    body += [
        f"<details><summary>{esc(run['id'])}: {esc(run['label'])} <code>{esc(run['results_file'])}</code>"
        f"</summary>{generic(run['run'])}</details>"
        for run in board["runs"]
    ]
    for name, bench in board["benchmarks"].items():
        forest = plots.data_uri(forest_png(board, name))
        body += [
            f'<section id="benchmark-{esc(name)}"{attrs(benchmark=name)}>',
            f"<h2>{esc(bench['title'])} <code>{esc(name)}</code></h2>",
            f'<img alt="forest plot of {esc(bench["title"])}" src="{forest}">',
        ]
        if bench["comparisons_unavailable"]:
            body.append(f"<p>Runs not compared: {esc(bench['comparisons_unavailable'])}.</p>")
        if bench["comparisons"]:
            body.append(f"<p>{esc(_comparison_intro(bench))}</p>")
        comparable = [c for c in bench["comparisons"] if c["comparable"]]
        if comparable:
            body.append(
                table(
                    _PAIR_HEADER,
                    [
                        [
                            *_pair_row(c)[:6],
                            _span(
                                "mcnemar",
                                _p(c["mcnemar_p_value"]),
                                a=c["a"],
                                b=c["b"],
                                value=_repr(c["mcnemar_p_value"]),
                            ),
                            _span("holm", _p(c["holm_p_value"]), a=c["a"], b=c["b"], value=_repr(c["holm_p_value"])),
                        ]
                        for c in comparable
                    ],
                    numeric=(2, 4, 5, 6, 7),
                )
            )
        flagged = [c for c in bench["comparisons"] if not c["comparable"]]
        if flagged:
            body += [
                f"<p>{esc(_FLAGGED_NOTE)}</p>",
                table(
                    _FLAGGED_HEADER,
                    [
                        [*_flagged_row(c)[:4], _span("not-comparable", "; ".join(c["reasons"]), a=c["a"], b=c["b"])]
                        for c in flagged
                    ],
                    numeric=(2,),
                ),
            ]
        body.append("</section>")
    return page("Leaderboard", "\n".join(body))


def render(board: Mapping[str, Any]) -> dict[str, bytes]:
    return {
        "leaderboard.json": (json.dumps(board, indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
        "leaderboard.md": to_markdown(board).encode("utf-8"),
        "leaderboard.csv": to_csv(board).encode("utf-8"),
        "leaderboard.html": to_html(board).encode("utf-8"),
    }


def write_leaderboard(run_paths: Sequence[str | os.PathLike], out_dir: str | os.PathLike) -> list[Path]:
    return write_atomically(out_dir, render(build_leaderboard(run_paths)))
