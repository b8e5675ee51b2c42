"""lm-eval hooks of the MedFact-Bench tasks (named by the YAML in lm_eval_tasks/medfact_bench/)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .. import data as data_layer
from . import BENCHMARK
from .constants import PUBLISHED_COUNTS, TASK_COMPONENTS
from .loader import load
from .parsing import score_reply
from .prompts import user_prompt


def custom_dataset(
    component: str | None = None, data_dir: str | None = None, split: str | None = None, **metadata: Any
):
    """lm-eval ``custom_dataset`` hook: the rows of one component (all rows when None) as split 'test'.

    lm-eval also passes the task metadata and the model arguments; they are ignored, except a name with
    this benchmark's prefix, which it has no settings for (``Benchmark.read_settings``).
    """
    data_layer.refuse_training_split(BENCHMARK.name, split)
    BENCHMARK.read_settings(metadata)
    loaded = load(data_dir)
    if component is not None and component not in PUBLISHED_COUNTS:
        raise data_layer.DataError(
            f"unknown MedFact-Bench component '{component}' (known: {', '.join(PUBLISHED_COUNTS)})"
        )
    rows = [row for row in loaded.rows if component is None or row["dataset"] == component]
    if not rows:
        held = ", ".join(f"{c} {n}" for c, n in Counter(row["dataset"] for row in loaded.rows).items())
        tasks = ",".join(t for t, c in TASK_COMPONENTS.items() if any(r["dataset"] == c for r in loaded.rows))
        raise data_layer.DataError(
            f"{loaded.source}: no rows for component '{component}' (the file holds: {held}). lm-eval "
            f"cannot run an empty task: run only the components the file holds (--tasks {tasks}) "
            f"or supply the full benchmark."
        )
    return data_layer.to_dataset_dict(rows)


def doc_to_text(doc: dict[str, Any]) -> str:
    return user_prompt(doc["source"], doc["claim"])


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, float]:
    scored = score_reply(results[0])
    accuracy = float(scored.label == doc["label"])
    # Same per-sample value twice: the group averages `acc` unweighted over components (the
    # paper's macro) and `acc_micro` weighted by size.
    return {"acc": accuracy, "acc_micro": accuracy, **scored.rates()}
