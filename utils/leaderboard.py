"""A leaderboard over runs: per report section, the runs ranked by the headline, the published models, and pairs.

``write_leaderboard(run_paths, out_dir)`` writes ``leaderboard.json`` (schema below), ``leaderboard.md``,
``leaderboard.csv``, ``leaderboard_discordant.jsonl`` and a self-contained ``leaderboard.html`` (a forest plot
per section, and per pair of runs the items where they disagree). Each run folder contributes every
``results_*.json`` under it (each timestamp, each model subfolder).

Disagreements: for every pair and section, the shared items A got right and B wrong and the reverse (the
discordant pairs behind the McNemar counts, :func:`.comparison.discordant_items`). leaderboard.json gives
their counts; ``leaderboard_discordant.jsonl`` lists them, one line per pair and section (each item by its indices
in both runs' items, listed once per run with their ids, predictions and outcomes, :func:`discordant_lines`; at
most :data:`DISCORDANT_PER_PAIR` of each kind per pair; :func:`read_discordant` reads them back); leaderboard.html shows each on its own (the question, both answers side by side, from the scored
runs, :func:`.explorer.pair_record`) and links to each run's report (its item explorer opens the item) and items
file where ``report`` wrote them (:func:`.scored_file.report_folders`), each pair as far as its share of the
page's budget (:func:`.explorer.budget_left`) goes.

Each run is scored once (:func:`.results.score`): the headline numbers are its report's. Every pair of runs
is compared per section by :func:`.comparison.compare_section`, the comparison ``compare`` prints, with
Holm's adjustment over the comparable pairs of that section. Renderers here format those numbers only.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any
from urllib.request import pathname2url

from markupsafe import escape
from tqdm import tqdm

from . import explorer, pages, paper_tables, plots
from .comparison import Discordant, adjust, compare_section, discordant_items, pairing, test_name
from .data import DataError, iter_jsonl, read_json
from .files import jsonl_lines, utf8, write_atomically
from .machine import process_context, usable_cores
from .pages import Html, estimate_attrs, interval
from .redaction import redact_path
from .results import SCHEMA_VERSION as REPORT_SCHEMA_VERSION
from .results import ScoredRun, item_record
from .runs import find_all_results, model_name
from .scored_file import report_folders, score_or_read
from .section import Section, items_file
from .stats import format_estimate
from .text import md

# leaderboard.json's schema; its changes, version by version, are in CHANGELOG.md.
SCHEMA_VERSION = "2.4"
DISCORDANT_FILE = "leaderboard_discordant.jsonl"
# Discordant items of each kind DISCORDANT_FILE lists per pair (each line counts them all and says when it is cut).
DISCORDANT_PER_PAIR = 10_000


# ----------------------------------------------------------------------------- runs and their labels


def _flag(name: str) -> Callable[[Mapping[str, Any]], str | None]:
    return lambda run: None if run.get(name) in (None, {}, "") else f"{name} {json.dumps(run.get(name))}"


# What tells two runs of one model apart, in the order a label names them.
_DISTINGUISHERS: tuple[Callable[[Mapping[str, Any]], str | None], ...] = (
    lambda run: run.get("dtype"),
    lambda run: "chat template" if run.get("chat_template_applied") else "no chat template",
    lambda run: "n-shot " + ",".join(sorted({str(n) for n in (run.get("n_shot") or {}).values()})),
    lambda run: "system instruction" if run.get("system_instruction") else None,
    _flag("gen_kwargs"),
    _flag("limit"),
    lambda run: run.get("date"),
)


def run_labels(provenances: Sequence[Mapping[str, Any]], paths: Sequence[Path]) -> list[str]:
    """Short unique labels: the model's name, then only what tells runs of the same name apart, in the order of
    :data:`_DISTINGUISHERS`, stopping as soon as the runs of that name are told apart (a date only when nothing
    else differs); as a last resort, the results file's folder and name, with as many folders above as it takes
    to tell each apart from the rest (copies of one run in different places)."""
    bases = [model_name(run) for run in provenances]
    labels = list(bases)
    for base in set(bases):
        group = [i for i, other in enumerate(bases) if other == base]
        if len(group) == 1:
            continue
        used: list[Callable[[Mapping[str, Any]], str | None]] = []
        for describe in _DISTINGUISHERS:
            if len({describe(provenances[i]) for i in group}) > 1:
                used.append(describe)
            keys = [tuple(str(d(provenances[i])) for d in used) for i in group]
            if len(set(keys)) == len(group):
                break
        for i in group:
            extras = [str(d(provenances[i])) for d in used if d(provenances[i]) is not None]
            labels[i] = f"{base} ({', '.join(extras)})" if extras else base
    repeated = Counter(labels)
    for label in [label for label, count in repeated.items() if count > 1]:
        group = [i for i, other in enumerate(labels) if other == label]
        names = {i: [*paths[i].parent.parts, paths[i].stem] for i in group}
        for i in group:
            depth = 2  # the folder and the file's name, at the least
            while depth < len(names[i]) and any(names[i][-depth:] == names[j][-depth:] for j in group if j != i):
                depth += 1
            labels[i] = f"{label} [{Path(*names[i][-depth:]).as_posix()}]"
    return labels


def score_runs(
    run_paths: Sequence[str | os.PathLike], workers: int | None = None, tokenizer: str | None = None
) -> Iterator[ScoredRun]:
    """Every run under ``run_paths``, each scored once (or read from its report's scored_run.json when that matches
    it, :mod:`.scored_file`), reply lengths counted as ``tokenizer`` asks, in order, each as soon as it is done: runs
    are scored in parallel, one process per core (each loads a tokenizer once, when a run it scores needs it), while
    the caller works on those already given."""
    paths = list(dict.fromkeys(p.resolve() for path in run_paths for p in find_all_results(path)))
    if not paths:
        raise DataError("no runs given")
    workers = min(workers or usable_cores(), len(paths))
    progress = {"desc": "scoring runs", "unit": "run", "total": len(paths), "disable": len(paths) < 3}
    if workers < 2:
        yield from (score_or_read(path, tokenizer) for path in tqdm(paths, **progress))
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=process_context()) as pool:
        yield from tqdm(pool.map(functools.partial(score_or_read, tokenizer=tokenizer), paths), **progress)


# ----------------------------------------------------------------------------- the leaderboard


def _entry(section_numbers: Mapping[str, Any]) -> dict[str, Any]:
    comparable = section_numbers["paper_comparable"]
    metric = section_numbers["headline_metric"]
    return {
        "estimate": section_numbers.get(metric),
        "n_items": section_numbers["n_items"],
        "full_coverage": section_numbers["full_coverage"],
        "subset": section_numbers["subset"],  # the item set, in words, when not the published one
        "paper_comparable": comparable["value"] is not None,
        "paper_comparable_reason": comparable["reason"],
        # Calibration beside the headline (None: the section has no confidences, or no item had one).
        "ece": (section_numbers.get("calibration") or {}).get("ece"),
        # What another tie-break would make of the headline (log-likelihood sections; None for the others).
        "ties": section_numbers.get("ties"),
    }


def _ranking(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    def value(run_id: str) -> float:
        estimate = runs[run_id]["estimate"]
        return -estimate["value"] if estimate else float("inf")

    return sorted(runs, key=value)


def _ranks(runs: Mapping[str, Mapping[str, Any]]) -> dict[str, int | None]:
    """Each run's rank by its headline, equal headlines sharing one (1, 1, 3); None for a run without a headline."""
    values = {run_id: (entry["estimate"] or {}).get("value") for run_id, entry in runs.items()}
    known = sorted((value for value in values.values() if value is not None), reverse=True)
    first = {}
    for position, value in enumerate(known, start=1):
        first.setdefault(value, position)
    return {run_id: None if value is None else first[value] for run_id, value in values.items()}


