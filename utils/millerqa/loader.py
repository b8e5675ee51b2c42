"""Loading MillerQA: where the benchmark files come from, and the checks on each file and item.

Sources, in order: ``--metadata data_dir=DIR``, ``$MEDEVAL_DATA_DIR``, the pinned GitHub commit (downloaded
once into the cache). Every problem is a DataError naming file, row and field (lm_eval_tasks/millerqa/README.md,
"Data").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import data as data_layer
from .. import overlap
from ..files import cache_dir
from ..scoring import ScoredItem
from . import constants
from .constants import (
    BENCHMARKS,
    CURATED,
    DATA_FOLDER,
    GITHUB_COMMIT,
    GITHUB_REPO,
    LETTERS,
    LOCAL_LAYOUT,
    MANIFEST,
    MANIFEST_COUNT_COLUMN,
    MEDBULLETS,
    NAME,
    PUBLISHED_COUNTS,
    SOURCE_FOLDER,
)


def resolve_root(data_dir: str | None) -> Path | None:
    """The folder holding ``_manifest.csv``, ``curated/`` and ``pre_qc/``; None means the GitHub copy.

    ``data_dir`` may be a data directory (``DIR/millerqa/``) or a clone of the upstream repository.
    """
    if data_dir and (Path(data_dir).expanduser() / "benchmarks" / MANIFEST).is_file():
        return Path(data_dir).expanduser() / "benchmarks"
    folder = data_layer.local_benchmark_dir(DATA_FOLDER, data_dir)
    if folder is None:
        return None
    return folder / "benchmarks" if (folder / "benchmarks" / MANIFEST).is_file() else folder


def _file(root: Path | None, relative: str) -> Path:
    """A file of the benchmarks folder: local, or downloaded once from the pinned GitHub commit."""
    if root is not None:
        if not (root / relative).is_file():
            raise data_layer.DataError(f"{root / relative}: missing; expected {LOCAL_LAYOUT}")
        return root / relative
    return data_layer.download_pinned_file(
        f"{constants.GITHUB_RAW}/{relative}",
        cache_dir() / DATA_FOLDER / GITHUB_COMMIT / relative,
        DATA_FOLDER,
        LOCAL_LAYOUT,
    )


@data_layer.cached_on_file
def read_manifest(path: Path) -> dict[str, dict[str, Any]]:
    """``_manifest.csv`` rows by benchmark, checked against the pinned release counts."""
    rows = data_layer.read_table(path)
    data_layer.require_columns(rows, ("benchmark", *MANIFEST_COUNT_COLUMN.values()), path)
    by_name: dict[str, dict[str, Any]] = {}
    row_of: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        name = row["benchmark"]
        if name not in PUBLISHED_COUNTS[CURATED]:
            raise data_layer.row_error(path, number, "benchmark", f"unknown benchmark {name!r}")
        if name in row_of:
            raise data_layer.row_error(
                path, number, "benchmark", f"{name!r} appears twice (first on row {row_of[name]})"
            )
        for release, column in MANIFEST_COUNT_COLUMN.items():
            if row[column] != str(PUBLISHED_COUNTS[release][name]):
                raise data_layer.row_error(
                    path,
                    number,
                    column,
                    f"{row[column]!r} differs from the pinned release "
                    f"({PUBLISHED_COUNTS[release][name]} items at {GITHUB_REPO}@{GITHUB_COMMIT})",
                )
        by_name[name], row_of[name] = row, number
    missing = sorted(set(PUBLISHED_COUNTS[CURATED]) - set(by_name))
    if missing:
        raise data_layer.DataError(f"{path}: no row for {', '.join(missing)}")
    return by_name


def _kind(row: dict[str, Any], path: Path, number: int) -> str:
    """The item's category label: ``kind``, else medethicsqa's older ``categories`` (as upstream); lists joined."""
    field = "kind" if row.get("kind") else "categories"
    kind = row.get(field)
    if kind is None or isinstance(kind, str):
        return kind or ""
    if isinstance(kind, list) and all(isinstance(part, str) for part in kind):
        return ", ".join(kind)
    raise data_layer.row_error(path, number, field, f"expected a string or a list of strings, got {kind!r}")


@data_layer.cached_on_file
def read_benchmark_file(path: Path) -> tuple[dict[str, Any], ...]:
    """Items normalised as the authors' loader does (id as text, stripped question and options).

    Items the authors' loader would skip with a warning (fewer than two options, a target out of
    range) are errors here: nothing is silently dropped. So are values of the wrong type, and an id
    given twice (ids are compared as text, as upstream: 7 and "7" are the same id).
    """
    rows = data_layer.read_table(path)
    items, seen = [], {}
    for number, row in enumerate(rows, start=1):
        for field in ("id", "question", "options", "target"):
            if field not in row:
                raise data_layer.row_error(path, number, field, "missing")
        item_id, question, options, target = row["id"], row["question"], row["options"], row["target"]
        if isinstance(item_id, bool) or not isinstance(item_id, (str, int)) or not str(item_id).strip():
            raise data_layer.row_error(path, number, "id", f"expected a non-empty string or integer, got {item_id!r}")
        if not isinstance(question, str) or not question.strip():
            raise data_layer.row_error(path, number, "question", "expected a non-empty string")
        if not isinstance(options, list) or not 2 <= len(options) <= len(LETTERS):
            raise data_layer.row_error(path, number, "options", f"expected a list of 2 to {len(LETTERS)} strings")
        if not all(isinstance(option, str) for option in options):
            raise data_layer.row_error(path, number, "options", "every option must be a string")
        if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < len(options):
            raise data_layer.row_error(
                path, number, "target", f"{target!r} is not an index into the {len(options)} options"
            )
        if str(item_id) in seen:
            raise data_layer.row_error(
                path, number, "id", f"duplicate id {item_id!r} (first on row {seen[str(item_id)]})"
            )
        seen[str(item_id)] = number
        items.append(
            {
                "id": str(item_id),
                "question": question.strip(),
                "options": [o.strip() for o in options],
                "target": target,
                "kind": _kind(row, path, number),
            }
        )
    return tuple(items)


def medbullets_missing_error(path: Path | str, release: str) -> data_layer.DataError:
    return data_layer.DataError(
        f"{path}: MedBullets is not redistributed upstream (no licence could be established), so "
        f"'{MEDBULLETS}' has no data here. Rebuild it from your own copy of its public source "
        f"(LangAGI-Lab/medbullets_op5, 308 rows) and the shipped item ids:\n"
        f"  python -m lm_eval_tasks millerqa-rebuild-medbullets --source FILE --out DIR\n"
        f"then pass --metadata data_dir=DIR. Every other MillerQA task, and the groups without "
        f"'_with_medbullets' in their name, run without it ({release} release)."
    )


def load(benchmark: str, release: str = CURATED, data_dir: str | None = None) -> tuple[dict[str, Any], ...]:
    """The validated items of one benchmark file, in file order, with its manifest count checked."""
    if benchmark not in PUBLISHED_COUNTS[CURATED]:
        raise data_layer.DataError(f"unknown MillerQA benchmark '{benchmark}' (known: {', '.join(BENCHMARKS)})")
    if release not in MANIFEST_COUNT_COLUMN:
        raise data_layer.DataError(f"unknown MillerQA release '{release}' (known: {', '.join(MANIFEST_COUNT_COLUMN)})")
    root = resolve_root(data_dir)
    relative = f"{release}/{SOURCE_FOLDER[benchmark]}/{benchmark}.json"
    if benchmark == MEDBULLETS and (root is None or not (root / relative).is_file()):
        raise medbullets_missing_error(root / relative if root else f"{constants.GITHUB_RAW}/{relative}", release)
    manifest = read_manifest(_file(root, MANIFEST))
    path = _file(root, relative)
    items = read_benchmark_file(path)
    expected = int(manifest[benchmark][MANIFEST_COUNT_COLUMN[release]])
    if len(items) != expected:
        raise data_layer.DataError(
            f"{path}: {len(items)} items, but {MANIFEST} gives {expected} for '{benchmark}' in the {release} release"
        )
    return items


# The layout of the curated pubmedqa file's questions: "QUESTION: <question>\nCONTEXTS:\n<abstract>"; its ids are
# PubMed ids (PubMedQA's pubid).
_PUBMEDQA = "pubmedqa"
_QUESTION_HEAD, _CONTEXTS_HEAD = "QUESTION: ", "\nCONTEXTS:"


def overlap_question(benchmark: str, question: str) -> str:
    """The question an item asks, for the overlap check: pubmedqa's question line without its abstract (a question
    not laid out that way is kept whole), every other benchmark's question as it is."""
    if benchmark != _PUBMEDQA or not question.startswith(_QUESTION_HEAD) or _CONTEXTS_HEAD not in question:
        return question
    return question[len(_QUESTION_HEAD) : question.index(_CONTEXTS_HEAD)]


