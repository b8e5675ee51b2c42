"""lm-eval hooks of the MedExQA tasks: data, prompts, per-sample scores and aggregations.

See lm_eval_tasks/medexqa/README.md. lm-eval gives every task of a run the same ``--metadata``, so
MedExQA's own settings carry its name (``medexqa_split``, ``medexqa_shuffle``,
``medexqa_shuffle_seed``); their unscoped forms are refused, since they would also reach, and could
change, every other benchmark in the run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from .. import data as data_layer
from .constants import BENCHMARK, DEFAULT_SHUFFLE_SEED, LETTERS
from .loader import load, to_doc
from .parsing import EXPLICIT_STEPS, score_generation, score_logit
from .prompts import generation_prompt, logit_prompt

__all__ = [
    "SETTINGS",
    "custom_dataset",
    "explicit_share",
    "generation_prompt",
    "gold_index",
    "logit_prompt",
    "process_generation_results",
    "process_logit_results",
    "shuffle_setting",
]

# MedExQA's user settings; on the command line each is given as medexqa_<name>.
SETTINGS = ("split", "shuffle", "shuffle_seed")
_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")
_INTEGER_LIMIT = 10**18


def _shown(value: Any) -> str:
    """A setting's value for an error message: short, and never itself an error (repr of a huge int raises)."""
    if isinstance(value, int) and not -_INTEGER_LIMIT < value < _INTEGER_LIMIT:
        return f"<an integer of {value.bit_length()} bits>"
    text = repr(value) if isinstance(value, (str, int, float, type(None))) else f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in {"1", "true", "yes", "on"}:
            return True
        if text in {"0", "false", "no", "off", ""}:
            return False
    raise data_layer.DataError(f"--metadata {name}={_shown(value)}: expected true or false")


def _integer(value: Any, name: str) -> int:
    # At most 18 digits: int() of a huge digit string is slow, and int <-> str raises past 4300 digits.
    if isinstance(value, int) and not isinstance(value, bool) and -_INTEGER_LIMIT < value < _INTEGER_LIMIT:
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        return int(value)
    raise data_layer.DataError(f"--metadata {name}={_shown(value)}: expected an integer of at most 18 digits")


def shuffle_setting(shuffle: Any, shuffle_seed: Any) -> int | None:
    """The seed the options are shuffled with (``medexqa_shuffle``, ``medexqa_shuffle_seed``); None: not shuffled.

    Any value gives a seed, None, or a DataError naming the setting.
    """
    return _integer(shuffle_seed, "medexqa_shuffle_seed") if _flag(shuffle, "medexqa_shuffle") else None


def custom_dataset(
    specialty: str,
    data_dir: str | None = None,
    medexqa_split: str = "test",
    medexqa_shuffle: Any = False,
    medexqa_shuffle_seed: Any = DEFAULT_SHUFFLE_SEED,
    **metadata: Any,
):
    """lm-eval ``custom_dataset`` hook: one specialty's items as split 'test', its dev items as 'dev'.

    ``--metadata medexqa_split=dev`` evaluates the dev items instead; ``medexqa_shuffle=true``
    (optionally ``medexqa_shuffle_seed=N``) shuffles the options of every item. lm-eval also passes
    the other metadata and the model arguments: a training ``split`` is refused as by every
    benchmark, the unscoped forms of MedExQA's settings are refused, the rest is ignored.
    """
    if isinstance(metadata.get("split"), str):
        data_layer.refuse_training_split(BENCHMARK, metadata["split"])
    data_layer.refuse_unscoped_settings(BENCHMARK, metadata, SETTINGS)
    if not isinstance(medexqa_split, str):
        raise data_layer.DataError(f"--metadata medexqa_split={_shown(medexqa_split)}: expected test or dev")
    seed = shuffle_setting(medexqa_shuffle, medexqa_shuffle_seed)
    evaluated = load(data_dir, split=medexqa_split, specialty=specialty)
    dev = load(data_dir, split="dev", specialty=specialty)
    import datasets

    return datasets.DatasetDict(
        {
            "test": datasets.Dataset.from_list([to_doc(row, seed) for row in evaluated]),
            "dev": datasets.Dataset.from_list([to_doc(row, seed) for row in dev]),
        }
    )


def gold_index(doc: Mapping[str, Any]) -> int:
    return LETTERS.index(doc["answer"])


def process_logit_results(doc: Mapping[str, Any], results: Sequence[tuple[float, bool]]) -> dict[str, float]:
    """Accuracy of the most likely letter (first on ties, as lm-eval's ``acc``)."""
    correct = float(score_logit(doc, [ll for ll, _ in results]).correct)
    # The same per-sample value twice: the group averages `accuracy` over specialties (the
    # paper's macro) and `accuracy_micro` over items.
    return {"accuracy": correct, "accuracy_micro": correct}


def process_generation_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, Any]:
    score = score_generation(doc, results[0])
    correct = float(score.correct)
    return {
        "accuracy": correct,
        "accuracy_micro": correct,
        # the share of replies with a usable letter, as `answered` means everywhere in this package
        "answered": float(score.answered),
        # logged per sample; the task's value is explicit_share of these
        "extraction_step": score.extraction.step,
    }


def explicit_share(steps: Sequence[str]) -> float:
    """Share of all replies whose letter was stated explicitly (answer/choose, "X is correct", leading letter)."""
    return sum(step in EXPLICIT_STEPS for step in steps) / len(steps) if steps else float("nan")
