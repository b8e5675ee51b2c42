"""MedFact-Bench (Med-V1 paper, arXiv 2603.05308): constants, score parsing, data loading, task hooks.

Protocol (shared/SPEC.md section 1): the dataset's system prompt, then
``Article:\\n{source}\\n\\nClaim:\\n{claim}``; greedy, at most 1,024 new tokens; the first
``<score>...</score>`` of the reply holds an integer -2..2 (1, 2 -> SUPPORT; 0 -> NEI;
-1, -2 -> CONTRADICT); anything else is INVALID, counted wrong, and kept in every denominator.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import data as data_layer
from ..scoring import BenchmarkSpec, Headline, ScoredItem, Stratum

logger = logging.getLogger(__name__)

BENCHMARK = "medfact_bench"
HUB = data_layer.HubDataset("ncbi/MedFact-Bench", "249028caf7ad5a3e63331269a606f4b2696693ed", split="train")
COLUMNS = ("dataset", "claim", "source", "label", "system_prompt", "user_prompt")
LOCAL_LAYOUT = (
    f"DIR/{BENCHMARK}/ holding one .parquet, .jsonl, .json or .csv file with the hub's columns ({', '.join(COLUMNS)})"
)

# Component -> rows in the published set, in the paper's order.
COMPONENT_COUNTS = {"scifact": 340, "healthver": 903, "medaesqa": 9106, "pubmedqa-fact": 500, "bioasq-fact": 3425}
TOTAL_ROWS = sum(COMPONENT_COUNTS.values())  # 14,274
LABELS = ("SUPPORT", "NEI", "CONTRADICT")
INVALID = "INVALID"
LABEL_TOTALS = {"SUPPORT": 10118, "NEI": 2988, "CONTRADICT": 1168}
# sha256 of the published system prompt (UTF-8); it has tabs, en dashes, a U+2010 hyphen and a
# trailing space, so it is always taken from the data, never retyped.
SYSTEM_PROMPT_SHA256 = "f0b47375f1680cd40c830a72c94b2d30b4865500b93b4bbb93d7bd3d7e8022ea"

# lm-eval task name -> component (task names cannot carry the hyphen of the data's component).
TASK_COMPONENTS = {f"{BENCHMARK}_{c.replace('-', '_')}": c for c in COMPONENT_COUNTS}

# Paper Figure 3, zero-shot accuracy per component and the macro mean.
PAPER_ACCURACY = {
    "Llama-3.2-3B-Instruct": {
        "scifact": 0.600,
        "healthver": 0.435,
        "medaesqa": 0.437,
        "pubmedqa-fact": 0.550,
        "bioasq-fact": 0.531,
        "macro": 0.511,
    },
    "Qwen2.5-3B-Instruct": {
        "scifact": 0.638,
        "healthver": 0.447,
        "medaesqa": 0.577,
        "pubmedqa-fact": 0.470,
        "bioasq-fact": 0.444,
        "macro": 0.515,
    },
    "Llama-3.3-70B-Instruct": {
        "scifact": 0.812,
        "healthver": 0.597,
        "medaesqa": 0.687,
        "pubmedqa-fact": 0.774,
        "bioasq-fact": 0.771,
        "macro": 0.728,
    },
    "o3-mini": {
        "scifact": 0.832,
        "healthver": 0.591,
        "medaesqa": 0.733,
        "pubmedqa-fact": 0.778,
        "bioasq-fact": 0.747,
        "macro": 0.736,
    },
    "GPT-4o-mini": {
        "scifact": 0.847,
        "healthver": 0.580,
        "medaesqa": 0.704,
        "pubmedqa-fact": 0.734,
        "bioasq-fact": 0.720,
        "macro": 0.717,
    },
    "GPT-4o": {
        "scifact": 0.832,
        "healthver": 0.576,
        "medaesqa": 0.717,
        "pubmedqa-fact": 0.776,
        "bioasq-fact": 0.777,
        "macro": 0.736,
    },
    "GPT-5": {
        "scifact": 0.818,
        "healthver": 0.615,
        "medaesqa": 0.703,
        "pubmedqa-fact": 0.788,
        "bioasq-fact": 0.753,
        "macro": 0.735,
    },
    "Med-V1-L3B": {
        "scifact": 0.844,
        "healthver": 0.575,
        "medaesqa": 0.748,
        "pubmedqa-fact": 0.746,
        "bioasq-fact": 0.725,
        "macro": 0.728,
    },
    "Med-V1-Q3B": {
        "scifact": 0.856,
        "healthver": 0.588,
        "medaesqa": 0.733,
        "pubmedqa-fact": 0.764,
        "bioasq-fact": 0.717,
        "macro": 0.732,
    },
}

# ----------------------------------------------------------------------------- prompt and parsing

# The first <score> opens the answer; it ends at </score>, or at the end of the reply when a
# stop string cut the closing tag off.
_FIRST_SCORE = re.compile(r"<score>(.*?)(?:</score>|\Z)", re.DOTALL)
_INTEGER = re.compile(r"[+-]?[0-9]+")
_STRICT = re.compile(r"\s*<think>(.*?)</think>\s*<score>(.*?)(?:</score>)?\s*", re.DOTALL)
_TAGS = ("<think>", "</think>", "<score>")


def user_prompt(source: str, claim: str) -> str:
    return f"Article:\n{source}\n\nClaim:\n{claim}"


def _score_value(content: str) -> int | None:
    content = content.strip()
    if not _INTEGER.fullmatch(content):
        return None
    value = int(content)
    return value if -2 <= value <= 2 else None


def parse_score(reply: str) -> int | None:
    """The integer in the reply's first ``<score>`` block, or None when it is not -2..2."""
    match = _FIRST_SCORE.search(reply)
    return _score_value(match.group(1)) if match else None