def overlap_items(data_dir: Path) -> tuple[list[overlap.Item], list[str]]:
    """Every curated item of every benchmark file in ``data_dir`` (utils/overlap.py); pubmedqa's ids are PMIDs.

    MedBullets is left out, with the reason, when its rebuilt file is not there.
    """
    items, left_out = [], []
    root = resolve_root(str(data_dir))
    for benchmark in BENCHMARKS:
        relative = f"{CURATED}/{SOURCE_FOLDER[benchmark]}/{benchmark}.json"
        if benchmark == MEDBULLETS and (root is None or not (root / relative).is_file()):
            left_out.append(f"{MEDBULLETS}: not redistributed upstream, and not rebuilt in {data_dir}")
            continue
        items.extend(
            overlap.Item(
                NAME,
                benchmark,
                item["id"],
                overlap_question(benchmark, item["question"]),
                ((overlap.PMID, item["id"]),) if benchmark == _PUBMEDQA else (),
            )
            for item in load(benchmark, CURATED, str(data_dir))
        )
    return items, left_out


def shared_ids(item: ScoredItem) -> tuple[tuple[str, str], ...]:
    """A scored pubmedqa item's PMID (its id), which PubMedQA's items share; other benchmarks' items share none."""
    return ((overlap.PMID, item.item_id),) if item.component == _PUBMEDQA and item.item_id else ()
