"""FActBench in the shared report (README, "In the report"): its generations, and its fact-check when one is found.

The shared report forms its numbers from one :class:`~..scoring.ScoredItem` per logged sample. A
FActBench generation has no gold answer, so its item records what lm-eval measures (the same
:func:`~.parsing.score_generation`): reply length and empty replies, as rates per task, with the
coverage of the paper's item counts. "Accuracy" there is the share of non-empty replies.

The benchmark's scores are the fact-check's. :func:`factcheck_section` rebuilds them from the
saved verdicts of a ``factbench-check`` folder (no model call): ``$MEDEVAL_FACTBENCH_CHECK_DIR``
when set, else ``factcheck/`` beside the run's results file (where ``factbench-check`` writes by
default). A folder that checked another run is reported as such, never mixed in.
:func:`factcheck_markdown` renders the section.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..runs import Run
from ..samples import logged_reply
from ..scoring import INVALID, BenchmarkSpec, Headline, Protocol, Report, ScoredItem, scored_item
from .constants import NAME, PUBLISHED_COUNTS, PUBLISHED_NUMBERS, TASK_NAMES, TASKS, task_component
from .parsing import score_generation
from .records import CHECK_FILE, CHECK_FOLDER, read_check_folder
from .tables import INCOMPLETE_NOTE, build_report, config_lines, count_table_lines, score_table_lines

ANSWERED = "answered"  # the "gold" of every FActBench item: a reply to check
NON_EMPTY = "non_empty_reply"  # the parse step: a reply with at least one word is answered
CHECK_DIR_ENV = "MEDEVAL_FACTBENCH_CHECK_DIR"


def score_sample(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    measures = score_generation(logged_reply(sample))
    answered = not measures["empty_generation"]
    return scored_item(
        task,
        sample,
        component=task_component(task),
        gold=ANSWERED,
        pred=ANSWERED if answered else INVALID,
        extras=measures,
        parse_step=NON_EMPTY if answered else "",
        invalid_reason=None if answered else "the reply is empty (no word to fact-check)",
    )


def settings_of(sample: Mapping[str, Any]) -> dict[str, Any]:
    """Where the item came from (a pinned hub copy or a local file): another source, other items."""
    return {"source": sample["doc"]["source"]}


# ----------------------------------------------------------------------------- the fact-check section


def factcheck_folder(run: Run) -> Path:
    given = os.environ.get(CHECK_DIR_ENV)
    return Path(given).expanduser() if given else run.results_path.parent / CHECK_FOLDER


def _run_doc_hashes(run: Run) -> dict[tuple[str, int], str]:
    return {
        (task_component(task), int(sample["doc_id"])): sample.get("doc_hash", "")
        for task in run.samples
        if task_component(task)
        for sample in run.samples[task]
    }


def _other_run(run: Run, checked_run: Mapping[str, Any], checked: Mapping[tuple[str, int], str]) -> str | None:
    """Why the saved check is not of this run, or None when it is."""
    recorded = checked_run.get("results_file")
    if recorded and Path(recorded).name != run.results_path.name:
        return f"it checked {recorded}, not this run's {run.results_path}"
    in_run = _run_doc_hashes(run)
    for (task, doc_id), doc_hash in checked.items():
        if in_run.get((task, doc_id)) != doc_hash:
            return f"it checked {task} doc {doc_id} (doc_hash {doc_hash!r}), which this run does not hold"
    return None


def factcheck_section(run: Run, folder: str | Path | None = None) -> dict[str, Any]:
    """The fact-check scores of ``run``, rebuilt from a saved ``factbench-check`` folder, or why there are none."""
    folder = Path(folder) if folder is not None else factcheck_folder(run)
    if not (folder / CHECK_FILE).is_file():
        return {
            "status": "missing",
            "folder": str(folder),
            "reason": f"no factbench-check output in {folder}: run python -m lm_eval_tasks factbench-check "
            f"{run.results_path.parent} --judge ... (or set {CHECK_DIR_ENV} to its --out folder)",
        }
    result, checked_run = read_check_folder(folder)
    mismatch = _other_run(run, checked_run, {(g.task, g.doc_id): g.doc_hash for g in result.generations})
    if mismatch:
        return {"status": "other run", "folder": str(folder), "reason": f"not reported: {mismatch}"}
    report, _ = build_report(result, run=checked_run)
    in_run = {task: len(run.samples.get(TASK_NAMES[task], [])) for task in TASKS}
    return {
        "status": "ok",
        "folder": str(folder),
        "factcheck_version": report["factcheck_version"],
        "config": {key: result.config[key] for key in ("decomposer", "cot", "nli", "passage_store")},
        "coverage": {
            task: {
                "published": PUBLISHED_COUNTS[task],
                "in_run": in_run[task],
                "checked": entry["generations"],
                "complete": entry["generations"] == PUBLISHED_COUNTS[task],
            }
            for task, entry in report["table"].items()
        },
        "table": report["table"],
        "bootstrap": report["bootstrap"],
    }


def factcheck_markdown(section: Mapping[str, Any]) -> list[str]:
    lines = ["", f"### Fact-check (`{section['folder']}`)", ""]
    if section["status"] != "ok":
        return lines + [f"- {section['status']}: {section['reason']}"]
    lines += [
        f"- rebuilt from the saved verdicts (fact-checker {section['factcheck_version']}; no model call)",
        *config_lines(section["config"]),
        "- scores: % of supported atomic facts per generation, mean over scored generations, 95% percentile "
        f"bootstrap CI ({section['bootstrap']['n_resamples']} resamples over generations)",
        "",
        "| task | published | in the run | checked | complete |",
        "|---|---:|---:|---:|---|",
        *(
            f"| {section['table'][task]['title']} | {c['published']} | {c['in_run']} | {c['checked']} | "
            f"{'yes' if c['complete'] else 'no'} |"
            for task, c in section["coverage"].items()
        ),
        "",
        *score_table_lines(section["table"]),
        "",
        *count_table_lines(section["table"]),
        "",
        INCOMPLETE_NOTE,
    ]
    return lines


# ----------------------------------------------------------------------------- the spec


def _reference() -> dict[str, dict[str, float]]:
    """The paper's targets, in percent: Table 2 with Wikipedia for each model, and Table 3."""
    out = {
        f"Table 2, grounding document + Wikipedia, {model}": numbers
        for model, numbers in PUBLISHED_NUMBERS["table2_wikipedia"].items()
    }
    out["Table 3, 20 human-annotated generations per task"] = {
        f"{task}_{column}": value for task, row in PUBLISHED_NUMBERS["table3"].items() for column, value in row.items()
    }
    return out


REPORT_SPECS = (
    BenchmarkSpec(
        name=NAME,
        title="FActBench",
        task_names=frozenset(TASK_NAMES.values()),
        score_sample=score_sample,
        expected_counts=PUBLISHED_COUNTS,
        settings_of=settings_of,
        item_id_fields=("id",),  # the source's id (a summarisation row's, a BioASQ question's), unique per task
        extra_section=factcheck_section,
        extra_markdown=factcheck_markdown,
        report=Report(
            headline=Headline.NONE,
            component_noun="tasks",
            notes=(
                "FActBench has no accuracy: its scores are the fact-check's (CoT, NLI, UnVot; python -m lm_eval_tasks "
                "factbench-check). Here 'accuracy' is the share of non-empty replies; the rates are words per reply "
                "and empty replies.",
                "Published numbers are percentages. Table 2's grounding-only block is no target: in 16 of its 24 "
                "cells UnVot exceeds min(CoT, NLI), which a per-fact AND of the same decisions cannot give (README).",
            ),
        ),
        protocol=Protocol(reference=_reference()),
    ),
)
