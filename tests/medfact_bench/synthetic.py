"""MedFact-Bench rows with any component counts, for plumbing checks and timing (examples/benchmark_medfact_loading.py)."""

from __future__ import annotations

import os
from pathlib import Path

from lm_eval_tasks.utils.medfact_bench.constants import LABEL_SOURCE, LABELS, PUBLISHED_COUNTS
from lm_eval_tasks.utils.medfact_bench.demo_data import medfact_demo_rows


def synthetic_medfact_rows(
    shared_data: str | os.PathLike, counts: dict[str, int] | None = None, label_totals: dict[str, int] | None = None
) -> list[dict[str, str]]:
    """Rows in MedFact-Bench's format with any component counts.

    Text is real (the SciFact claim/article pairs, reused in turn) but labels are assigned in
    turn, SUPPORT/NEI/CONTRADICT, or in blocks matching ``label_totals``: never score these.
    """
    counts = counts or PUBLISHED_COUNTS
    pairs = [row for row in medfact_demo_rows(Path(shared_data)) if row["dataset"] == "scifact"]
    components = [component for component, n in counts.items() for _ in range(n)]
    if label_totals:
        if sum(label_totals.values()) != len(components):
            raise ValueError(f"label totals {label_totals} do not add up to {len(components)} rows")
        labels = [label for label, n in label_totals.items() for _ in range(n)]
    else:
        labels = [LABELS[i % len(LABELS)] for i in range(len(components))]
    return [
        {**pairs[i % len(pairs)], "dataset": component, "label": label, LABEL_SOURCE: "synthetic"}
        for i, (component, label) in enumerate(zip(components, labels))
    ]
