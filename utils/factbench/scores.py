"""Scores from the verdicts: per generation, per task with CIs (the paper's Table 2), against human scores (Table 3).

A generation's score per technique and setting is its share of supported facts (UnVot: supported
iff CoT and NLI both support the fact, :meth:`~.records.Fact.verdict`); a task's score is the mean
over its scored generations with a bootstrap CI over generations (:mod:`..stats`). A missing verdict
(a failed call, an unreadable reply) never counts as unsupported: the generation has no score for
that technique and is counted as incomplete. A technique that could not run is "unavailable", never
0 (README, "Protocol").
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import stats
from ..data import read_table, row_error
from .constants import PAPER_MODELS, PUBLISHED_COUNTS, SETTINGS, TASK_TITLES, TASKS, TECHNIQUES, task_component
from .records import CheckedGeneration, Fact, GenerationScore, TechniqueScore


def cell_keys() -> list[str]:
    """``<technique>_<setting>`` for every technique and setting, in table order."""
    return [f"{technique}_{setting}" for technique in TECHNIQUES for setting in SETTINGS]


def availability(config: Mapping[str, Any]) -> dict[str, str | None]:
    """``<technique>_<setting>`` -> None when it ran, else why it could not."""
    out: dict[str, str | None] = {}
    store = config["passage_store"].get("unavailable")
    missing = {"cot": config["cot"].get("unavailable"), "nli": config["nli"].get("unavailable")}
    for technique in TECHNIQUES:
        reason = missing.get(technique) if technique != "unvot" else (missing["cot"] or missing["nli"])
        for setting in SETTINGS:
            out[f"{technique}_{setting}"] = reason or (store if setting == "extrinsic" else None)
    return out


def _technique_score(facts: Sequence[Fact], technique: str, setting: str) -> TechniqueScore:
    verdicts = [fact.verdict(technique, setting) for fact in facts]
    missing = sum(v is None for v in verdicts)
    if missing:
        return TechniqueScore(None, "incomplete", missing_verdicts=missing)
    return TechniqueScore(sum(verdicts) / len(verdicts), supported=sum(verdicts), facts=len(verdicts))


def generation_scores(
    generations: Sequence[CheckedGeneration], facts: Sequence[Fact], config: Mapping[str, Any]
) -> list[GenerationScore]:
    """Per generation: status, facts, and per technique and setting a score or why there is none."""
    by_generation: dict[tuple[str, int], list[Fact]] = defaultdict(list)
    for fact in facts:
        by_generation[(fact.task, fact.doc_id)].append(fact)
    available = availability(config)
    out = []
    for record in generations:
        own = by_generation[(record.task, record.doc_id)]
        scores = {}
        for technique in TECHNIQUES:
            for setting in SETTINGS:
                key = f"{technique}_{setting}"
                if available[key]:
                    scores[key] = TechniqueScore(None, "unavailable")
                elif record.status != "checked":
                    scores[key] = TechniqueScore(None, record.status)
                else:
                    scores[key] = _technique_score(own, technique, setting)
        out.append(
            GenerationScore(
                record.task,
                record.doc_id,
                record.doc_hash,
                record.item_id,
                record.status,
                record.n_facts,
                len(record.sentences),
                scores,
            )
        )
    return out


def score_table(scored: Sequence[GenerationScore], config: Mapping[str, Any]) -> dict[str, Any]:
    """Table 2 of the paper for one model: per task, technique and setting, mean score with a CI."""
    available = availability(config)
    table: dict[str, Any] = {}
    for task in TASKS:
        rows = [r for r in scored if r.task == task]
        if not rows:
            continue
        checked = [r for r in rows if r.status == "checked"]
        entry: dict[str, Any] = {
            "title": TASK_TITLES[task],
            "generations": len(rows),
            "paper_items": PUBLISHED_COUNTS[task],
            "status": dict(Counter(r.status for r in rows)),
            "facts": sum(r.n_facts for r in checked),
            "facts_per_checked_generation": sum(r.n_facts for r in checked) / len(checked) if checked else None,
            "sentences_per_generation": sum(r.n_sentences for r in rows) / len(rows),
            "cells": {},
        }
        for key in cell_keys():
            if available[key]:
                entry["cells"][key] = {"status": "unavailable", "reason": available[key]}
                continue
            values = [r.scores[key].score for r in rows if r.scores[key].score is not None]
            cell: dict[str, Any] = {
                "status": "ok" if values else "no scored generations",
                "n_scored": len(values),
                "n_incomplete": sum(r.scores[key].reason == "incomplete" for r in rows),
            }
            if values:
                cell["estimate"] = stats.bootstrap(stats.mean_of(values), len(values)).as_dict()
            entry["cells"][key] = cell
        entry["full_item_count"] = len(rows) == PUBLISHED_COUNTS[task]
        table[task] = entry
    return table


def _unsupported_share(facts: Sequence[Fact], technique: str) -> float | None:
    known = [v for v in (f.verdict(technique, "intrinsic") for f in facts) if v is not None]
    return sum(v is False for v in known) / len(known) if known else None


def paper_scale_calls(
    table: Mapping[str, Any], facts: Sequence[Fact], k: int, models: int = PAPER_MODELS
) -> dict[str, Any]:
    """Calls a full paper-scale run would need (the paper's items x ``models`` generators) at this
    run's measured rates: sentences and facts per generation, share of facts each technique finds
    unsupported (those are re-checked; NLI then reads ``k`` passages per fact). None where a rate
    could not be measured."""
    out: dict[str, Any] = {"models": models, "k": k, "tasks": {}}
    totals: Counter = Counter()
    for task, entry in table.items():
        task_facts = [f for f in facts if f.task == task]
        facts_per_generation = entry["facts_per_checked_generation"] or 0.0
        share = {t: _unsupported_share(task_facts, t) for t in ("cot", "nli")}
        items = entry["paper_items"] * models
        estimate = {
            "generations": items,
            "decomposer_calls": round(items * entry["sentences_per_generation"]),
            "cot_intrinsic_calls": round(items * facts_per_generation),
            "cot_extrinsic_calls": None if share["cot"] is None else round(items * facts_per_generation * share["cot"]),
            "nli_intrinsic_pairs": round(items * facts_per_generation),
            "nli_extrinsic_pairs": None
            if share["nli"] is None
            else round(items * facts_per_generation * share["nli"] * k),
        }
        totals.update({name: value for name, value in estimate.items() if value is not None})
        out["tasks"][task] = {
            **estimate,
            "measured": {
                "sentences_per_generation": entry["sentences_per_generation"],
                "facts_per_generation": facts_per_generation,
                "cot_unsupported_share": share["cot"],
                "nli_unsupported_share": share["nli"],
            },
        }
    out["total"] = {
        **totals,
        "llm_calls": totals["decomposer_calls"] + totals["cot_intrinsic_calls"] + totals["cot_extrinsic_calls"],
    }
    return out


# ----------------------------------------------------------------------------- human scores


def read_human_scores(path: str | Path) -> dict[tuple[str, int], float]:
    """``(task, doc_id) -> score`` from a CSV/TSV/JSONL/JSON/Parquet file with columns task, doc_id, score.

    A generation scored twice is an error naming both rows; so is a score that is not a finite number.
    """
    rows = read_table(path)
    out: dict[tuple[str, int], float] = {}
    row_of: dict[tuple[str, int], int] = {}
    for number, row in enumerate(rows, start=1):
        for column in ("task", "doc_id", "score"):
            if column not in row:
                raise row_error(path, number, column, "missing column")
        task = task_component(str(row["task"])) or str(row["task"])
        if task not in TASKS:
            raise row_error(path, number, "task", f"{row['task']!r} is not a FActBench task")
        try:
            key, score = (task, int(row["doc_id"])), float(row["score"])
        except (TypeError, ValueError) as exc:
            raise row_error(path, number, "doc_id/score", f"not a number ({exc})") from exc
        if not math.isfinite(score):
            raise row_error(path, number, "score", f"not a finite number: {row['score']!r}")
        if key in out:
            raise row_error(path, number, "doc_id", f"{task} doc {key[1]} was already scored in row {row_of[key]}")
        out[key], row_of[key] = score, number
    return out


def correlations(scored: Sequence[GenerationScore], human: Mapping[tuple[str, int], float]) -> dict[str, Any]:
    """Per task, technique and setting: Spearman and Pearson between generation scores and human scores,
    with both means (the paper's Table 3 compares means)."""
    from scipy.stats import pearsonr, spearmanr

    out: dict[str, Any] = {}
    for task in TASKS:
        rows = [r for r in scored if r.task == task and (task, r.doc_id) in human]
        if not rows:
            continue
        entry: dict[str, Any] = {"n_human": len(rows)}
        for key in rows[0].scores:
            pairs = [(r.scores[key].score, human[(task, r.doc_id)]) for r in rows if r.scores[key].score is not None]
            cell: dict[str, Any] = {"n": len(pairs)}
            if pairs:
                cell["mean_score"] = sum(p[0] for p in pairs) / len(pairs)
                cell["mean_human"] = sum(p[1] for p in pairs) / len(pairs)
            if len(pairs) >= 3 and len({p[0] for p in pairs}) > 1 and len({p[1] for p in pairs}) > 1:
                xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
                rho, rho_p = spearmanr(xs, ys)
                r, r_p = pearsonr(xs, ys)
                cell.update(spearman=float(rho), spearman_p=float(rho_p), pearson=float(r), pearson_p=float(r_p))
            else:
                cell["correlation"] = "undefined (fewer than 3 pairs or a constant series)"
            entry[key] = cell
        out[task] = entry
    return out
