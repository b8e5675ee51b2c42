"""lm-eval hooks of the PubMedQA tasks (named by the YAML files of lm_eval_tasks/pubmedqa_atlas/).

``zero_shot_prompt`` and ``generative_prompt`` are the ``doc_to_text`` hooks; each ``process_results``
hook calls the protocol's one scoring function in :mod:`.parsing`, which the report calls too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import data as data_layer
from .. import rotation
from . import BENCHMARK
from .constants import LABELS
from .loader import Item, load
from .parsing import macro_f1_value, score_choice, score_generation
from .prompts import generative_prompt, zero_shot_prompt

__all__ = [
    "builtin_custom_dataset",
    "custom_dataset",
    "generative_prompt",
    "macro_f1",
    "process_builtin_results",
    "process_generation",
    "process_results",
    "zero_shot_prompt",
]


def custom_dataset(subset: str = "full", data_dir: str | None = None, rotated: bool = False, **metadata: Any):
    """lm-eval ``custom_dataset`` hook: the test items of ``subset`` (full or n100) as split 'test'; ``rotated``
    (pubmedqa_atlas_gen_rotated): every item once per cyclic rotation of the order its instruction names the
    answers in (``label_order``), item by item.

    lm-eval also passes the task metadata and the model arguments; they are ignored, except a name with
    this benchmark's prefix, which it has no settings for (``Benchmark.read_settings``).
    """
    BENCHMARK.read_settings(metadata)
    items = load(data_dir).subset(subset)
    if not rotated:
        return data_layer.to_dataset_dict([item.doc() for item in items])
    return data_layer.to_dataset_dict(
        [
            item.doc() | {"label_order": rotation.rotated(LABELS, r), **rotation.doc_fields(r, len(LABELS))}
            for item in items
            for r in range(len(LABELS))
        ]
    )


# The fields of bigbio's "source" schema, which lm-eval's built-in pubmedqa reads.
_SOURCE_FIELDS = (
    "QUESTION",
    "CONTEXTS",
    "LABELS",
    "MESHES",
    "YEAR",
    "reasoning_required_pred",
    "reasoning_free_pred",
    "final_decision",
    "LONG_ANSWER",
)


def builtin_custom_dataset(data_dir: str | None = None, **metadata: Any):
    """Our split in the schema lm-eval's built-in ``pubmedqa`` reads (bigbio's "source" schema:
    ori_pqal.json's fields): 'test' = the 500 official test items, 'train' = the 500-item train pool."""
    import datasets

    BENCHMARK.read_settings(metadata)

    loaded = load(data_dir)

    def table(items: Sequence[Item]):
        rows = [{"pubid": item.pubid, **{k: item.record.get(k) for k in _SOURCE_FIELDS}} for item in items]
        return datasets.Dataset.from_list(rows)

    return datasets.DatasetDict({"train": table(loaded.train), "test": table(loaded.subset("full"))})


def process_results(doc: Mapping[str, Any], results: Sequence[tuple[float, bool]]) -> dict[str, Any]:
    """multiple_choice: ``results`` holds (log-likelihood, is_greedy) for yes, no, maybe."""
    verdict = score_choice(doc["final_decision"], [ll for ll, _ in results])
    return {"acc": verdict.correct, "macro_f1": (verdict.gold, verdict.pred)}


def process_builtin_results(doc: Mapping[str, Any], results: Sequence[tuple[float, bool]]) -> dict[str, float]:
    """lm-eval's built-in ``pubmedqa`` metric (``acc`` only), read by :func:`process_results`'s scoring function."""
    return {"acc": score_choice(doc["final_decision"], [ll for ll, _ in results]).correct}


def process_generation(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, Any]:
    verdict = score_generation(doc["final_decision"], results[0])
    return {"acc": verdict.correct, "macro_f1": (verdict.gold, verdict.pred), "parseable": verdict.extras["parseable"]}


def macro_f1(pairs: Sequence[Sequence[str]]) -> float:
    """lm-eval aggregation over per-sample (gold, pred) pairs: macro-F1 over yes / no / maybe.

    A custom callable gets no lm-eval stderr (its built-in F1 bootstrap is 100,000 resamples);
    the report gives the stratified bootstrap CI.
    """
    gold, pred = zip(*pairs)
    return macro_f1_value(gold, pred)
