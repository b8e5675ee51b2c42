"""The fact-check's outputs: the report (JSON), its Markdown tables, and the saved folder (README, "The fact-checker").

:func:`write_outputs` writes ``facts.jsonl``, ``generations.jsonl`` and ``check.json`` (everything
:func:`rescore` needs to rebuild every table without a model call) and ``factcheck.json`` /
``factcheck.md``, atomically.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import stats
from ..files import jsonl_bytes, write_atomically
from ..openai_client import format_usage, usage_total
from .constants import SETTING_TITLES, SETTINGS, TASK_TITLES, TECHNIQUE_TITLES, TECHNIQUES
from .pipeline import FACTCHECK_VERSION
from .records import CHECK_FILE, FACTS_FILE, GENERATIONS_FILE, CheckResult, GenerationScore, read_check_folder
from .scores import correlations, generation_scores, paper_scale_calls, score_table

REPORT_JSON, REPORT_MD = "factcheck.json", "factcheck.md"


def build_report(
    result: CheckResult, human: Mapping[tuple[str, int], float] | None = None, run: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], list[GenerationScore]]:
    """The report (tables, timings, cost estimate, correlations) and the per-generation scores."""
    scored = generation_scores(result.generations, result.facts, result.config)
    table = score_table(scored, result.config)
    k = result.config["passage_store"].get("k", 5)
    out = {
        "factcheck_version": FACTCHECK_VERSION,
        "run": dict(run or {}),
        "config": result.config,
        "table": table,
        "timing": result.timing,
        "calls": result.calls,
        # the LLM calls' tokens (and cost, with --prices) over the decomposer and the judge
        **(
            {"usage": usage_total(usages)}
            if (usages := [c["usage"] for c in result.calls.values() if "usage" in c])
            else {}
        ),
        "fact_origins": dict(Counter(f.origin for f in result.facts)),
        "paper_scale_estimate": paper_scale_calls(table, result.facts, k),
        "bootstrap": stats.bootstrap_description(unit="generation"),
    }
    if human:
        out["human_correlation"] = correlations(scored, human)
    return out, scored


# ----------------------------------------------------------------------------- Markdown


def _cell_text(cell: Mapping[str, Any]) -> str:
    if cell["status"] == "unavailable":
        return "unavailable"
    if "estimate" in cell:
        return stats.format_estimate(cell["estimate"], digits=1, scale=100)
    return f"none scored ({cell['n_incomplete']} incomplete)"


def score_table_lines(table: Mapping[str, Any]) -> list[str]:
    """The Table 2-shaped table: one row per knowledge source, one column per task and technique."""
    tasks = list(table)
    header = " | ".join(f"{table[t]['title']} {TECHNIQUE_TITLES[x]}" for t in tasks for x in TECHNIQUES)
    lines = [f"| knowledge source | {header} |", "|---|" + "---:|" * (len(tasks) * len(TECHNIQUES))]
    for setting in SETTINGS:
        cells = [
            _cell_text(table[task]["cells"][f"{technique}_{setting}"]) for task in tasks for technique in TECHNIQUES
        ]
        lines.append(f"| {SETTING_TITLES[setting]} | " + " | ".join(cells) + " |")
    return lines


def count_table_lines(table: Mapping[str, Any]) -> list[str]:
    """Per task: generations (and the paper's), outcomes, facts, incomplete generations per cell."""
    lines = [
        "| task | generations (paper) | checked | no facts | no answer | decomposition failed | facts | "
        "facts / checked generation | incomplete: document (CoT / NLI / UnVot) | incomplete: + passages |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for entry in table.values():
        status, per = entry["status"], entry["facts_per_checked_generation"]
        incomplete = [
            " / ".join(str(entry["cells"][f"{t}_{s}"].get("n_incomplete", "-")) for t in TECHNIQUES) for s in SETTINGS
        ]
        lines.append(
            f"| {entry['title']} | {entry['generations']} ({entry['paper_items']}) | {status.get('checked', 0)} | "
            f"{status.get('no_facts', 0)} | {status.get('no_answer', 0)} | {status.get('decomposition_failed', 0)} | "
            f"{entry['facts']} | {'-' if per is None else f'{per:.2f}'} | {incomplete[0]} | {incomplete[1]} |"
        )
    return lines


INCOMPLETE_NOTE = (
    "A generation is incomplete for a technique when a verdict of one of its facts is missing "
    "(a failed call or an unparsable reply): it is left out of that mean, never scored as unsupported."
)


def config_lines(config: Mapping[str, Any]) -> list[str]:
    """Which decomposer, judge, NLI model and passage store produced the verdicts."""
    store = config["passage_store"]
    return [
        f"- decomposer: `{config['decomposer'].get('model')}` (temperature {config['decomposer'].get('temperature')}, "
        f"prompt {config['decomposer']['prompt_hash']}); CoT judge: `{config['cot'].get('model')}` "
        f"(temperature {config['cot'].get('temperature')}, prompt {config['cot'].get('prompt_hash')})",
        f"- NLI: {config['nli'].get('model') or 'unavailable: ' + config['nli']['unavailable']}",
        f"- passage store: {store.get('path') or 'unavailable: ' + store['unavailable']}"
        + (f" ({store['n_passages']} passages, k={store['k']})" if "n_passages" in store else ""),
    ]


def _human_lines(correlation: Mapping[str, Any]) -> list[str]:
    lines = [
        "| task | technique | n | mean score | mean human | Spearman (p) | Pearson (p) |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for task, entry in correlation.items():
        for key, cell in entry.items():
            if key == "n_human":
                continue
            corr = (
                f"{cell['spearman']:.3f} ({cell['spearman_p']:.3g}) | {cell['pearson']:.3f} ({cell['pearson_p']:.3g})"
                if "spearman" in cell
                else f"{cell.get('correlation', '-')} | -"
            )
            means = f"{100 * cell['mean_score']:.1f} | {cell['mean_human']:.1f}" if "mean_score" in cell else "- | -"
            lines.append(f"| {TASK_TITLES[task]} | {key} | {cell['n']} | {means} | {corr} |")
    return lines


def to_markdown(report: Mapping[str, Any]) -> str:
    table = report["table"]
    run = report.get("run") or {}
    lines = ["# FActBench fact-check", ""]
    if run:
        lines += [
            f"- generations: `{run.get('model_name') or run.get('model')}` {json.dumps(run.get('model_args'))}; "
            f"chat template: {run.get('chat_template_applied')}; limit: {run.get('limit')}",
            f"- run: `{run.get('results_file')}`",
        ]
    lines += config_lines(report["config"])
    lines += [
        "- scores: % of supported atomic facts per generation, mean over scored generations, "
        f"95% percentile bootstrap CI ({report['bootstrap']['n_resamples']} resamples over generations)",
        "",
        *score_table_lines(table),
        "",
        *count_table_lines(table),
        "",
        INCOMPLETE_NOTE,
    ]
    origins = report["fact_origins"]
    lines += [
        "",
        f"Facts from the decomposer: {origins.get('decomposer', 0)}; sentences kept whole because the "
        f"decomposer reply had no fact list: {origins.get('sentence_fallback', 0)}.",
        "",
    ]
    if report["timing"]:
        lines += ["| stage | facts | seconds | facts / minute |", "|---|---:|---:|---:|"]
        for stage, t in report["timing"].items():
            rate = f"{t['facts_per_minute']:.1f}" if t.get("facts_per_minute") else "-"
            lines.append(f"| {stage} | {t['facts']} | {t['seconds']:.1f} | {rate} |")
        lines += ["", "Calls: " + "; ".join(f"{name} {json.dumps(c)}" for name, c in report["calls"].items()), ""]
    if "usage" in report:
        lines += [f"LLM usage: {format_usage(report['usage'])}.", ""]
    estimate = report["paper_scale_estimate"]
    lines += [
        f"Paper-scale cost at this run's rates ({estimate['models']} models x the paper's items): "
        + ", ".join(f"{name} {value:,}" for name, value in estimate["total"].items()),
        "",
    ]
    if "human_correlation" in report:
        lines += [*_human_lines(report["human_correlation"]), ""]
    lines.append(
        "Not comparable with the paper unless every task has the paper's item count and the same judge, "
        "decomposer, NLI model and knowledge source."
    )
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- files


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write_outputs(
    result: CheckResult,
    out_dir: str | Path,
    human: Mapping[tuple[str, int], float] | None = None,
    run: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], list[Path]]:
    """``facts.jsonl``, ``generations.jsonl``, ``check.json`` (inputs to :func:`rescore`) and
    ``factcheck.json`` / ``factcheck.md`` (the tables), written atomically."""
    report, scored = build_report(result, human, run)
    files = {
        FACTS_FILE: jsonl_bytes(fact.as_json() for fact in result.facts),
        GENERATIONS_FILE: jsonl_bytes(
            {**g.as_json(), "scores": s.scores_json()} for g, s in zip(result.generations, scored, strict=True)
        ),
        CHECK_FILE: _json_bytes(
            {"config": result.config, "timing": result.timing, "calls": result.calls, "run": dict(run or {})}
        ),
        REPORT_JSON: _json_bytes(report),
        REPORT_MD: to_markdown(report).encode("utf-8"),
    }
    return report, write_atomically(out_dir, files)


def rescore(
    folder: str | Path, human: Mapping[tuple[str, int], float] | None = None, out_dir: str | Path | None = None
) -> tuple[dict[str, Any], list[Path]]:
    """Rebuild every table from a previous check's saved verdicts: no model is called."""
    result, run = read_check_folder(folder)
    return write_outputs(result, out_dir or folder, human, run)
