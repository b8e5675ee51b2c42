"""Loading and validating MedFact-Bench: a local file or the pinned hub copy (lm_eval_tasks/medfact_bench/README.md)."""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import data as data_layer
from .constants import (
    COLUMNS,
    DATA_FOLDER,
    HUB,
    LABEL_SOURCE,
    LABEL_SOURCES,
    LABEL_TOTALS,
    LABELS,
    LOCAL_LAYOUT,
    PUBLISHED_COUNTS,
    SYSTEM_PROMPT_SHA256,
    TOTAL_ROWS,
)
from .prompts import user_prompt

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MedFactData:
    rows: tuple[dict[str, Any], ...]  # the file's columns (label_source if it has one) plus "row", 0-based
    source: str
    system_prompt: str
    is_full_set: bool


def validate_rows(rows: list[dict[str, Any]], source: str, require_full_set: bool) -> MedFactData:
    """Check columns, strings, components, labels (and their source), the shared system prompt and the user prompts.

    ``label_source`` is optional, but a file that has it must give it on every row.
    """
    data_layer.require_columns(rows, COLUMNS, source)
    columns = COLUMNS
    if any(LABEL_SOURCE in row for row in rows):
        columns += (LABEL_SOURCE,)
        data_layer.require_columns(rows, columns, source)
        data_layer.require_allowed(rows, LABEL_SOURCE, LABEL_SOURCES, source)
    data_layer.require_nonempty_strings(rows, COLUMNS, source)
    data_layer.require_allowed(rows, "dataset", PUBLISHED_COUNTS, source)
    data_layer.require_allowed(rows, "label", LABELS, source)
    system_prompt = data_layer.require_single_value(rows, "system_prompt", source)
    for number, row in enumerate(rows, start=1):
        if row["user_prompt"] != user_prompt(row["source"], row["claim"]):
            raise data_layer.row_error(
                source, number, "user_prompt", "is not 'Article:\\n{source}\\n\\nClaim:\\n{claim}' built from this row"
            )
    components = Counter(row["dataset"] for row in rows)
    is_full_set = len(rows) == TOTAL_ROWS
    if require_full_set or is_full_set:
        data_layer.require_counts(components, PUBLISHED_COUNTS, source, "component")
        data_layer.require_counts(Counter(row["label"] for row in rows), LABEL_TOTALS, source, "label")
    else:
        detail = ", ".join(f"{c} {components.get(c, 0)}/{n}" for c, n in PUBLISHED_COUNTS.items())
        logger.warning(
            "%s holds %d of the %d MedFact-Bench rows (%s): scores are not comparable with the paper.",
            source,
            len(rows),
            TOTAL_ROWS,
            detail,
        )
    if hashlib.sha256(system_prompt.encode("utf-8")).hexdigest() != SYSTEM_PROMPT_SHA256:
        logger.warning(
            "%s: the system prompt differs from the published one (sha256 %s); it is used as given.",
            source,
            SYSTEM_PROMPT_SHA256,
        )
    kept = tuple({**{c: row[c] for c in columns}, "row": index} for index, row in enumerate(rows))
    return MedFactData(kept, source, system_prompt, is_full_set)


@data_layer.cached_on_file
def load_file(path: Path) -> MedFactData:
    return validate_rows(data_layer.read_table(path), str(path), require_full_set=False)


def load(data_dir: str | None = None) -> MedFactData:
    """The validated benchmark from ``data_dir``, ``$MEDEVAL_DATA_DIR`` or the pinned hub copy."""
    folder = data_layer.local_benchmark_dir(DATA_FOLDER, data_dir)
    if folder is not None:
        return load_file(data_layer.single_table_file(folder, DATA_FOLDER, COLUMNS))
    rows, label = data_layer.load_hub_rows(HUB, DATA_FOLDER, LOCAL_LAYOUT)
    return validate_rows(rows, label, require_full_set=True)
