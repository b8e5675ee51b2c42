"""Print the README's table of quickstart figures (Markdown) from the artifacts under examples/results/.

    python examples/results_table.py

Each row is one benchmark section of one folder written by ``examples/results_artifact.py``: its manifest says how
the run was made and on which machine, its report.json holds the numbers, printed here and decided nowhere else. tests/test_results_table.py keeps the README's
copy (between its ``results-table`` markers) equal to this output.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from lm_eval_tasks.utils.data import read_json
from lm_eval_tasks.utils.stats import format_estimate

RESULTS = Path(__file__).resolve().parent / "results"
HEADER = "| benchmark | run | machine | headline [95% CI] |\n|---|---|---|---|\n"
# The README's order: the log-likelihood sections first, then generation.
ORDER = ("pubmedqa", "medexqa", "millerqa", "medfact", "factbench")


def _short(number_text: str) -> str:
    """.450 as the README writes a proportion (no leading zero)."""
    return re.sub(r"\b0\.", ".", number_text)


def section_figure(section: dict) -> str:
    """One section's headline with its CI; when no reply gave an answer, how many did (an accuracy of 0 over
    unanswered items would read as if it measured something); a section without an accuracy headline says so."""
    answered = section["n_items"] - section["n_invalid"]
    if answered == 0:
        return f"{answered}/{section['n_items']} replies gave an answer"
    estimate = section.get(section["headline_metric"])
    if not isinstance(estimate, dict):
        return f"{section['n_items']} items, no accuracy headline (its scores are in report.md)"
    metric = "macro accuracy" if section["headline_metric"] == "accuracy_macro" else "accuracy"
    return f"{' + '.join(section['components'])}: {metric} {_short(format_estimate(estimate))}"


def machine_text(manifest: dict) -> str:
    """The CPU the run reported, its logical CPUs and the load average when the artifact was written."""
    machine = manifest.get("machine") or {}
    cpus = f", {machine['cpus']} CPUs" if machine.get("cpus") else ""
    load = manifest.get("load_average")
    loaded = f", load {' / '.join(f'{x:.2f}' for x in load)} (1/5/15 min)" if load else ", load not recorded"
    return f"{machine.get('cpu') or 'CPU not recorded'}{cpus}{loaded}"


def _order(name: str) -> int:
    return next((i for i, prefix in enumerate(ORDER) if name.startswith(prefix)), len(ORDER))


def rows(manifest: dict, report: dict) -> str:
    """One row per benchmark section of a run, in the README's order."""
    sections = [section for _, section in sorted(report["benchmarks"].items(), key=lambda item: _order(item[0]))]
    prompts = "chat template" if manifest["chat_template_applied"] else "plain prompts"
    run = f"`{manifest['command']}`, {manifest['dtype']}, {prompts}"
    return "".join(f"| {s['title']} | {run} | {machine_text(manifest)} | {section_figure(s)} |\n" for s in sections)


def table(results: Path = RESULTS) -> str:
    return HEADER + "".join(
        rows(read_json(folder / "manifest.json"), read_json(folder / "report.json"))
        for folder in sorted(results.iterdir())
        if (folder / "manifest.json").is_file()
    )


if __name__ == "__main__":
    sys.stdout.write(table())
