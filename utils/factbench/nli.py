"""NLI fact checks with any Hugging Face sequence-classification checkpoint.

- Direction: premise = a passage of the grounding document, hypothesis = the atomic fact (the
  reference code swapped them; a fact cannot entail a whole article, so we do not).
- Long documents: the premise is cut into overlapping token windows (``max_length`` tokens per
  premise+hypothesis pair, ``stride`` tokens of overlap) by the tokenizer itself; every window is
  classified and the window with the highest entailment probability is kept. (The reference code
  truncates instead: its NLI sees only the first 1,024 tokens of a document; README, "Differences
  from the authors' code".) Its argmax label is
  the verdict: supported iff that label is the entailment label.
- Labels are read from ``config.id2label`` (never assumed): the entailment label is the one whose
  name starts with "entail", contradiction "contradict"; anything else (neutral, not_entailment)
  is neither. A config without such names is refused.
- Batched (``batch_size`` windows per forward pass) and cached: results are stored per
  (model fingerprint, settings, premise, hypothesis) in a :class:`~.openai_client.ChatCache`, so a
  re-run computes nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from ..models import choose_dtype, dtype_reason, tokenizer_limit
from ..openai_client import ChatCache

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "tasksource/deberta-base-long-nli"
DEFAULT_MAX_LENGTH = 1024
DEFAULT_STRIDE = 128
DEFAULT_BATCH_SIZE = 8
ENTAILMENT, CONTRADICTION = "entailment", "contradiction"


class NliUnavailable(RuntimeError):
    """The NLI checkpoint could not be loaded (not installed, offline, not a classifier)."""


@dataclass(frozen=True)
class NliResult:
    label: str  # the kept window's argmax label, normalised: entailment / contradiction / neutral / other name
    supported: bool
    probabilities: dict[str, float]  # of the kept window, by label name
    window: int  # index of the kept window
    n_windows: int
    cached: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k != "cached"}


def normalise_label(name: str) -> str:
    lowered = str(name).strip().lower()
    if lowered.startswith("entail"):
        return ENTAILMENT
    if lowered.startswith("contradict"):
        return CONTRADICTION
    return lowered


def label_names(id2label: dict[Any, str]) -> list[str]:
    """Normalised label names by output index; refuses configs that do not name an entailment class."""
    names = [normalise_label(id2label[key]) for key in sorted(id2label, key=int)]
    if names.count(ENTAILMENT) != 1:
        raise NliUnavailable(
            f"the model config's id2label {dict(id2label)} does not name exactly one entailment "
            f"class; cannot tell which output means 'supported'"
        )
    return names


def _fingerprint(model: Any, name_or_path: str) -> str:
    """Config plus, for a local folder, the names and sizes of its weight files (or the hub commit)."""
    config = model.config.to_json_string(use_diff=False)
    folder = Path(name_or_path)
    files = (
        sorted((p.name, p.stat().st_size) for p in folder.iterdir() if p.suffix in {".safetensors", ".bin"})
        if folder.is_dir()
        else []
    )
    commit = getattr(model.config, "_commit_hash", None)
    dtype = str(getattr(model, "dtype", None))  # bf16 and fp32 can disagree near a decision boundary
    return hashlib.sha256(json.dumps([config, files, commit, dtype]).encode()).hexdigest()[:16]


class NliVerifier:
    def __init__(
        self,
        tokenizer: Any,
        model: Any,
        name: str,
        max_length: int = DEFAULT_MAX_LENGTH,
        stride: int = DEFAULT_STRIDE,
        batch_size: int = DEFAULT_BATCH_SIZE,
        fingerprint: str | None = None,
        device: str = "cpu",
        cache: ChatCache | None = None,
    ):
        self.tokenizer = tokenizer
        self.model = model
        self.name = name
        self.labels = label_names(model.config.id2label)
        model_limit = tokenizer_limit(tokenizer)
        self.max_length = min(max_length, model_limit) if model_limit is not None else max_length
        if not 0 <= stride < self.max_length // 2:
            raise ValueError(f"stride {stride} must be below half of max_length {self.max_length}")
        self.stride = stride
        self.batch_size = max(1, batch_size)
        self.fingerprint = fingerprint or hashlib.sha256(name.encode()).hexdigest()[:16]
        self.device = device
        self.cache = cache
        self.computed = 0  # pairs classified by the model
        self.cache_hits = 0

    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str = DEFAULT_MODEL,
        revision: str | None = None,
        device: str | None = None,
        dtype: str = "auto",
        **options: Any,
    ) -> NliVerifier:
        """``dtype="auto"``: bfloat16 where the device computes it natively, float32 otherwise (:func:`choose_dtype`)."""
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            device = device or ("cuda" if torch.cuda.is_available() else "cpu")
            chosen = choose_dtype(dtype, device)
            tokenizer = AutoTokenizer.from_pretrained(name_or_path, revision=revision, trust_remote_code=False)
            model = AutoModelForSequenceClassification.from_pretrained(
                name_or_path, revision=revision, dtype=getattr(torch, chosen), trust_remote_code=False
            )
        except Exception as exc:  # hub/offline/file errors come in many types; all mean "unavailable"
            raise NliUnavailable(f"cannot load NLI model '{name_or_path}': {exc.__class__.__name__}: {exc}") from exc
        logger.info("NLI model %s: %s", name_or_path, dtype_reason(chosen, device))
        model.to(device).eval()
        return cls(
            tokenizer, model, name_or_path, fingerprint=_fingerprint(model, name_or_path), device=device, **options
        )

    def record(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "fingerprint": self.fingerprint,
            "labels": self.labels,
            "entailment_index": self.labels.index(ENTAILMENT),
            "max_length": self.max_length,
            "stride": self.stride,
            "batch_size": self.batch_size,
            "dtype": str(getattr(self.model, "dtype", None)).removeprefix("torch."),
            "direction": "premise=document passage, hypothesis=fact",
            "window_rule": "the window with the highest entailment probability; supported iff its argmax is entailment",
        }

    def _key(self, premise: str, hypothesis: str) -> str:
        payload = [self.fingerprint, self.max_length, self.stride, premise, hypothesis]
        return "nli:" + hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()

    def check(self, pairs: Sequence[tuple[str, str]]) -> list[NliResult]:
        """One result per (premise, hypothesis) pair, in order."""
        results: list[NliResult | None] = [None] * len(pairs)
        todo = []
        for index, (premise, hypothesis) in enumerate(pairs):
            hit = self.cache.get(self._key(premise, hypothesis)) if self.cache is not None else None
            if hit is not None:
                results[index] = NliResult(**json.loads(hit.text), cached=True)
                self.cache_hits += 1
            else:
                todo.append(index)
        # A few pairs per tokenizer call keeps memory bounded for long documents.
        group = max(1, self.batch_size)
        for start in tqdm(
            range(0, len(todo), group), desc=f"NLI {self.name}", unit="batch", disable=len(todo) <= group
        ):
            chunk = todo[start : start + group]
            for index, result in zip(chunk, self._classify([pairs[i] for i in chunk]), strict=True):
                results[index] = result
                if self.cache is not None:
                    self.cache.put(self._key(*pairs[index]), json.dumps(result.as_dict()), {"nli": self.name})
        return results  # type: ignore[return-value]

    def _classify(self, pairs: Sequence[tuple[str, str]]) -> list[NliResult]:
        import torch

        encoded = self.tokenizer(
            [p for p, _ in pairs],
            [h for _, h in pairs],
            truncation="only_first",
            max_length=self.max_length,
            stride=self.stride,
            return_overflowing_tokens=True,
            padding=True,
            return_tensors="pt",
        )
        owners = encoded.pop("overflow_to_sample_mapping").tolist()
        inputs = {k: v for k, v in encoded.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        probabilities = []
        with torch.inference_mode():
            for start in range(0, len(owners), self.batch_size):
                batch = {k: v[start : start + self.batch_size].to(self.device) for k, v in inputs.items()}
                logits = self.model(**batch).logits.float()
                probabilities.extend(torch.softmax(logits, dim=-1).cpu().tolist())
        self.computed += len(pairs)
        entail = self.labels.index(ENTAILMENT)
        out = []
        for pair_index in range(len(pairs)):
            windows = [i for i, owner in enumerate(owners) if owner == pair_index]
            best = max(windows, key=lambda i: (probabilities[i][entail], -i))
            probs = probabilities[best]
            label = self.labels[max(range(len(probs)), key=probs.__getitem__)]
            out.append(
                NliResult(
                    label,
                    label == ENTAILMENT,
                    dict(zip(self.labels, map(float, probs))),
                    windows.index(best),
                    len(windows),
                )
            )
        return out
