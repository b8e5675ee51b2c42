"""A data directory built from the real public pieces in ``shared/data``, for trying the tasks offline.

MedFact-Bench itself (HF ``ncbi/MedFact-Bench``) is not redistributable here, so the demo
MedFact file is assembled from two real, related sources, in the benchmark's own format:

- ``scifact``: the benchmark's 340 SciFact claim/article pairs as published with Med-V1. They
  come without gold labels, so the label column holds **Med-V1-L3B's own prediction** (its
  extracted score mapped to a label). Accuracy on this component therefore measures agreement
  with Med-V1-L3B, not correctness.
- ``healthver``: the labelled sentence-level HealthVer test CSV (claim vs. an evidence snippet;
  Supports/Refutes/Neutral -> SUPPORT/CONTRADICT/NEI). This is related to, but not, the
  benchmark's 903-row abstract-level component.

Benchmarks whose real data ships as-is (pubmedqa, medexqa, millerqa) are linked into the demo
directory, so one ``--metadata data_dir=DIR`` serves every task.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import data as data_layer
from . import medfact

HEALTHVER_LABELS = {"Supports": "SUPPORT", "Refutes": "CONTRADICT", "Neutral": "NEI"}
MEDFACT_DEMO_FILE = "medfact_demo.jsonl"
LINKED_BENCHMARKS = ("pubmedqa", "medexqa", "millerqa")


def medfact_demo_rows(shared_data: Path) -> list[dict[str, str]]:
    """SciFact pairs labelled with Med-V1-L3B's predictions, then the labelled HealthVer test rows."""
    medv1_file = shared_data / "medfact_bench" / "scifact_medv1" / "claim_source_example_output_file.jsonl"
    medv1 = data_layer.read_table(medv1_file)
    system_prompt = data_layer.require_single_value(medv1, "system_prompt", medv1_file)
    rows = []
    for number, item in enumerate(medv1, start=1):
        label = medfact.score_to_label(item["extracted_score"] if isinstance(item["extracted_score"], int) else None)
        if label == medfact.INVALID:
            raise data_layer.row_error(medv1_file, number, "extracted_score", f"not a score: {item['extracted_score']!r}")
        rows.append(_row("scifact", item["claim"], item["source"], label, system_prompt))
    healthver_file = shared_data / "medfact_bench" / "healthver" / "healthver_test.csv"
    healthver = data_layer.read_table(healthver_file)
    data_layer.require_allowed(healthver, "label", HEALTHVER_LABELS, healthver_file)
    rows += [_row("healthver", item["claim"], item["evidence"].strip(), HEALTHVER_LABELS[item["label"]], system_prompt)
             for item in healthver]
    return rows


def _row(component: str, claim: str, source: str, label: str, system_prompt: str) -> dict[str, str]:
    return {"dataset": component, "claim": claim, "source": source, "label": label,
            "system_prompt": system_prompt, "user_prompt": medfact.user_prompt(source, claim)}


def build_demo_data_dir(shared_data: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """Write ``out_dir/medfact_bench/medfact_demo.jsonl`` and link the ready-made benchmark folders."""
    shared_data, out_dir = Path(shared_data).resolve(), Path(out_dir)
    medfact_dir = out_dir / medfact.BENCHMARK
    medfact_dir.mkdir(parents=True, exist_ok=True)
    target = medfact_dir / MEDFACT_DEMO_FILE
    write_jsonl(medfact_demo_rows(shared_data), target.with_suffix(".tmp")).replace(target)
    for benchmark in LINKED_BENCHMARKS:
        link, source = out_dir / benchmark, shared_data / benchmark
        if source.is_dir() and not link.exists():
            link.symlink_to(source, target_is_directory=True)
    return out_dir


def synthetic_medfact_rows(shared_data: str | os.PathLike, counts: dict[str, int] | None = None,
                           label_totals: dict[str, int] | None = None) -> list[dict[str, str]]:
    """Rows in MedFact-Bench's format with any component counts, for plumbing checks and timing.

    Text is real (the SciFact claim/article pairs, reused in turn) but labels are assigned in
    turn, SUPPORT/NEI/CONTRADICT, or in blocks matching ``label_totals``: never score these.
    """
    counts = counts or medfact.COMPONENT_COUNTS
    pairs = [row for row in medfact_demo_rows(Path(shared_data)) if row["dataset"] == "scifact"]
    total = sum(counts.values())
    if label_totals:
        if sum(label_totals.values()) != total:
            raise ValueError(f"label totals {label_totals} do not add up to {total} rows")
        labels = [label for label, n in label_totals.items() for _ in range(n)]
    else:
        labels = [medfact.LABELS[i % len(medfact.LABELS)] for i in range(total)]
    rows = []
    for component, n in counts.items():
        for _ in range(n):
            pair = pairs[len(rows) % len(pairs)]
            rows.append(_row(component, pair["claim"], pair["source"], labels[len(rows)], pair["system_prompt"]))
    return rows


def write_jsonl(rows: list[dict], path: str | os.PathLike) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path