def score_to_label(score: int | None) -> str:
    if score is None:
        return INVALID
    return "SUPPORT" if score > 0 else "NEI" if score == 0 else "CONTRADICT"


def predicted_label(reply: str) -> str:
    return score_to_label(parse_score(reply))


def is_strict_format(reply: str) -> bool:
    """Exactly one think block then one score block holding a valid score, whitespace aside.

    A missing final ``</score>`` is accepted at the very end of the reply: the task stops
    generation at that string and backends strip it.
    """
    if any(reply.count(tag) != 1 for tag in _TAGS) or reply.count("</score>") > 1:
        return False
    match = _STRICT.fullmatch(reply)
    return match is not None and _score_value(match.group(2)) is not None


def score_reply(reply: str, gold: str) -> dict[str, float]:
    score = parse_score(reply)
    return {
        "accuracy": float(score_to_label(score) == gold),
        "parseable_score": float(score is not None),
        "strict_format": float(is_strict_format(reply)),
    }


# ----------------------------------------------------------------------------- data


@dataclass(frozen=True)
class MedFactData:
    rows: tuple[dict[str, Any], ...]
    source: str
    system_prompt: str
    is_full_set: bool


def validate_rows(rows: list[dict[str, Any]], source: str, require_full_set: bool) -> MedFactData:
    """Check columns, strings, components, labels, the shared system prompt and the user prompts."""
    data_layer.require_columns(rows, COLUMNS, source)
    data_layer.require_nonempty_strings(rows, COLUMNS, source)
    data_layer.require_allowed(rows, "dataset", COMPONENT_COUNTS, source)
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
        data_layer.require_counts(components, COMPONENT_COUNTS, source, "component")
        data_layer.require_counts(Counter(row["label"] for row in rows), LABEL_TOTALS, source, "label")
    else:
        detail = ", ".join(f"{c} {components.get(c, 0)}/{n}" for c, n in COMPONENT_COUNTS.items())
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
    kept = tuple({**{c: row[c] for c in COLUMNS}, "row": index} for index, row in enumerate(rows))
    return MedFactData(kept, source, system_prompt, is_full_set)


