"""Reading an lm-eval run (``--output_path`` with ``--log_samples``): its results file, samples and settings."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .data import DataError, iter_jsonl, read_json
from .redaction import redact


@dataclass(frozen=True)
class Run:
    results_path: Path
    results: dict[str, Any]
    samples: dict[str, list[dict[str, Any]]]  # task -> logged samples (one filter)
    sample_files: dict[str, Path]


def _timestamp(results_path: Path) -> str:
    return results_path.stem[len("results_") :]


def find_results(path: str | os.PathLike) -> Path:
    """The results JSON of a run: ``path`` itself, or the newest ``results_*.json`` under it."""
    path = Path(path)
    if path.is_file():
        return path
    if not path.is_dir():
        raise DataError(f"{path}: no such file or directory")
    found = sorted(path.rglob("results_*.json"), key=lambda p: (_timestamp(p), str(p)))
    if not found:
        raise DataError(f"{path}: no results_*.json; pass lm_eval's --output_path (run with --log_samples)")
    return found[-1]


def load_run(path: str | os.PathLike) -> Run:
    results_path = find_results(path)
    results = read_json(results_path)
    if not isinstance(results, dict) or "configs" not in results:
        raise DataError(f"{results_path}: not an lm-eval results file (no 'configs')")
    stamp = _timestamp(results_path)
    samples, files = {}, {}
    for task in results["configs"]:
        sample_path = results_path.parent / f"samples_{task}_{stamp}.jsonl"
        if not sample_path.is_file():
            raise DataError(
                f"{sample_path}: missing; the report needs lm_eval's --log_samples output for task '{task}'"
            )
        rows = [row for _, row in iter_jsonl(sample_path)]
        filters = sorted({row.get("filter", "none") for row in rows})
        chosen = "none" if "none" in filters else filters[0] if filters else "none"
        samples[task] = [row for row in rows if row.get("filter", "none") == chosen]
        files[task] = sample_path
    return Run(results_path, results, samples, files)


def run_info(run: Run) -> dict[str, Any]:
    """The run's settings as every report states them (credentials masked)."""
    results = run.results
    config = results.get("config", {})
    return {
        "results_file": str(run.results_path),
        "model": config.get("model"),
        "model_args": redact(config.get("model_args")),
        "model_name": results.get("model_name"),
        "lm_eval_version": results.get("lm_eval_version"),
        "date": results.get("date"),
        # Chat APIs log an empty template (the server applies its own); no template at all is None.
        "chat_template_applied": results.get("chat_template_sha") is not None
        or results.get("chat_template") is not None,
        "chat_template_sha": results.get("chat_template_sha"),
        "system_instruction": results.get("system_instruction"),
        "gen_kwargs": config.get("gen_kwargs"),
        "limit": config.get("limit"),
        "task_versions": results.get("versions", {}),
        "n_samples": results.get("n-samples", {}),
    }
