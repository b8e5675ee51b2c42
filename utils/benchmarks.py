"""Discovery: every benchmark package under ``lm_eval_tasks.utils`` declares itself once, and is found.

A benchmark is two folders with the same name: its task tree ``lm_eval_tasks/<name>/`` (YAML and
README) and its code package ``utils/<name>/`` whose ``__init__`` defines ``BENCHMARK =
Benchmark(...)``. The report, the command line, the ``medeval_smoke`` group and the demo-data
command read the declarations from :func:`discover`; nothing lists benchmarks by hand.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import importlib
import os
import pkgutil
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from .data import DataError
from .scoring import BenchmarkSpec, ScoredItem


class SettingKind(Enum):
    """What a setting's value must be; :func:`Setting.parse` is the one validator of each."""

    FLAG = "true or false"
    COUNT = "an integer (0 or more, at most 18 digits)"  # seeds and sizes
    TEXT = "text"


@dataclass(frozen=True)
class Asset:
    """One pinned external asset a benchmark or model reads: where it comes from and at which revision."""

    name: str
    source: str  # a hub dataset id, a repository, a PyPI package
    revision: str  # a commit, a URL with its commit, a package version
    licence: str  # as declared upstream
    sha256: str | None = None  # of the file, where we check one
    published_counts: Mapping[str, int] | None = None  # items per component in the paper


@dataclass(frozen=True)
class Setting:
    """One user setting of a benchmark, given as ``--metadata <benchmark>_<name>=VALUE``."""

    name: str  # unscoped, e.g. "shuffle_seed"
    kind: SettingKind
    default: Any
    moves: str  # what it changes, for the README and errors

    def parse(self, benchmark: str, value: Any) -> Any:
        """``value`` as this setting's type; a short DataError naming the scoped setting otherwise.

        lm-eval passes ``--metadata`` values as text or as what they look like (``7`` an int, ``true`` a
        bool). The default is returned as it is (it may be None: not given).
        """
        if value is self.default:
            return value
        if self.kind is SettingKind.FLAG:
            if isinstance(value, bool):
                return value
            if isinstance(value, int) and value in (0, 1):
                return bool(value)
            if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
                return value.strip().lower() in _TRUE
        elif self.kind is SettingKind.COUNT:
            # Plain digits only ("1_000", "+7", "7.0" are not), at most 18: int() of a huge digit string is slow
            # and int <-> str raises past 4,300 digits.
            if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**_MAX_DIGITS:
                return value
            if isinstance(value, str) and _COUNT.fullmatch(value.strip()):
                return int(value.strip())
        elif isinstance(value, str):
            return value
        else:
            raise DataError(
                f"--metadata {benchmark}_{self.name}={shown(value)} was read as a {type(value).__name__}, not text; "
                f"""pass it as JSON: --metadata '{{"{benchmark}_{self.name}": "..."}}'"""
            )
        raise DataError(f"--metadata {benchmark}_{self.name}={shown(value)}: expected {self.kind.value}")


_TRUE, _FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off", ""})
_MAX_DIGITS = 18
_COUNT = re.compile(rf"[0-9]{{1,{_MAX_DIGITS}}}")
_SHOWN_CHARS = 80


def shown(value: Any) -> str:
    """A value for an error message: short, and never itself an error (the repr of a huge int raises)."""
    if isinstance(value, int) and not -(10**_MAX_DIGITS) < value < 10**_MAX_DIGITS:
        return f"<an integer of {value.bit_length()} bits>"
    text = repr(value) if isinstance(value, (str, int, float, type(None))) else f"<{type(value).__name__}>"
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


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
    # Every function that reads a model's reply alone, by name: each must give a verdict for any string, in time
    # linear in its length, never an exception (tests/test_parsers.py, examples/parse_timing.py; a parser that reads
    # a reply against an item is bound to real items in tests/reply_parsers.py).
    reply_parsers: Mapping[str, Callable[[str], object]] = field(default_factory=dict)
    # Writes DIR/<data_folder> of the demo data directory from the shared data folder:
    # build_demo_data(shared_data, target_folder). None: the shared folder is linked as it is.
    build_demo_data: Callable[[Path, Path], None] | None = None
    # Its user settings, each given as --metadata <name>_<setting>=VALUE (read_settings reads them all).
    settings: Sequence[Setting] = ()
    # Every pinned external asset it reads (ASSETS.md lists them all: python -m lm_eval_tasks assets).
    assets: Sequence[Asset] = ()
    # Its question items for the cross-benchmark overlap check (utils/overlap.py), read from a local data directory:
    # overlap_items(data_dir) -> (items, what was left out and why). None: it has no question items to compare.
    overlap_items: Callable[[Path], tuple[Sequence[Any], Sequence[str]]] | None = None
    # The ids a scored item of its sections shares with other benchmarks' items, as (namespace, id) pairs: a report
    # names the items two sections of one run share (overlap.run_overlaps). None: its items share none.
    shared_ids: Callable[[ScoredItem], Sequence[tuple[str, str]]] | None = None

    def read_settings(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        """``{setting name: value}`` of every declared setting, from what lm-eval hands a task's hook.

        lm-eval gives every task of a run the same ``--metadata``, so a setting carries its benchmark's name:
        an unscoped one (``shuffle_seed=7``) would also reach every other benchmark and is refused with the
        name to use; a name with this benchmark's prefix that is no setting (``medexqa_shufle``) is refused
        with the closest valid one. Other names (other benchmarks' settings, model arguments) are left alone.
        """
        declared = {f"{self.name}_{setting.name}": setting for setting in self.settings}
        for setting in self.settings:
            if setting.name in metadata:
                raise DataError(
                    f"--metadata {setting.name}={shown(metadata[setting.name])}: lm-eval gives every task the same "
                    f"metadata, so a setting of one benchmark must name it: use {self.name}_{setting.name}=... "
                    "(a setting of one benchmark never changes another's)."
                )
        for key in metadata:
            if isinstance(key, str) and key.startswith(f"{self.name}_") and key not in declared:
                name = key[:_SHOWN_CHARS]
                # Compared without the prefix, which every candidate shares and would make anything look close.
                close = difflib.get_close_matches(name[len(self.name) + 1 :], [s.name for s in self.settings], n=1)
                hint = (
                    f"did you mean {self.name}_{close[0]}?"
                    if close
                    else f"its settings are {', '.join(declared)}."
                    if declared
                    else f"{self.title} has no settings."
                )
                raise DataError(f"--metadata {name}: {self.title} has no setting of that name; {hint}")
        return {
            setting.name: setting.parse(self.name, metadata.get(scoped, setting.default))
            for scoped, setting in declared.items()
        }


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