@data_layer.cached_on_file
def load_file(path: Path) -> MedFactData:
    return validate_rows(data_layer.read_table(path), str(path), require_full_set=False)


def load(data_dir: str | None = None) -> MedFactData:
    """The validated benchmark from ``data_dir``, ``$MEDEVAL_DATA_DIR`` or the pinned hub copy."""
    folder = data_layer.local_benchmark_dir(BENCHMARK, data_dir)
    if folder is not None:
        return load_file(data_layer.single_table_file(folder, BENCHMARK, COLUMNS))
    rows, label = data_layer.load_hub_rows(HUB, BENCHMARK, LOCAL_LAYOUT)
    return validate_rows(rows, label, require_full_set=True)


# ----------------------------------------------------------------------------- lm-eval hooks


def custom_dataset(component: str | None = None, data_dir: str | None = None, split: str | None = None, **_: Any):
    """lm-eval ``custom_dataset`` hook: the rows of one component (all rows when None) as split 'test'.

    lm-eval also passes the task metadata and the model arguments; they are ignored.
    """
    data_layer.refuse_training_split(BENCHMARK, split)
    loaded = load(data_dir)
    if component is not None and component not in COMPONENT_COUNTS:
        raise data_layer.DataError(
            f"unknown MedFact-Bench component '{component}' (known: {', '.join(COMPONENT_COUNTS)})"
        )
    rows = [row for row in loaded.rows if component is None or row["dataset"] == component]
    if not rows:
        held = ", ".join(f"{c} {n}" for c, n in Counter(row["dataset"] for row in loaded.rows).items())
        tasks = ",".join(t for t, c in TASK_COMPONENTS.items() if any(r["dataset"] == c for r in loaded.rows))
        raise data_layer.DataError(
            f"{loaded.source}: no rows for component '{component}' (the file holds: {held}). lm-eval "
            f"cannot run an empty task: run only the components the file holds (--tasks {tasks}) "
            f"or supply the full benchmark."
        )
    return data_layer.to_dataset_dict(rows)


def doc_to_text(doc: dict[str, Any]) -> str:
    return user_prompt(doc["source"], doc["claim"])


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, float]:
    metrics = score_reply(results[0], doc["label"])
    # Same per-sample value; the group averages it weighted by size (micro) while `accuracy`
    # is averaged unweighted over components (the paper's macro).
    metrics["accuracy_micro"] = metrics["accuracy"]
    return metrics


# ----------------------------------------------------------------------------- report


def score_sample(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    """A logged lm-eval sample re-scored from its raw reply."""
    reply = sample["filtered_resps"][0]
    doc = sample["doc"]
    return ScoredItem(
        task=task,
        doc_id=int(sample["doc_id"]),
        doc_hash=sample.get("doc_hash", ""),
        component=doc["dataset"],
        gold=doc["label"],
        pred=predicted_label(reply),
        correct=float(predicted_label(reply) == doc["label"]),
        extras={
            "parseable_score": float(parse_score(reply) is not None),
            "strict_format": float(is_strict_format(reply)),
        },
    )


REPORT_SPECS = (
    BenchmarkSpec(
        name=BENCHMARK,
        title="MedFact-Bench",
        task_prefix=BENCHMARK,
        score_sample=score_sample,
        expected_counts=COMPONENT_COUNTS,
        labels=LABELS,
        stratify_by=Stratum.COMPONENT,
        headline=Headline.ACCURACY_MACRO,
        reference={model: numbers for model, numbers in PAPER_ACCURACY.items()},
        notes=(
            "accuracy_macro is the paper's primary metric: the unweighted mean of the five component accuracies.",
            "INVALID (no valid <score>) is counted wrong and kept in every denominator.",
        ),
    ),
)
