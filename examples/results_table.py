"""Print the README's table of quickstart figures (Markdown) from the artifacts under examples/results/.

    python examples/results_table.py

Each row is one folder written by ``examples/results_artifact.py``: its manifest says how the run was made, its
report.json holds the numbers, printed here and decided nowhere else. tests/test_results_table.py keeps the README's
copy (between its ``results-table`` markers) equal to this output.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from lm_eval_tasks.utils.data import read_json
from lm_eval_tasks.utils.stats import format_estimate

RESULTS = Path(__file__).resolve().parent / "results"
HEADER = "| benchmark | run | headline [95% CI] |\n|---|---|---|\n"
COUNTS = {2: "two", 3: "three", 4: "four", 5: "five"}
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
        return f"{section['title']}: {answered}/{section['n_items']} replies gave an answer"
    estimate = section.get(section["headline_metric"])
    if not isinstance(estimate, dict):
        return f"{section['title']}: {section['n_items']} items, no accuracy headline (its scores are in report.md)"
    metric = "macro accuracy" if section["headline_metric"] == "accuracy_macro" else "accuracy"
    return f"{section['title']}, {' + '.join(section['components'])}: {metric} {_short(format_estimate(estimate))}"


def _order(name: str) -> int:
    return next((i for i, prefix in enumerate(ORDER) if name.startswith(prefix)), len(ORDER))


def row(manifest: dict, report: dict) -> str:
    sections = [section for _, section in sorted(report["benchmarks"].items(), key=lambda item: _order(item[0]))]
    benchmark = sections[0]["title"] if len(sections) == 1 else COUNTS.get(len(sections), str(len(sections)))
    prompts = "chat template" if manifest["chat_template_applied"] else "plain prompts"
    run = f"`{manifest['command']}`, {manifest['dtype']}, {prompts}"
    return f"| {benchmark} | {run} | {'; '.join(section_figure(s) for s in sections)} |\n"


def table(results: Path = RESULTS) -> str:
    rows = [
        row(read_json(folder / "manifest.json"), read_json(folder / "report.json"))
        for folder in sorted(results.iterdir())
        if (folder / "manifest.json").is_file()
    ]
    return HEADER + "".join(rows)


if __name__ == "__main__":
    sys.stdout.write(table())
