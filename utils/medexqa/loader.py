"""MedExQA data: the validated rows of the local or pinned hub TSV files, and the task docs built from them.

See lm_eval_tasks/medexqa/README.md (Data; Options, answer shuffling). Answer shuffling is optional
and deterministic: the permutation of an item depends only on the seed and the item (specialty,
split, row), and is recorded in the doc together with every other setting that moves a score.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import data as data_layer
from .. import overlap
from ..rotation import doc_fields, rotated
from . import constants
from .constants import (
    COLUMNS,
    DATA_FOLDER,
    FIRST_QUESTIONS,
    HUB_REPO,
    HUB_REVISION,
    LETTERS,
    NAME,
    PUBLISHED_COUNTS,
    SPECIALTIES,
    SPLITS,
    Specialty,
)

logger = logging.getLogger(__name__)

LOCAL_LAYOUT = (
    f"DIR/{DATA_FOLDER}/{{test,dev}}/<specialty>_{{test,dev}}.tsv, the hub's header-less TSV files "
    f"(columns {', '.join(COLUMNS)}); specialties: " + ", ".join(s.stem for s in SPECIALTIES.values())
)


def validate(
    rows: list[dict[str, Any]], source: str, spec: Specialty, split: str, require_count: bool
) -> tuple[dict[str, Any], ...]:
    """Eight non-empty string cells per row, answers A-D, no item twice, and the published row count.

    A local file with another count is kept (with a warning: its scores are not the paper's); the
    hub copy must have the published count.
    """
    data_layer.require_columns(rows, COLUMNS, source)
    data_layer.require_nonempty_strings(rows, COLUMNS, source)
    data_layer.require_allowed(rows, "answer", LETTERS, source)
    _refuse_other_files_rows(rows, source, spec, split)
    _refuse_repeated_items(rows, source)
    expected = PUBLISHED_COUNTS[split][spec.code]
    if len(rows) != expected:
        if require_count:
            data_layer.require_counts({spec.code: len(rows)}, {spec.code: expected}, source, "row")
        logger.warning(
            "%s holds %d rows, the published %s split of %s has %d: scores are not comparable with the paper.",
            source,
            len(rows),
            split,
            spec.code,
            expected,
        )
    return tuple(
        {**row, "specialty": spec.code, "split": split, "row": number} for number, row in enumerate(rows, start=1)
    )


def _refuse_other_files_rows(rows: list[dict[str, Any]], source: str, spec: Specialty, split: str) -> None:
    """A row that opens another specialty's (or split's) published file means the file was copied over this one."""
    owners = {digest: key for key, digest in FIRST_QUESTIONS.items() if key != (split, spec.code)}
    for number, row in enumerate(rows, start=1):
        owner = owners.get(hashlib.sha256(row["question"].encode("utf-8")).hexdigest()[:16])
        if owner is not None:
            other_split, other_code = owner
            raise data_layer.DataError(
                f"{source}, row {number}, field question: the first question of the {other_split} file of "
                f"{SPECIALTIES[other_code].stem} ({other_code}), not of {spec.stem} ({spec.code}) {split}: "
                "this file holds another specialty's rows"
            )


def _refuse_repeated_items(rows: list[dict[str, Any]], source: str) -> None:
    """A row with an earlier row's question and options would count one item twice (no published file has one);
    a full-size file with one row pasted over another passes every count."""
    first: dict[tuple[str, ...], int] = {}
    for number, row in enumerate(rows, start=1):
        earlier = first.setdefault(tuple(row[column] for column in ("question", *LETTERS)), number)
        if earlier != number:
            raise data_layer.row_error(
                source, number, "question", f"repeats row {earlier} (the same question and options): counted twice"
            )


@data_layer.cached_on_file
def _load_file(path: Path, code: str, split: str) -> tuple[dict[str, Any], ...]:
    """The validated rows of one local TSV (header-less: every line is an item)."""
    rows = data_layer.read_table(path, delimiter="\t", fieldnames=COLUMNS)
    return validate(rows, str(path), SPECIALTIES[code], split, require_count=False)


def _load_specialty(spec: Specialty, split: str, data_dir: str | None) -> tuple[dict[str, Any], ...]:
    folder = data_layer.local_benchmark_dir(DATA_FOLDER, data_dir)
    if folder is not None:
        path = folder / spec.path(split)
        if not path.is_file():
            raise data_layer.DataError(f"{path}: missing. Expected layout: {LOCAL_LAYOUT}")
        return _load_file(path, code=spec.code, split=split)
    path = data_layer.download_hub_file(HUB_REPO, spec.path(split), HUB_REVISION, DATA_FOLDER, LOCAL_LAYOUT)
    rows = data_layer.read_table(path, delimiter="\t", fieldnames=COLUMNS)
    return validate(
        rows, f"hf://datasets/{HUB_REPO}@{HUB_REVISION}/{spec.path(split)}", spec, split, require_count=True
    )


def load(
    data_dir: str | None = None, *, split: str = "test", specialty: str | None = None
) -> tuple[dict[str, Any], ...]:
    """The rows of one specialty (code or file stem), or of all five in table order, from ``data_dir``,
    ``$MEDEVAL_DATA_DIR`` or the pinned hub copy. Each row adds ``specialty``, ``split`` and ``row`` (1-based line)."""
    data_layer.refuse_training_split(NAME, split)
    if split not in SPLITS:
        raise data_layer.DataError(f"MedExQA has the splits {', '.join(SPLITS)}; asked for '{split}'")
    chosen = [constants.specialty(specialty)] if specialty is not None else list(SPECIALTIES.values())
    return tuple(row for spec in chosen for row in _load_specialty(spec, split, data_dir))


# ----------------------------------------------------------------------------- task docs


def permutation(seed: int, code: str, split: str, row: int) -> tuple[str, ...]:
    """The original letters in the order they are shown (``result[i]`` is shown as ``LETTERS[i]``).

    A pure function of the seed and the item: the same in every process, run and Python version.
    """

    def rank(letter: str) -> str:
        return hashlib.sha256(f"{seed}:{code}:{split}:{row}:{letter}".encode("utf-8")).hexdigest()

    return tuple(sorted(LETTERS, key=rank))


def to_doc(row: Mapping[str, Any], shuffle_seed: int | None, rotation: int | None = None) -> dict[str, Any]:
    """The task doc: options (shuffled when a seed is given, then turned by ``rotation`` places when given:
    :func:`.rotation.rotated`), gold letter, and the settings it was built with.

    ``split``, ``shuffle`` and ``shuffle_seed`` (-1 when not shuffled) are every setting that can move
    the score of the item; the report lists them (:func:`.report_spec.settings_of`).
    """
    order = LETTERS if shuffle_seed is None else permutation(shuffle_seed, row["specialty"], row["split"], row["row"])
    if rotation is not None:
        order = rotated(order, rotation)
    return {
        "specialty": row["specialty"],
        "split": row["split"],
        "row": row["row"],
        "question": row["question"],
        **{shown: row[original] for shown, original in zip(LETTERS, order)},
        "exp0": row["exp0"],
        "exp1": row["exp1"],
        "answer": LETTERS[order.index(row["answer"])],
        "original_answer": row["answer"],
        "permutation": "".join(order),
        "shuffle": shuffle_seed is not None,
        "shuffle_seed": -1 if shuffle_seed is None else int(shuffle_seed),
        **({} if rotation is None else doc_fields(rotation, len(LETTERS))),
    }


def overlap_items(data_dir: Path) -> tuple[list[overlap.Item], list[str]]:
    """Every row of both splits in ``data_dir`` (utils/overlap.py), one component per file (``<stem>_<split>``),
    each item by its 1-based row."""
    return [
        overlap.Item(NAME, f"{SPECIALTIES[row['specialty']].stem}_{split}", str(row["row"]), row["question"])
        for split in SPLITS
        for row in load(str(data_dir), split=split)
    ], []
