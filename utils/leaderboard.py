"""A leaderboard over runs, computed: per report section, the runs ranked by the headline, the published models,
and pairs; and the discordant items behind each pair's counts. Its files (JSON, Markdown, CSV, HTML with a forest
plot per section, LaTeX, methods.md) are :mod:`.formats`'s (``write_leaderboard``). Each run folder contributes
every ``results_*.json`` under it (each timestamp, each model subfolder).

Disagreements: for every pair and section, the shared items A got right and B wrong and the reverse (the
discordant pairs behind the McNemar counts, :func:`.comparison.discordant_items`). leaderboard.json gives
their counts; ``leaderboard_discordant.jsonl`` lists them, one line per pair and section (each item by its indices
in both runs' items, listed once per run with their ids, predictions and outcomes, :func:`discordant_lines`; at
most :data:`DISCORDANT_PER_PAIR` of each kind per pair; :func:`read_discordant` reads them back).

Each run is scored once (:func:`.results.score`): the headline numbers are its report's. Every pair of runs
is compared per section by :func:`.comparison.compare_section`, the comparison ``compare`` prints, with
Holm's adjustment over the comparable pairs of that section.
"""

from __future__ import annotations

import functools
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from . import power, redaction, stats
from .comparison import Discordant, adjust, compare_section, discordant_items, pairing, test_name
from .data import DataError, iter_jsonl, read_json
from .machine import usable_cores, worker_pool
from .redaction import redact_path
from .results import SCHEMA_VERSION as REPORT_SCHEMA_VERSION
from .results import ScoredRun
from .runs import find_all_results, model_name
from .scored_file import report_folders, score_or_read
from .scoring import ScoredItem, item_column, outcome_of
from .section import Section

# leaderboard.json's schema; its changes, version by version, are in CHANGELOG.md.
SCHEMA_VERSION = "2.6"
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
    run_paths: Sequence[str | os.PathLike],
    workers: int | None = None,
    tokenizer: str | None = None,
    spool: Path | None = None,
) -> Iterator[ScoredRun]:
    """Every run under ``run_paths``, each scored once (or read from its report's scored_run.json when that matches
    it, :mod:`.scored_file`), reply lengths counted as ``tokenizer`` asks, in order, each as soon as it is done: runs
    are scored in parallel, one process per core (each loads a tokenizer once, when a run it scores needs it), while
    the caller works on those already given. With ``spool`` (a folder of ours), each section's prompts and replies
    are kept in a file there instead of in memory (:meth:`.Section.spool`)."""
    paths = list(dict.fromkeys(p.resolve() for path in run_paths for p in find_all_results(path)))
    if not paths:
        raise DataError("no runs given")
    workers = min(workers or usable_cores(), len(paths))
    progress = {"desc": "scoring runs", "unit": "run", "total": len(paths), "disable": len(paths) < 3}
    scored = functools.partial(score_or_read, tokenizer=tokenizer, spool=spool)
    # The process that scores keeps every resample set of a run and what masking made of its long texts: the next run
    # it scores draws the same sets (MedFact-Bench's 14,274 items and their five components: 228 MB) and holds the
    # same prompts.
    if workers < 2:
        kept = _keep_for_runs((_RUN_RESAMPLES_BYTES, redaction.RUNS_TEXTS))
        try:
            yield from (scored(path) for path in tqdm(paths, **progress))
        finally:
            _keep_for_runs(kept)
        return
    with worker_pool(workers, functools.partial(_keep_for_runs, (_RUN_RESAMPLES_BYTES, redaction.RUNS_TEXTS))) as pool:
        yield from tqdm(pool.map(scored, paths), **progress)


def _keep_for_runs(limits: tuple[int, int]) -> tuple[int, int]:
    """Keep up to ``limits`` (bytes of resample sets, long texts masked) in this process; gives back those replaced."""
    return stats.keep_resamples(limits[0]), redaction.remember_masked(limits[1])


