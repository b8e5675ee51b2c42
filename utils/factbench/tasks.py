"""lm-eval hooks of the four FActBench tasks (README, "Protocol")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import data as data_layer
from . import BENCHMARK
from .loader import load
from .parsing import score_generation
from .prompts import prompt


def custom_dataset(factbench_task: str, data_dir: str | None = None, split: str | None = None, **metadata: Any):
    """lm-eval ``custom_dataset`` hook (also receives the task metadata and model arguments).

    FActBench's settings (``factbench_sample_size``, ``factbench_bioasq_path``) are read by its declaration
    (``Benchmark.read_settings``); the unscoped ``sample_size`` and ``bioasq_path`` are refused with those names.
    """
    data_layer.refuse_training_split(BENCHMARK.name, split)
    settings = BENCHMARK.read_settings(metadata)
    return data_layer.to_dataset_dict(load(factbench_task, data_dir, settings["bioasq_path"], settings["sample_size"]))


def doc_to_text(doc: Mapping[str, str]) -> str:
    return prompt(doc)


def process_results(doc: Mapping[str, str], results: list[str]) -> dict[str, float]:
    """Length statistics only: the factuality score comes from ``python -m lm_eval_tasks factbench-check``."""
    return score_generation(results[0])
