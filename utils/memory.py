"""The memory of an ``lm_eval --model hf`` log-likelihood run, and the batch size that keeps it near the model's size.

lm-eval's hf backend (0.4.13, ``HFLM._loglikelihood_tokens``) scores a batch from the model's logits at every position
of every request, a [batch, longest request, vocabulary] tensor, and their log-softmax, a second tensor of that size;
the previous batch's log-softmax is still held while the next batch runs. Batches go longest request first, so the
peak is at the first batch: the weights plus :data:`LOGITS_COPIES` x batch x longest request (tokens) x vocabulary x
bytes per value. For gemma-3-270m (a 262,144-token vocabulary) at batch 8 and its longest quickstart request (504
tokens, PubMedQA) in float32 that is 12.7 GB of logits beside 1.1 GB of weights; SmolLM2 (49,152 tokens) needs 2.6 GB.

:func:`choose_batch_size` takes the largest batch (at most :data:`LARGEST_BATCH`) whose logits fit in
:func:`logits_budget`, never less than one request. The batch changes no answer: each request's log-likelihood is
computed from its own positions (right padding, a causal mask); in float32 batches of 1 and 8 differ only in the sums'
last bits (gemma-3-270m: by at most 1e-5, the same answer on every item). The functions above :func:`model_facts` are
pure.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# A batch's logits, their log-softmax, and the previous batch's log-softmax (see the module's docstring).
LOGITS_COPIES = 3
# The batch the quickstart ran at before the batch was chosen; larger batches gain nothing on a CPU.
LARGEST_BATCH = 8
# At most this much for a batch's logits: the least that keeps SmolLM2-135M's quickstart at batch 8 (2.4 GiB of logits
# at its longest request, 545 tokens with the chat template); gemma-3-270m then runs one request at a time.
LOGITS_BUDGET = 5 << 29  # 2.5 GiB
# And at most this share of the memory available when the run starts, for a smaller machine.
AVAILABLE_SHARE = 4
# Python, PyTorch, transformers, lm-eval and the datasets beside the weights and logits (/usr/bin/time -v of the
# quickstart's gemma-3-270m run at batch 1: 0.8 GB above them).
RUNTIME_BYTES = 800_000_000
VALUE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def logits_bytes(batch: int, tokens: int, vocabulary: int, value_bytes: int) -> int:
    """What a batch's logits hold at the peak (:data:`LOGITS_COPIES` tensors of batch x tokens x vocabulary)."""
    return LOGITS_COPIES * batch * tokens * vocabulary * value_bytes


