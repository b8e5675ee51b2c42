"""Discovery: every benchmark package under ``lm_eval_tasks.utils`` declares itself once, and is found.

A benchmark is two folders with the same name: its task tree ``lm_eval_tasks/<name>/`` (YAML and
README) and its code package ``utils/<name>/`` whose ``__init__`` defines ``BENCHMARK =
Benchmark(...)``. The report, the command line, the ``medeval_smoke`` group and the demo-data
command read the declarations from :func:`discover`; nothing lists benchmarks by hand.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .scoring import BenchmarkSpec


@dataclass(frozen=True)
class Benchmark:
    name: str  # the task folder and the code package, e.g. "medfact_bench"
    title: str
    data_folder: str  # its folder in a data directory (DIR/<data_folder>), e.g. "pubmedqa"
    report_specs: Sequence[BenchmarkSpec] = ()
    # Adds this benchmark's subcommands to ``python -m lm_eval_tasks``.
    register_commands: Callable[[argparse._SubParsersAction], None] | None = None
    # Tasks of the medeval_smoke plumbing group (they must run on the demo data directory).
    smoke_tasks: Sequence[str] = ()
    # Every function that reads a model's reply, by name: each must give a verdict for any string, in time
    # linear in its length, never an exception (tests/test_parsers.py, examples/parse_timing.py).
    reply_parsers: Mapping[str, Callable[[str], object]] = field(default_factory=dict)
    # Writes DIR/<data_folder> of the demo data directory from the shared data folder:
    # build_demo_data(shared_data, target_folder). None: the shared folder is linked as it is.
    build_demo_data: Callable[[Path, Path], None] | None = None


@functools.cache
def discover() -> tuple[Benchmark, ...]:
    """Every declared benchmark, by name."""
    from lm_eval_tasks import utils

    found = []
    for module in sorted(pkgutil.iter_modules(utils.__path__), key=lambda m: m.name):
        if not module.ispkg:
            continue
        declared = getattr(importlib.import_module(f"{utils.__name__}.{module.name}"), "BENCHMARK", None)
        if declared is None:
            continue
        if not isinstance(declared, Benchmark) or declared.name != module.name:
            raise TypeError(f"{utils.__name__}.{module.name}.BENCHMARK must be Benchmark(name={module.name!r}, ...)")
        found.append(declared)
    return tuple(found)


def report_specs() -> list[BenchmarkSpec]:
    return [spec for benchmark in discover() for spec in benchmark.report_specs]


def build_demo_data_dir(shared_data: str | os.PathLike, out_dir: str | os.PathLike) -> Path:
    """A data directory for trying every task offline, from the real public pieces in ``shared_data``.

    Each benchmark writes its own folder (see its README for what it holds) or, when it ships its
    real data as it is, gets a link to the shared folder.
    """
    shared_data, out_dir = Path(shared_data).resolve(), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for benchmark in discover():
        target, source = out_dir / benchmark.data_folder, shared_data / benchmark.data_folder
        if benchmark.build_demo_data is not None:
            benchmark.build_demo_data(shared_data, target)
        elif source.is_dir() and not target.exists():
            target.symlink_to(source, target_is_directory=True)
    return out_dir
