"""The lm-eval hooks of every MillerQA task (the YAMLs in lm_eval_tasks/millerqa/ point here).

Settings, all benchmark-scoped (``--metadata millerqa_<name>=...``; see lm_eval_tasks/millerqa/README.md,
"Settings"): ``millerqa_model_label`` keys the option shuffle (else derived from the model's path, with
a warning), ``millerqa_shuffle_seed`` (default 42, the authors'). The unscoped ``model_label`` and
``shuffle_seed`` are refused: lm-eval gives every task the same metadata, so they would also reach
every other benchmark of the run.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from .. import data as data_layer
from . import BENCHMARK, loader
from .constants import CURATED, LETTERS
from .parsing import score_loglikelihoods, score_reply
from .prompts import choice_only_prompt, loglikelihood_prompt, shuffled_doc, user_prompt

logger = logging.getLogger(__name__)
_warned_labels: set[str] = set()


def model_label_from(model_label: str | None = None, pretrained: Any = None, model: Any = None) -> tuple[str, bool]:
    """(label, derived): the label that keys the shuffle, and whether it was derived from the model's path.

    ``--metadata millerqa_model_label=...`` if given, else the last path component of ``pretrained``
    (hf, vllm) or ``model`` (API backends): ``meta-llama/Llama-3.1-8B-Instruct`` -> ``Llama-3.1-8B-Instruct``,
    but also ``/ckpt/final`` -> ``final``. A derived label is logged as a warning (once per label):
    renaming the folder changes every shuffle. The authors used their own labels (``gpt-4o``,
    ``llama-3-1-8b``, ...); pass one to reproduce their shuffles.
    """
    if model_label is not None and model_label.strip():
        return model_label.strip(), False
    source = pretrained if pretrained is not None else model
    if not (isinstance(source, str) and source.strip().strip("/\\")):
        raise data_layer.DataError(
            "MillerQA shuffles the options per (item, model) and needs a model label: pass "
            "--metadata millerqa_model_label=LABEL (Python: TaskManager(metadata={'millerqa_model_label': LABEL})). "
            "It is derived from --model_args pretrained=... or model=... when those are given."
        )
    label = source.strip().replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    if label not in _warned_labels:
        _warned_labels.add(label)
        logger.warning(
            "MillerQA: the model label that keys the option shuffle is %r, derived from %r (the last path "
            "component). Renaming or moving that folder changes every shuffle; pass --metadata "
            "millerqa_model_label=LABEL to fix it (the authors' labels, e.g. llama-3-1-8b, reproduce their shuffles).",
            label,
            source,
        )
    return label, True


def custom_dataset(
    set_name: str | None = None,
    release: str = CURATED,
    data_dir: str | None = None,
    pretrained: Any = None,
    model: Any = None,
    split: str | None = None,
    *,
    rotated: bool = False,
    benchmark: str | None = None,
    **metadata: Any,
):
    """lm-eval ``custom_dataset`` hook: one set's docs, shuffled for this model, as split 'test'.

    lm-eval passes the task metadata, ``--metadata`` and every ``--model_args`` value (``pretrained``,
    ``model`` and the rest stay as they are); MillerQA's settings are read by its declaration
    (``Benchmark.read_settings``). The docs depend only on the data, the label and the seed, so every
    process of a multi-GPU run builds the same. ``benchmark`` is the deprecated name of ``set_name``
    (a YAML of one's own may still give ``dataset_kwargs: {benchmark: ...}``). ``rotated`` (the ``*_rotated``
    families): every item once per cyclic rotation of its shuffled options, item by item (so ``--limit`` keeps
    whole questions but the last).
    """
    if benchmark is not None:
        if set_name is not None:
            raise data_layer.DataError(
                f"MillerQA: give the set once, as set_name ({set_name!r}), not also as benchmark ({benchmark!r})"
            )
        warnings.warn(
            "MillerQA custom_dataset(benchmark=...) is deprecated: name the set with set_name=... "
            "(dataset_kwargs: {set_name: ...})",
            DeprecationWarning,
            stacklevel=2,
        )
        set_name = benchmark
    if set_name is None:
        raise data_layer.DataError("MillerQA: custom_dataset needs set_name, one of its sets (e.g. triage)")
    data_layer.refuse_training_split(BENCHMARK.name, split)
    settings = BENCHMARK.read_settings(metadata)
    label, derived = model_label_from(settings["model_label"], pretrained, model)
    seed = settings["shuffle_seed"]
    items = loader.load(set_name, release, data_dir)
    return data_layer.to_dataset_dict(
        [
            shuffled_doc(item, set_name, release, label, seed, model_label_derived=derived, rotation=r)
            for item in items
            for r in (range(len(item["options"])) if rotated else [None])
        ]
    )


def doc_to_text(doc: Mapping[str, Any]) -> str:
    return user_prompt(doc["question"], doc["shuffled_options"])


def doc_to_text_choice_only(doc: Mapping[str, Any]) -> str:
    return choice_only_prompt(doc["shuffled_options"])


def doc_to_text_loglikelihood(doc: Mapping[str, Any]) -> str:
    return loglikelihood_prompt(doc["question"], doc["shuffled_options"])


def doc_to_choice(doc: Mapping[str, Any]) -> list[str]:
    return list(LETTERS[: len(doc["shuffled_options"])])


def process_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, float | None]:
    """Per-sample metrics of the generative tasks.

    ``acc`` is None for an unscored reply (aggregated by :func:`mean_over_answered`: the paper's
    accuracy); ``acc_all`` counts it wrong; ``answered`` is coverage. The ``_micro`` keys repeat a
    value so that groups can give a size-weighted mean next to the unweighted one.
    """
    answer = score_reply(doc, results[0])
    correct = float(bool(answer.is_correct))
    answered = float(answer.answered)
    return {
        "acc": correct if answer.answered else None,
        "acc_all": correct,
        "acc_all_micro": correct,
        "answered": answered,
        "answered_micro": answered,
    }


def mean_over_answered(values: Sequence[float | None]) -> float:
    """Mean of the scored values; NaN (with a warning) when no reply gave a usable answer."""
    scored = [value for value in values if value is not None]
    if not scored:
        logger.warning(
            "MillerQA: none of %d replies gave a usable answer; accuracy over answered items is undefined (NaN).",
            len(values),
        )
        return math.nan
    return sum(scored) / len(scored)


def process_results_loglikelihood(doc: Mapping[str, Any], results: Sequence[Sequence[Any]]) -> dict[str, float]:
    correct = float(score_loglikelihoods(doc, [float(result[0]) for result in results]).is_correct)
    return {"acc": correct, "acc_micro": correct}
