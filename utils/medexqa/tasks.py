"""lm-eval hooks of the MedExQA tasks: data, prompts, per-sample scores and aggregations.

See lm_eval_tasks/medexqa/README.md. lm-eval gives every task of a run the same ``--metadata``, so
MedExQA's own settings carry its name (``medexqa_split``, ``medexqa_shuffle``,
``medexqa_shuffle_seed``, declared in its ``Benchmark``); their unscoped forms are refused, since they
would also reach, and could change, every other benchmark in the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import data as data_layer
from . import BENCHMARK
from .constants import LETTERS
from .loader import load, to_doc
from .parsing import EXPLICIT_STEPS, score_generation, score_logit
from .prompts import generation_prompt, logit_prompt

__all__ = [
    "custom_dataset",
    "explicit_share",
    "generation_prompt",
    "gold_index",
    "logit_prompt",
    "process_generation_results",
    "process_logit_results",
]


def custom_dataset(specialty: str, data_dir: str | None = None, rotated: bool = False, **metadata: Any):
    """lm-eval ``custom_dataset`` hook: one specialty's items as split 'test', its dev items as 'dev'.

    ``rotated`` (the ``medexqa*_rotated`` tasks): every evaluated item once per cyclic rotation of its options,
    item by item (so ``--limit`` keeps whole questions), the few-shot dev items as they are.

    ``--metadata medexqa_split=dev`` evaluates the dev items instead; ``medexqa_shuffle=true``
    (optionally ``medexqa_shuffle_seed=N``) shuffles the options of every item. lm-eval also passes
    the other metadata and the model arguments: a training ``split`` is refused as by every
    benchmark, MedExQA's settings are read by its declaration (``Benchmark.read_settings``), the rest is
    ignored.
    """
    if isinstance(metadata.get("split"), str):
        data_layer.refuse_training_split(BENCHMARK.name, metadata["split"])
    settings = BENCHMARK.read_settings(metadata)
    seed = settings["shuffle_seed"] if settings["shuffle"] else None
    evaluated = load(data_dir, split=settings["split"], specialty=specialty)
    dev = load(data_dir, split="dev", specialty=specialty)
    import datasets

    return datasets.DatasetDict(
        {
            "test": datasets.Dataset.from_list(
                [to_doc(row, seed, r) for row in evaluated for r in (range(len(LETTERS)) if rotated else [None])]
            ),
            "dev": datasets.Dataset.from_list([to_doc(row, seed) for row in dev]),
        }
    )


def gold_index(doc: Mapping[str, Any]) -> int:
    return LETTERS.index(doc["answer"])


def process_logit_results(doc: Mapping[str, Any], results: Sequence[tuple[float, bool]]) -> dict[str, float]:
    """Accuracy of the most likely letter (first on ties, as lm-eval's ``acc``)."""
    correct = float(score_logit(doc, [ll for ll, _ in results]).correct)
    # The same per-sample value twice: the group averages `acc` over specialties (the
    # paper's macro) and `acc_micro` over items.
    return {"acc": correct, "acc_micro": correct}


def process_generation_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, Any]:
    score = score_generation(doc, results[0])
    correct = float(score.correct)
    return {
        "acc": correct,
        "acc_micro": correct,
        # the share of replies with a usable letter, as `answered` means everywhere in this package
        "answered": float(score.answered),
        # logged per sample; the task's value is explicit_share of these
        "extraction_step": score.extraction.step,
    }


def explicit_share(steps: Sequence[str]) -> float:
    """Share of all replies whose letter was stated explicitly (answer/choose, "X is correct", leading letter)."""
    return sum(step in EXPLICIT_STEPS for step in steps) / len(steps) if steps else float("nan")
