"""Reading an lm-eval run (``--output_path`` with ``--log_samples``): its results file, samples and settings."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .data import DataError, iter_jsonl, read_json
from .redaction import model_args_value, redact


@dataclass(frozen=True)
class Run:
    results_path: Path
    results: dict[str, Any]
    samples: dict[str, list[dict[str, Any]]]  # task -> logged samples (one filter)
    sample_files: dict[str, Path]
    repeated_sample_lines: dict[str, int] = field(default_factory=dict)  # task -> identical lines read once


def run_timestamp(results_path: Path) -> str:
    """The timestamp lm-eval put in a results file's name (its samples files carry the same)."""
    return results_path.stem[len("results_") :]


def find_all_results(path: str | os.PathLike) -> list[Path]:
    """Every run under ``path``: ``path`` itself if it is a results file, else each ``results_*.json`` below it."""
    path = Path(path)
    if not path.is_dir():
        if not os.path.lexists(path):
            raise DataError(f"{path}: no such file or directory")
        return [path]  # read as a results file: anything else (a FIFO, a device) is refused by its reader
    found = sorted(path.rglob("results_*.json"), key=lambda p: (str(p.parent), run_timestamp(p)))
    if not found:
        raise DataError(f"{path}: no results_*.json; pass lm_eval's --output_path (run with --log_samples)")
    return found


def find_results(path: str | os.PathLike) -> Path:
    """The one run under ``path``. A folder holding several runs is refused with their list, never guessed."""
    found = find_all_results(path)
    if len(found) > 1:
        listing = "\n".join(f"  {p}" for p in found)
        raise DataError(
            f"{path} holds {len(found)} runs (two timestamps, or two models under one --output_path):\n{listing}\n"
            "Pass one results_*.json, or --each to report every run."
        )
    return found[0]


def _logged_samples(sample_path: Path, task: str) -> tuple[list[dict[str, Any]], int]:
    """One task's logged samples (one filter), each (doc_id, doc_hash) once.

    A line repeated as it is (e.g. a file appended twice) is read once; two different lines for the
    same doc cannot both be right, so they are an error naming both.
    """
    rows = list(iter_jsonl(sample_path))
    filters = sorted({row.get("filter", "none") for _, row in rows})
    chosen = "none" if "none" in filters else filters[0] if filters else "none"
    kept: dict[tuple[Any, Any], tuple[int, dict[str, Any]]] = {}
    repeated = 0
    for number, row in rows:
        if row.get("filter", "none") != chosen:
            continue
        key = (row.get("doc_id"), row.get("doc_hash"))
        if key in kept:
            first, earlier = kept[key]
            if earlier != row:
                raise DataError(
                    f"{sample_path}, lines {first} and {number}: two different samples for task '{task}' doc_id "
                    f"{key[0]} (doc_hash {key[1]}); the run cannot be scored until one is removed"
                )
            repeated += 1
            continue
        kept[key] = (number, row)
    return [row for _, row in kept.values()], repeated


def load_run(path: str | os.PathLike) -> Run:
    results_path = find_results(path)
    results = read_json(results_path)
    if not isinstance(results, dict) or not isinstance(results.get("configs"), dict):
        raise DataError(f"{results_path}: not an lm-eval results file (no 'configs' object)")
    for key in ("config", "versions", "n-samples"):
        if not isinstance(results.get(key, {}), dict):
            raise DataError(f"{results_path}: '{key}' is {type(results[key]).__name__}, not an object")
    stamp = run_timestamp(results_path)
    samples, files, repeated = {}, {}, {}
    for task in results["configs"]:
        sample_path = results_path.parent / f"samples_{task}_{stamp}.jsonl"
        if not os.path.lexists(sample_path):
            raise DataError(
                f"{sample_path}: missing; the report needs lm_eval's --log_samples output for task '{task}'"
            )
        samples[task], repeats = _logged_samples(sample_path, task)
        files[task] = sample_path
        if repeats:
            repeated[task] = repeats
    return Run(results_path, results, samples, files, repeated)


def model_dtype(model_args: Any) -> str | None:
    """The dtype the model ran in: ``dtype=`` of its arguments, or, for ``auto`` or none, the saved config of a
    local ``pretrained=`` folder (what transformers then loads)."""
    dtype = model_args_value(model_args, "dtype") or model_args_value(model_args, "torch_dtype")
    if dtype not in (None, "auto"):
        return str(dtype)
    folder = model_args_value(model_args, "pretrained")
    config = Path(str(folder)) / "config.json" if folder else None
    if config is None or not config.is_file():
        return dtype
    try:
        saved = read_json(config)
    except DataError:
        return dtype
    if not isinstance(saved, dict):  # not a transformers config
        return dtype
    return saved.get("dtype") or saved.get("torch_dtype") or dtype


def run_info(run: Run) -> dict[str, Any]:
    """The run's settings as every report states them (credentials masked)."""
    results = run.results
    config = results.get("config", {})
    return {
        "results_file": str(run.results_path),
        "model": config.get("model"),
        "model_args": redact(config.get("model_args")),
        "dtype": model_dtype(config.get("model_args")),
        "model_name": results.get("model_name"),
        "lm_eval_version": results.get("lm_eval_version"),
        "date": results.get("date"),
        # Chat APIs log an empty template (the server applies its own); no template at all is None.
        "chat_template_applied": results.get("chat_template_sha") is not None
        or results.get("chat_template") is not None,
        "chat_template_sha": results.get("chat_template_sha"),
        "system_instruction": results.get("system_instruction"),
        "gen_kwargs": redact(config.get("gen_kwargs")),
        "limit": config.get("limit"),
        "task_versions": results.get("versions", {}),
        "n_samples": results.get("n-samples", {}),
        "repeated_sample_lines": dict(run.repeated_sample_lines),
    }