# (section, A's id, B's id) -> (A's section, B's section, their discordant items as positions): item records are
# built only for the rows a page shows.
Disagreements = dict[tuple[str, str, str], tuple[Section, Section, Discordant]]


def build(run_paths: Sequence[str | os.PathLike], tokenizer: str | None = None) -> tuple[dict[str, Any], Disagreements]:
    """leaderboard.json, and every pair's discordant items (reply lengths counted as ``tokenizer`` asks)."""
    scored: list[ScoredRun] = []
    # (section, index of A, index of B) -> the pair's comparison and its discordant items. Each run is compared with
    # those before it as soon as it is scored, while the next ones are being scored.
    pairs: dict[tuple[str, int, int], tuple[dict[str, Any], Section, Section, Discordant]] = {}
    for run_b in score_runs(run_paths, tokenizer=tokenizer):
        for name, sb in run_b.sections.items():
            if sb.spec.compared_metric is None:
                continue
            for index_a, run_a in enumerate(scored):
                if name in run_a.sections:
                    sa = run_a.sections[name]
                    paired = pairing(sa, sb)
                    found = discordant_items(sa, sb, paired)
                    compared = compare_section(run_a, run_b, name, paired, found)
                    pairs[(name, index_a, len(scored))] = (compared, sa, sb, found)
        scored.append(run_b)
    ids = [f"run-{index}" for index in range(1, len(scored) + 1)]
    # Paths as the runs' provenance shows them: a credential in a folder name (lm-eval names folders after the
    # model) is masked there.
    shown = [Path(run.provenance["results_file"]) for run in scored]
    labels = run_labels([run.provenance for run in scored], shown)
    names = list(dict.fromkeys(name for run in scored for name in run.sections))
    by_section: dict[str, list[tuple[int, int]]] = {}
    for name, index_a, index_b in sorted(pairs):
        by_section.setdefault(name, []).append((index_a, index_b))
    benchmarks, disagreements = {}, {}
    for name in names:
        present = [(run_id, run) for run_id, run in zip(ids, scored, strict=True) if name in run.sections]
        section = present[0][1].sections[name]
        spec = section.spec
        unavailable = (
            f"no paired comparison for the headline metric {spec.report.headline.value!r}"
            if spec.compared_metric is None
            else None
        )
        comparisons = []
        for index_a, index_b in by_section.get(name, []):
            compared, sa, sb, found = pairs[(name, index_a, index_b)]
            comparisons.append({"a": ids[index_a], "b": ids[index_b], **compared})
            disagreements[(name, ids[index_a], ids[index_b])] = (sa, sb, found)
        adjust(comparisons)
        runs = {run_id: _entry(run.sections[name].numbers) for run_id, run in present}
        benchmarks[name] = {
            "title": spec.title,
            "headline_metric": spec.report.headline.value,
            "compared_metric": section.numbers["compared_metric"],
            "test": test_name(section),
            "comparisons_unavailable": unavailable,
            "ranking": _ranking(runs),
            "ranks": _ranks(runs),
            "runs": runs,
            "published": dict(sorted(spec.published_headlines().items(), key=lambda kv: -kv[1])),  # best first
            "comparisons": comparisons,
        }
    from lm_eval_tasks import __version__

    board = {
        "schema_version": SCHEMA_VERSION,
        "generated_by": f"lm-eval-medical-tasks {__version__}",
        "discordant_file": DISCORDANT_FILE,
        "runs": [
            {
                "id": run_id,
                "label": label,
                "results_file": run.provenance["results_file"],
                "report_folder": report_folder(run.results_path, run.provenance),
                "report_schema_version": REPORT_SCHEMA_VERSION,
                "run": run.provenance,
            }
            for run_id, label, run in zip(ids, labels, scored, strict=True)
        ],
        "benchmarks": benchmarks,
    }
    return board, disagreements