# Resample sets a scoring worker keeps (stats.keep_resamples).
_RUN_RESAMPLES_BYTES = 256 * 1024**2


def _fill_detectable(comparisons: Sequence[dict[str, Any]]) -> None:
    """Each comparison's ``detectable`` (:func:`.power.detectable`), in parallel once every run is scored: a few ms
    each, over thousands of pairs."""
    asked = [c for c in comparisons if c["a_only_correct"] is not None]
    counts = [[c[key] for c in asked] for key in ("n_paired_items", "a_only_correct", "b_only_correct")]
    workers = min(usable_cores(), max(1, len(asked) // _DETECTABLE_PER_WORKER))
    if workers < 2:
        found = list(map(power.detectable, *counts))
    else:
        with worker_pool(workers) as pool:
            found = list(pool.map(power.detectable, *counts, chunksize=_DETECTABLE_PER_WORKER))
    for compared, detectable in zip(asked, found, strict=True):
        compared["detectable"] = detectable


# Below this many pairs per process, a process costs more than it saves.
_DETECTABLE_PER_WORKER = 32


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
        # Selective prediction beside it (None: no confidences, or an AURC the items cannot carry).
        "aurc": (section_numbers.get("selective") or {}).get("aurc"),
        # A rotated section's consistency rate beside it (None: no rotated options, or no complete question).
        "consistency": (section_numbers.get("rotation") or {}).get("consistency"),
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


def build(
    run_paths: Sequence[str | os.PathLike], tokenizer: str | None = None, spool: Path | None = None
) -> tuple[dict[str, Any], Disagreements]:
    """leaderboard.json, and every pair's discordant items (reply lengths counted as ``tokenizer`` asks; the items'
    texts kept in ``spool``, a folder of ours that must outlive the disagreements, when given: :func:`score_runs`)."""
    scored: list[ScoredRun] = []
    # (section, index of A, index of B) -> the pair's comparison and its discordant items. Each run is compared with
    # those before it as soon as it is scored, while the next ones are being scored.
    pairs: dict[tuple[str, int, int], tuple[dict[str, Any], Section, Section, Discordant]] = {}
    for run_b in score_runs(run_paths, tokenizer=tokenizer, spool=spool):
        for name, sb in run_b.sections.items():
            if sb.spec.compared_metric is None:
                continue
            for index_a, run_a in enumerate(scored):
                if name in run_a.sections:
                    sa = run_a.sections[name]
                    paired = pairing(sa, sb)
                    found = discordant_items(sa, sb, paired)
                    compared = compare_section(run_a, run_b, name, paired, found, detectable=False)
                    pairs[(name, index_a, len(scored))] = (compared, sa, sb, found)
        scored.append(run_b)
    _fill_detectable([compared for compared, *_ in pairs.values()])
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
                    "items": _item_rows(section.items),
                }
        line: dict[str, Any] = {"section": name, "a": id_a, "b": id_b}
        for key in _DISCORDANT_KINDS:
            chosen = getattr(found, key)
            line[key] = {"a": chosen.a[:DISCORDANT_PER_PAIR].tolist(), "b": chosen.b[:DISCORDANT_PER_PAIR].tolist()}
            line[f"n_{key}"] = len(chosen.a)
        line["cut"] = any(line[f"n_{key}"] > DISCORDANT_PER_PAIR for key in _DISCORDANT_KINDS)
        yield line


def _item_rows(items: Sequence[ScoredItem]) -> list[list[Any]]:
    """Each item as a list of :data:`ITEM_FIELDS`, from the items' columns (no item is built)."""
    task, item_id, doc_id, pred, correct = (
        item_column(items, name) for name in ("task", "item_id", "doc_id", "pred", "correct")
    )
    return [list(row) for row in zip(task, item_id, doc_id, pred, map(outcome_of, pred, correct), strict=True)]


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
