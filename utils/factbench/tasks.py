"""lm-eval hooks of the four FActBench tasks (README, "Protocol")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import data as data_layer
from .constants import BENCHMARK, SAMPLE_SIZE
from .loader import load
from .parsing import score_generation
from .prompts import prompt


def custom_dataset(
    factbench_task: str,
    data_dir: str | None = None,
    bioasq_path: str | None = None,
    sample_size: int | str = SAMPLE_SIZE,
    split: str | None = None,
    **_: Any,
):
    """lm-eval ``custom_dataset`` hook (also receives the task metadata and model arguments)."""
    data_layer.refuse_training_split(BENCHMARK, split)
    return data_layer.to_dataset_dict(load(factbench_task, data_dir, bioasq_path, int(sample_size)))


def doc_to_text(doc: Mapping[str, str]) -> str:
    return prompt(doc)


def process_results(doc: Mapping[str, str], results: list[str]) -> dict[str, float]:
    """Length statistics only: the factuality score comes from ``python -m lm_eval_tasks factbench-check``."""
    return score_generation(results[0])