def report_folder(results_path: Path, provenance: Mapping[str, Any]) -> str | None:
    """The first of :func:`report_folders` that holds this run's report, or None (no link to a report of the run).

    A report is this run's when it read the same files: the same results file's name and sha256 and the same
    samples files' sha256s (``provenance``: the run's, as :func:`.runs.run_info` gives it), whether ``report``
    was given the run by a relative or an absolute path. A folder whose own path holds a credential is never
    linked (a link would show it).
    """
    for folder in report_folders(results_path):
        try:
            written = read_json(folder / "report.json")
        except (DataError, OSError):
            continue
        run = written.get("run") if isinstance(written, Mapping) else None
        if (
            isinstance(run, Mapping)
            and isinstance(run.get("results_file"), str)
            and Path(run["results_file"]).name == Path(provenance["results_file"]).name
            and run.get("results_sha256") == provenance["results_sha256"]
            and run.get("samples_sha256") == provenance["samples_sha256"]
            and redact_path(str(folder)) == str(folder)
        ):
            return str(folder)
    return None


_DISCORDANT_KINDS = ("a_only_correct", "b_only_correct")


# Each item of a run's line in leaderboard_discordant.jsonl, a list of these (named once per line, under "fields").
ITEM_FIELDS = ("task", "item_id", "doc_id", "pred", "outcome")
# Each discordant item as :func:`read_discordant` gives it back: the item's ids with both runs' doc_id, prediction
# and outcome.
DISCORDANT_FIELDS = ("task", "item_id", "doc_id_a", "doc_id_b", "pred_a", "pred_b", "outcome_a", "outcome_b")


