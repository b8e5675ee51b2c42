"""Rebuilding MillerQA's withheld MedBullets file from the user's copy of its public source.

Upstream ships only the item ids (``{curated,pre_qc}/medbullets/item_ids.csv``); the items are the
five-option ``LangAGI-Lab/medbullets_op5`` test split, the id being the 0-based row position
(lm_eval_tasks/millerqa/README.md, "MedBullets").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import data as data_layer
from ..files import write_atomically
from .constants import LOCAL_LAYOUT, MANIFEST_COUNT_COLUMN, MEDBULLETS, PRE_QC, PUBLISHED_COUNTS, SOURCE_FOLDER
from .loader import resolve_root

SOURCE_COLUMNS = ("question", "opa", "opb", "opc", "opd", "ope", "answer_idx")
SOURCE_ROWS = PUBLISHED_COUNTS[PRE_QC][MEDBULLETS]  # the pre-QC id list is every source row, 0..307
_OPTION_COLUMNS = ("opa", "opb", "opc", "opd", "ope")


def medbullets_items(source: str | Path) -> list[dict[str, Any]]:
    """The 308 five-option MedBullets items of a local copy of ``LangAGI-Lab/medbullets_op5`` (test split).

    Any format :func:`data.read_table` reads (Parquet, JSONL, JSON, CSV). The item id is the
    0-based row position, which is how the shipped id lists refer to items.
    """
    rows = data_layer.read_table(source)
    data_layer.require_columns(rows, SOURCE_COLUMNS, source)
    data_layer.require_nonempty_strings(rows, SOURCE_COLUMNS, source)
    if len(rows) != SOURCE_ROWS:
        raise data_layer.DataError(
            f"{source}: {len(rows)} rows; the five-option MedBullets set (LangAGI-Lab/medbullets_op5) has {SOURCE_ROWS}"
        )
    items = []
    for number, row in enumerate(rows, start=1):
        answer = row["answer_idx"].strip().upper()
        if len(answer) != 1 or answer not in "ABCDE":
            raise data_layer.row_error(source, number, "answer_idx", f"{row['answer_idx']!r} is not one of A-E")
        options = [row[column].strip() for column in _OPTION_COLUMNS]
        if isinstance(row.get("answer"), str) and row["answer"].strip() != options["ABCDE".index(answer)]:
            raise data_layer.row_error(source, number, "answer", f"{row['answer']!r} is not option {answer}")
        items.append(
            {
                "id": number - 1,
                "question": row["question"].strip(),
                "options": options,
                "target": "ABCDE".index(answer),
                "kind": "medbullets_op5",
            }
        )
    return items


def rebuild_medbullets(source: str | Path, out_dir: str | Path) -> list[Path]:
    """Write ``medbullets.json`` for every release whose ``item_ids.csv`` the data directory holds."""
    root = resolve_root(str(out_dir))
    if root is None:
        raise data_layer.DataError(f"{out_dir}: not a data directory")
    items = medbullets_items(source)
    written = []
    for release in MANIFEST_COUNT_COLUMN:
        folder = root / release / SOURCE_FOLDER[MEDBULLETS]
        ids_file = folder / "item_ids.csv"
        if not ids_file.is_file():
            continue
        rows = data_layer.read_table(ids_file)
        data_layer.require_columns(rows, ("id",), ids_file)
        wanted, row_of = [], {}
        for number, row in enumerate(rows, start=1):
            if not (row["id"].isascii() and row["id"].isdigit()) or int(row["id"]) >= len(items):
                raise data_layer.row_error(ids_file, number, "id", f"{row['id']!r} is not a row of the source")
            if int(row["id"]) in row_of:
                raise data_layer.row_error(
                    ids_file, number, "id", f"duplicate id {row['id']!r} (first on row {row_of[int(row['id'])]})"
                )
            row_of[int(row["id"])] = number
            wanted.append(int(row["id"]))
        expected = PUBLISHED_COUNTS[release][MEDBULLETS]
        if len(wanted) != expected:
            raise data_layer.DataError(f"{ids_file}: {len(wanted)} ids; the {release} release has {expected}")
        content = json.dumps([items[i] for i in wanted], ensure_ascii=False, indent=1) + "\n"
        written += write_atomically(folder, {f"{MEDBULLETS}.json": content.encode("utf-8")})
    if not written:
        raise data_layer.DataError(f"{root}: no {{curated,pre_qc}}/{MEDBULLETS}/item_ids.csv; {LOCAL_LAYOUT}")
    return written