def logits_budget(available: int | None) -> int:
    """The most a batch's logits may take: :data:`LOGITS_BUDGET`, or a :data:`AVAILABLE_SHARE`-th of the memory
    available (``available`` bytes; None when unknown) when that is less."""
    return LOGITS_BUDGET if available is None else min(LOGITS_BUDGET, available // AVAILABLE_SHARE)


def choose_batch_size(tokens: int, vocabulary: int, value_bytes: int, budget: int, largest: int = LARGEST_BATCH) -> int:
    """The largest batch, from 1 to ``largest``, whose logits (:func:`logits_bytes`) fit in ``budget``; 1 when even one
    request's do not (a request cannot be split)."""
    one = logits_bytes(1, max(tokens, 1), vocabulary, value_bytes)
    return max(1, min(largest, budget // one))


def peak_bytes(weights: int, batch: int, tokens: int, vocabulary: int, value_bytes: int) -> int:
    """The expected peak memory of the run: the runtime, the weights and the first batch's logits."""
    return RUNTIME_BYTES + weights + logits_bytes(batch, tokens, vocabulary, value_bytes)


def gigabytes(size: int) -> str:
    return f"{size / 1e9:.1f} GB"


@dataclass(frozen=True)
class Plan:
    """A chosen batch size and what it rests on."""

    batch: int
    tokens: int  # the longest log-likelihood request, in the model's tokens
    task: str | None  # the task it belongs to; None when the tasks make no log-likelihood request
    vocabulary: int
    dtype: str
    weights: int  # bytes
    budget: int  # bytes the logits may take

    @property
    def peak(self) -> int:
        return peak_bytes(self.weights, self.batch, self.tokens, self.vocabulary, VALUE_BYTES[self.dtype])

    def describe(self, model: str) -> str:
        """One line: the batch, why, and the expected peak memory."""
        if self.task is None:
            return (
                f"batch size {self.batch} for {model}: no log-likelihood request; expected peak memory about "
                f"{gigabytes(self.peak)} (weights {gigabytes(self.weights)})"
            )
        per_request = logits_bytes(1, self.tokens, self.vocabulary, VALUE_BYTES[self.dtype])
        return (
            f"batch size {self.batch} for {model}: its longest request is {self.tokens} tokens ({self.task}) and its "
            f"vocabulary {self.vocabulary:,} tokens, so one request's logits take {gigabytes(per_request)} in "
            f"{self.dtype} (at most {gigabytes(self.budget)} a batch); expected peak memory about "
            f"{gigabytes(self.peak)} (weights {gigabytes(self.weights)}, logits "
            f"{gigabytes(self.batch * per_request)}, runtime {gigabytes(RUNTIME_BYTES)})"
        )


def plan(weights: int, vocabulary: int, dtype: str, longest: tuple[str, int] | None, available: int | None) -> Plan:
    """The batch for a model (``weights`` bytes, ``vocabulary``, ``dtype``) whose longest request is ``longest``
    (task, tokens; None without log-likelihood requests), with ``available`` bytes of memory (None: unknown)."""
    budget = logits_budget(available)
    if longest is None:
        return Plan(LARGEST_BATCH, 0, None, vocabulary, dtype, weights, budget)
    task, tokens = longest
    return Plan(
        choose_batch_size(tokens, vocabulary, VALUE_BYTES[dtype], budget),
        tokens,
        task,
        vocabulary,
        dtype,
        weights,
        budget,
    )


# ----------------------------------------------------------------------------- what the machine and model say


def available_memory(meminfo: str | os.PathLike = "/proc/meminfo") -> int | None:
    """The memory available to a new process (Linux's MemAvailable), in bytes; None where it is not known."""
    try:
        text = Path(meminfo).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        fields = value.split()
        if name == "MemAvailable" and len(fields) == 2 and fields[0].isdigit() and fields[1] == "kB":
            return int(fields[0]) * 1024
    return None


def model_facts(model_dir: str | os.PathLike) -> tuple[int, int, str]:
    """A transformers folder's weights (bytes of its safetensors files), vocabulary (its config's ``vocab_size``, or
    its text model's) and dtype (``dtype`` or ``torch_dtype``), as ``--model_args dtype=auto`` loads it.

    A folder without them is a ValueError naming the file and field.
    """
    folder = Path(model_dir)
    config_path = folder / "config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{config_path}: not a readable JSON config ({exc})") from exc
    if not isinstance(config, Mapping):
        raise ValueError(f"{config_path}: not a JSON object")
    text = config.get("text_config") if isinstance(config.get("text_config"), Mapping) else {}
    vocabulary = config.get("vocab_size", text.get("vocab_size"))
    if not isinstance(vocabulary, int) or isinstance(vocabulary, bool) or vocabulary < 1:
        raise ValueError(f"{config_path}: field vocab_size is {vocabulary!r}, not a positive integer")
    dtype = config.get("dtype", config.get("torch_dtype", text.get("dtype", text.get("torch_dtype"))))
    if dtype not in VALUE_BYTES:
        raise ValueError(f"{config_path}: field dtype is {dtype!r}, not one of {', '.join(VALUE_BYTES)}")
    weights = sum(path.stat().st_size for path in folder.glob("*.safetensors"))
    if not weights:
        raise ValueError(f"{folder}: no *.safetensors weights")
    return weights, vocabulary, dtype


def longest_request(
    model_dir: str | os.PathLike,
    tasks: Sequence[str],
    metadata: Mapping[str, Any],
    include_path: str | os.PathLike,
    limit: int | float | None = None,
    samples: Mapping[str, Sequence[int]] | None = None,
    apply_chat_template: bool = False,
) -> tuple[str, int] | None:
    """The task and length (in the model's tokens, with its special tokens) of the longest log-likelihood request the
    tasks make, built by lm-eval as ``lm_eval --tasks ... --limit/--samples ... [--apply_chat_template]`` builds
    them; None when they make none. lm-eval feeds the model one token less (the last is only predicted): this is
    the padded length of the first batch, to a token."""
    from lm_eval.evaluator_utils import get_sample_size
    from lm_eval.tasks import TaskManager
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), trust_remote_code=False)

    def chat(history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        # as HFLM.apply_chat_template renders a request
        return tokenizer.apply_chat_template(
            history,
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
            continue_final_message=not add_generation_prompt,
        )

    manager = TaskManager(include_path=str(include_path), include_defaults=False, metadata=dict(metadata))
    longest: tuple[str, int] | None = None
    for name, task in manager.load(list(tasks))["tasks"].items():  # the leaf tasks, groups opened
        task.build_all_requests(
            limit=get_sample_size(task, limit),
            samples=(samples or {}).get(name),
            apply_chat_template=apply_chat_template,
            chat_template=chat if apply_chat_template else None,
        )
        for instance in task.instances:
            if instance.request_type != "loglikelihood":
                continue
            context, continuation = instance.args[:2]
            tokens = len(tokenizer(context + continuation).input_ids)
            if longest is None or tokens > longest[1]:
                longest = (name, tokens)
    return longest