def discordant_lines(disagreements: Disagreements) -> Iterator[dict[str, Any]]:
    """leaderboard_discordant.jsonl, two kinds of line, one at a time (only one line's lists are held):

    - per section, each run of a pair once, before the first pair that refers to it: ``{"section", "run",
      "fields", "items"}``, its scored items in order, each a list of :data:`ITEM_FIELDS`;
    - per section and pair: ``{"section", "a", "b", "a_only_correct": {"a": [...], "b": [...]},
      "b_only_correct": ...}``, each discordant item as its index in run a's items and in run b's, at most
      :data:`DISCORDANT_PER_PAIR` of each kind (``n_*`` counts them all; ``cut``: some were left out).

    Indices, not the items again: over thousands of pairs the file grows by integers per discordant item, and each
    run's items are listed once. No texts: the page shows the question and both answers, and each run's items
    file holds them whole. :func:`read_discordant` reads it back item by item.
    """
    listed: set[tuple[str, str]] = set()
    for (name, id_a, id_b), (sa, sb, found) in disagreements.items():
        for run_id, section in ((id_a, sa), (id_b, sb)):
            if (name, run_id) not in listed:
                listed.add((name, run_id))
                yield {
                    "section": name,
                    "run": run_id,
                    "fields": list(ITEM_FIELDS),
                    "items": [[i.task, i.item_id, i.doc_id, i.pred, i.outcome] for i in section.items],
                }
        line: dict[str, Any] = {"section": name, "a": id_a, "b": id_b}
        for key in _DISCORDANT_KINDS:
            chosen = getattr(found, key)
            line[key] = {"a": chosen.a[:DISCORDANT_PER_PAIR].tolist(), "b": chosen.b[:DISCORDANT_PER_PAIR].tolist()}
            line[f"n_{key}"] = len(chosen.a)
        line["cut"] = any(line[f"n_{key}"] > DISCORDANT_PER_PAIR for key in _DISCORDANT_KINDS)
        yield line


def _check_indices(in_a: Any, in_b: Any, a: list[dict[str, Any]], b: list[dict[str, Any]]) -> None:
    """A ValueError unless ``in_a`` and ``in_b`` are lists of at most DISCORDANT_PER_PAIR indices (ints, not
    booleans, within each run's items) naming the same item (task and item_id) in both runs."""
    if not (isinstance(in_a, list) and isinstance(in_b, list)) or len(in_a) != len(in_b):
        raise ValueError("indices are not two lists of one length")
    if len(in_a) > DISCORDANT_PER_PAIR:
        raise ValueError(f"more than {DISCORDANT_PER_PAIR} discordant items")
    for i, j in zip(in_a, in_b):
        if type(i) is not int or type(j) is not int or not (0 <= i < len(a) and 0 <= j < len(b)):
            raise ValueError(f"index {i!r} or {j!r} is not an item of the runs")
        if (a[i]["task"], a[i]["item_id"]) != (b[j]["task"], b[j]["item_id"]):
            raise ValueError(f"indices {i} and {j} name different items")


def read_discordant(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """The pair lines of a leaderboard_discordant.jsonl with each discordant item resolved to a dict of
    :data:`DISCORDANT_FIELDS` (the runs' lines it refers to are held, one per section and run); a line that is not
    such a line is a :class:`DataError` naming the file and line."""
    items: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for number, line in iter_jsonl(Path(path)):
        try:
            if "run" in line:
                fields = line["fields"]
                items[(line["section"], line["run"])] = [dict(zip(fields, e, strict=True)) for e in line["items"]]
                continue
            a, b = items[(line["section"], line["a"])], items[(line["section"], line["b"])]
            for key in _DISCORDANT_KINDS:
                _check_indices(line[key]["a"], line[key]["b"], a, b)
                line[key] = [
                    {
                        "task": a[i]["task"],
                        "item_id": a[i]["item_id"],
                        **{
                            f"{field}_{side}": item[field]
                            for side, item in (("a", a[i]), ("b", b[j]))
                            for field in ("doc_id", "pred", "outcome")
                        },
                    }
                    for i, j in zip(line[key]["a"], line[key]["b"], strict=True)
                ]
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise DataError(f"{path}, line {number}: not a line of {DISCORDANT_FILE} ({exc!r})") from exc
        yield line


# ----------------------------------------------------------------------------- rendering

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
                _tie_range(entry.get("ties")),
            ]
        )
    rows += [
        ["", f"{model} (published)", f"{value:.3f}", "", "", "", ""] for model, value in bench["published"].items()
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
    return "\n".join(lines + [f"| {line} |" for line in table]) + "\n"


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


def forest_png(board: Mapping[str, Any], name: str) -> bytes:
    bench, metric = board["benchmarks"][name], board["benchmarks"][name]["headline_metric"]
    return plots.dot_whisker_png(forest_rows(board, name), f"{bench['title']}: {metric}", f"{metric} (95% CI)")


def _span(css: str, text: str, **data: Any) -> Html:
    attributes = "".join(f' data-{k.replace("_", "-")}="{escape(v)}"' for k, v in data.items() if v is not None)
    return Html(f'<span class="{escape(css)}"{attributes}>{escape(text)}</span>')


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
        a_only, b_only = (found.items(sa, sb, key, first) for key in ("a_only_correct", "b_only_correct"))
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
            name, sides["a"], sides["b"], a_only, b_only, share, n_a + n_b, item_record, instructions,
            sa.spec.report.shown_labels,
        )  # fmt: skip
        if data["rows"] or not data["n_total"]:
            heading = (
                f"A = {labels[c['a']]}, B = {labels[c['b']]}: filter, search, click an item for both answers and "
                "links to each run's report (written by python -m lm_eval_tasks report RUN) and items file."
            )
            part["explorer"] = explorer.explorer(f"pairs-{name}-{c['a']}-{c['b']}", data, heading)
        # What the pair takes of the page: its explorer, or the line saying DISCORDANT_FILE lists its items.
        budget[0] -= len(part.get("explorer", part["counts"] + DISCORDANT_FILE).encode("utf-8", "surrogatepass")) + 100
        parts.append(part)
    return parts


