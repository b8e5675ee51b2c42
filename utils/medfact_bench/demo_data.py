"""The MedFact-Bench folder of the demo data directory, in the benchmark's own format.

MedFact-Bench itself (HF ``ncbi/MedFact-Bench``) is not redistributable here, so the demo file is
assembled from two real, related sources:

- ``scifact``: the benchmark's 340 SciFact claim/article pairs as published with Med-V1. They
  come without gold labels, so the label column holds **Med-V1-L3B's own prediction** (its
  extracted score mapped to a label). Accuracy on this component therefore measures agreement
  with Med-V1-L3B, not correctness.
- ``healthver``: the labelled sentence-level HealthVer test CSV (claim vs. an evidence snippet;
  Supports/Refutes/Neutral -> SUPPORT/CONTRADICT/NEI). This is related to, but not, the
  benchmark's 903-row abstract-level component.

Every row says where its label comes from (``label_source``: ``medv1_l3b_prediction`` or ``gold``;
``synthetic`` in the rows tests and timing scripts make); the loader keeps it in the logged doc, and :func:`demo_label_note`
gives the sentence to show next to a number scored on such labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import data as data_layer
from ..files import write_jsonl
from ..scoring import INVALID
from .constants import LABEL_SOURCE
from .parsing import score_to_label
from .prompts import user_prompt

HEALTHVER_LABELS = {"Supports": "SUPPORT", "Refutes": "CONTRADICT", "Neutral": "NEI"}
MEDFACT_DEMO_FILE = "medfact_demo.jsonl"
# What a number scored on non-gold labels measures, per label source (gold labels need no note).
DEMO_LABEL_NOTES = {
    "medv1_l3b_prediction": "demo labels: agreement with Med-V1-L3B's predictions, not correctness",
    "synthetic": "synthetic labels assigned in turn: the number measures nothing",
}


def demo_label_note(doc: Mapping[str, Any]) -> str | None:
    """The sentence to show next to a number scored on ``doc``'s label, or None for a gold label.

    A doc without ``label_source`` (the published benchmark's rows) has a gold label.
    """
    source = doc.get(LABEL_SOURCE)
    return DEMO_LABEL_NOTES.get(source) if isinstance(source, str) else None  # any logged value: a verdict


def medfact_demo_rows(shared_data: Path) -> list[dict[str, str]]:
    """SciFact pairs labelled with Med-V1-L3B's predictions, then the labelled HealthVer test rows."""
    medv1_file = shared_data / "medfact_bench" / "scifact_medv1" / "claim_source_example_output_file.jsonl"
    medv1 = data_layer.read_table(medv1_file)
    system_prompt = data_layer.require_single_value(medv1, "system_prompt", medv1_file)
    rows = []
    for number, item in enumerate(medv1, start=1):
        label = score_to_label(item["extracted_score"])
        if label == INVALID:
            raise data_layer.row_error(
                medv1_file, number, "extracted_score", f"not a score: {item['extracted_score']!r}"
            )
        rows.append(_row("scifact", item["claim"], item["source"], label, "medv1_l3b_prediction", system_prompt))
    healthver_file = shared_data / "medfact_bench" / "healthver" / "healthver_test.csv"
    healthver = data_layer.read_table(healthver_file)
    data_layer.require_allowed(healthver, "label", HEALTHVER_LABELS, healthver_file)
    rows += [
        _row(
            "healthver", item["claim"], item["evidence"].strip(), HEALTHVER_LABELS[item["label"]], "gold", system_prompt
        )
        for item in healthver
    ]
    return rows


def _row(component: str, claim: str, source: str, label: str, label_source: str, system_prompt: str) -> dict[str, str]:
    return {
        "dataset": component,
        "claim": claim,
        "source": source,
        "label": label,
        LABEL_SOURCE: label_source,
        "system_prompt": system_prompt,
        "user_prompt": user_prompt(source, claim),
    }


def build_demo_data(shared_data: Path, target: Path) -> None:
    write_jsonl(medfact_demo_rows(shared_data), target / MEDFACT_DEMO_FILE)