def to_html(
    board: Mapping[str, Any], disagreements: Disagreements | None = None, out_dir: str | os.PathLike | None = None
) -> str:
    """leaderboard.html; ``disagreements`` (from :func:`build`) adds each pair's discordant items, with links to
    each run's report relative to ``out_dir``, the page's folder."""
    disagreements = disagreements or {}
    folder = Path(out_dir) if out_dir is not None else None
    sections = []
    for name, bench in board["benchmarks"].items():
        comparable = [c for c in bench["comparisons"] if c["comparable"]]
        flagged = [c for c in bench["comparisons"] if not c["comparable"]]
        instructions = _instructions(name, bench, disagreements)
        sections.append(
            {
                "name": name,
                "title": bench["title"],
                "n_runs": len(bench["runs"]),
                "headline_metric": bench["headline_metric"],
                "ranks": _rank_rows_html(board, name, bench),
                "rank_css": [""] * len(bench["ranking"]) + ["published"] * len(bench["published"]),
                "forest": plots.data_uri(forest_png(board, name)),
                "unavailable": bench["comparisons_unavailable"],
                "comparison_intro": _comparison_intro(bench) if bench["comparisons"] else None,
                "comparable": [
                    [
                        *_pair_row(c)[:6],
                        _span("p-value", p_text(c), a=c["a"], b=c["b"], value=_repr(c["p_value"]), test=c["test"]),
                        _span("holm", p_text(c, "holm_p_value"), a=c["a"], b=c["b"], value=_repr(c["holm_p_value"])),
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

    def page() -> str:
        return pages.render(
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

    # The pairs' explorers share what the rest of the page leaves of its limit.
    budget = [explorer.budget_left(page()), len(disagreements)]
    for section in sections:
        name = section["name"]
        section["disagreements"] = _disagreements(
            board, name, board["benchmarks"][name], disagreements, folder, budget, section["instructions"]
        )
    return page()


def render(
    board: Mapping[str, Any], disagreements: Disagreements | None = None, out_dir: str | os.PathLike | None = None
) -> dict[str, bytes | Iterator[bytes]]:
    """The leaderboard's files; the discordant items' file as lines made while it is written (over thousands of
    pairs it is larger than the rest together)."""
    return {
        "leaderboard.json": utf8(json.dumps(board, indent=2, ensure_ascii=False) + "\n"),
        "leaderboard.md": utf8(to_markdown(board)),
        "leaderboard.csv": utf8(to_csv(board)),
        DISCORDANT_FILE: jsonl_lines(discordant_lines(disagreements or {})),
        "leaderboard.html": utf8(to_html(board, disagreements, out_dir)),
        "leaderboard.tex": utf8(paper_tables.to_latex(board)),
        "methods.md": utf8(paper_tables.to_methods(board)),
    }


def write_leaderboard(
    run_paths: Sequence[str | os.PathLike], out_dir: str | os.PathLike, tokenizer: str | None = None
) -> list[Path]:
    board, disagreements = build(run_paths, tokenizer)
    return write_atomically(out_dir, render(board, disagreements, Path(out_dir).resolve()))
