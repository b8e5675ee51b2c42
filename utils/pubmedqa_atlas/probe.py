"""The PubMedQA linear probe: frozen encoder embeddings, a logistic head fit on the train pool.

Protocol (shared/SPEC.md section 3): embed ``Question: {question}\\nContext: {context}`` with a frozen
encoder (its last layer, mean over the tokens of the text, truncated at the encoder's own maximum
length), fit a multinomial logistic regression on the 500 train-pool items, report accuracy and
macro-F1 on the test set with 95% bootstrap CIs stratified by answer.

Any transformers encoder or causal LM folder works (a causal LM is loaded without its LM head).
torch, transformers and scikit-learn are imported only when a probe runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import stats
from ..data import DataError
from . import protocol as pubmedqa

POOLINGS = ("mean", "cls", "last")  # mean is the protocol; cls / last are offered for comparisons
# The logistic head: features standardised on the train pool, L2-regularised multinomial logistic
# regression with scikit-learn's defaults (C = 1, lbfgs). Fixed in advance, never tuned on test.
LOGISTIC_C = 1.0
LOGISTIC_MAX_ITER = 5000
# Tokenizers without a real limit report a huge sentinel (e.g. 1e30).
_NO_LIMIT = 1_000_000


def encoder_max_length(encoder_dir: str | os.PathLike, tokenizer: Any, config: Any) -> int:
    """The length the encoder is meant to run at: the ``max_seq_length`` its sentence-transformers
    packaging declares (what ``SentenceTransformer.encode`` uses), else the tokenizer's
    ``model_max_length``, else the model's position limit."""
    st_config = Path(encoder_dir) / "sentence_bert_config.json"
    if st_config.is_file():
        declared = json.loads(st_config.read_text(encoding="utf-8")).get("max_seq_length")
        if declared:
            return int(declared)
    limits = (
        [int(tokenizer.model_max_length)]
        if tokenizer.model_max_length and tokenizer.model_max_length < _NO_LIMIT
        else []
    )
    if getattr(config, "max_position_embeddings", None):
        limits.append(int(config.max_position_embeddings))
    if not limits:
        raise DataError(f"{encoder_dir}: cannot tell the encoder's maximum length; pass max_length")
    return min(limits)


def pool(hidden, mask, pooling: str):
    """One vector per text from the last layer ``hidden`` (batch, tokens, dim) and the attention
    ``mask`` (right-padded): the mean over real tokens, the first token, or the last real token."""
    import torch

    if pooling == "mean":
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1)
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "last":
        return hidden[torch.arange(hidden.shape[0]), mask.sum(dim=1) - 1]
    raise ValueError(f"unknown pooling '{pooling}' (known: {', '.join(POOLINGS)})")


def embed_texts(
    encoder_dir: str | os.PathLike,
    texts: Sequence[str],
    pooling: str = "mean",
    max_length: int | None = None,
    dtype: str = "float32",
    batch_size: int = 16,
) -> tuple[np.ndarray, int]:
    """Embeddings (float32, one row per text, in input order) and the max length used."""
    import torch
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    if pooling not in POOLINGS:
        raise ValueError(f"unknown pooling '{pooling}' (known: {', '.join(POOLINGS)})")
    tokenizer = AutoTokenizer.from_pretrained(str(encoder_dir))
    config = AutoConfig.from_pretrained(str(encoder_dir))
    max_length = max_length or encoder_max_length(encoder_dir, tokenizer, config)
    if tokenizer.pad_token is None:  # causal LMs: padding positions are masked out anyway
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    tokenizer.padding_side = "right"
    model = AutoModel.from_pretrained(str(encoder_dir), dtype=getattr(torch, dtype)).eval()
    encoded = [tokenizer(text, truncation=True, max_length=max_length)["input_ids"] for text in texts]
    order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))  # similar lengths share a batch
    out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            batch = tokenizer.pad({"input_ids": [encoded[i] for i in chunk]}, return_tensors="pt")
            hidden = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
            out[chunk] = pool(hidden.float(), batch["attention_mask"], pooling).numpy()
    return out, max_length


def _embeddings_key(encoder_dir: Path, texts: Sequence[str], pooling: str, max_length: int | None, dtype: str) -> str:
    digest = hashlib.sha256()
    weights = sorted(p for p in encoder_dir.iterdir() if p.suffix in {".safetensors", ".bin"})
    for part in [
        str(encoder_dir.resolve()),
        pooling,
        str(max_length),
        dtype,
        *(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in weights),
        *texts,
    ]:
        digest.update(part.encode("utf-8") + b"\0")
    return digest.hexdigest()


def cached_embeddings(cache_file: str | os.PathLike | None, encoder_dir: Path, texts: Sequence[str], **options: Any):
    """``embed_texts``, reusing ``cache_file`` (.npz) when it was made from the same encoder files,
    texts and options; otherwise the embeddings are computed and the file is (re)written."""
    if cache_file is None:
        return (*embed_texts(encoder_dir, texts, **options), False)
    key = _embeddings_key(
        encoder_dir, texts, options.get("pooling", "mean"), options.get("max_length"), options.get("dtype", "float32")
    )
    cache_file = Path(cache_file)
    if cache_file.is_file():
        with np.load(cache_file) as stored:
            if str(stored["key"]) == key:
                return stored["embeddings"], int(stored["max_length"]), True
    embeddings, max_length = embed_texts(encoder_dir, texts, **options)
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    staging = cache_file.with_name(f".{cache_file.name}.{os.getpid()}.npz")
    np.savez(staging, key=np.array(key), embeddings=embeddings, max_length=np.array(max_length))
    staging.replace(cache_file)
    return embeddings, max_length, False


def fit_and_predict(train_x: np.ndarray, train_y: Sequence[str], test_x: np.ndarray) -> list[str]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    head = make_pipeline(StandardScaler(), LogisticRegression(C=LOGISTIC_C, max_iter=LOGISTIC_MAX_ITER))
    head.fit(train_x, list(train_y))
    return [str(label) for label in head.predict(test_x)]


def scores(gold: Sequence[str], pred: Sequence[str]) -> dict[str, Any]:
    """Accuracy and macro-F1 with stratified bootstrap CIs, per-class scores, confusion matrix."""
    correct = [float(g == p) for g, p in zip(gold, pred, strict=True)]
    labels = list(pubmedqa.LABELS)
    matrix = stats.confusion_matrix(gold, pred, labels, labels)
    return {
        "accuracy": stats.bootstrap(stats.mean_of(correct), len(gold), strata=gold).as_dict(),
        "macro_f1": stats.bootstrap(stats.macro_f1_of(gold, pred, labels), len(gold), strata=gold).as_dict(),
        "per_class": stats.per_class_scores(matrix, labels),
        "confusion_matrix": {"gold": labels, "predicted": labels, "counts": matrix.tolist()},
    }


def run_probe(
    encoder: str | os.PathLike,
    data_dir: str | None = None,
    subset: str = "full",
    pooling: str = "mean",
    max_length: int | None = None,
    dtype: str = "float32",
    batch_size: int = 16,
    embeddings_cache: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """The probe end to end; returns a JSON-ready result (scores, setup, timings, per-item predictions)."""
    started = time.perf_counter()
    encoder_dir = Path(encoder)
    if not (encoder_dir / "config.json").is_file():
        raise DataError(f"{encoder_dir}: not a transformers model folder (no config.json)")
    loaded = pubmedqa.load(data_dir)
    train, test = loaded.train, loaded.subset(subset)
    texts = [pubmedqa.probe_text(item.doc()) for item in (*train, *test)]
    embeddings, used_max_length, from_cache = cached_embeddings(
        embeddings_cache, encoder_dir, texts, pooling=pooling, max_length=max_length, dtype=dtype, batch_size=batch_size
    )
    embedded = time.perf_counter()
    if not np.isfinite(embeddings).all():
        raise DataError(f"{encoder_dir}: the encoder produced non-finite embeddings (try dtype float32)")
    train_x, test_x = embeddings[: len(train)], embeddings[len(train) :]
    pred = fit_and_predict(train_x, [item.answer for item in train], test_x)
    fitted = time.perf_counter()
    gold = [item.answer for item in test]
    return {
        "benchmark": "pubmedqa_probe",
        "encoder": str(encoder_dir.resolve()),
        "item_set": pubmedqa.SUBSETS[subset],
        "data_source": loaded.source,
        "n_train": len(train),
        "n_test": len(test),
        "text": "Question: {question}\\nContext: {context}",
        "pooling": pooling,
        "layer": "last",
        "max_length": used_max_length,
        "dtype": dtype,
        "head": f"StandardScaler + LogisticRegression(C={LOGISTIC_C}, lbfgs, multinomial)",
        **scores(gold, pred),
        "always_yes": {
            "accuracy": float(np.mean([g == "yes" for g in gold])),
            "macro_f1": pubmedqa.macro_f1_value(gold, ["yes"] * len(gold)),
        },
        "bootstrap": {
            "n_resamples": stats.N_RESAMPLES,
            "seed": stats.SEED,
            "confidence": stats.CONFIDENCE,
            "stratified_by": "gold answer",
        },
        "seconds": {
            "embed": round(embedded - started, 2),
            "fit": round(fitted - embedded, 2),
            "total": round(fitted - started, 2),
            "embeddings_from_cache": from_cache,
        },
        "predictions": [{"pubid": item.pubid, "gold": g, "pred": p} for item, g, p in zip(test, gold, pred)],
    }


def summary(result: dict[str, Any]) -> str:
    def fmt(estimate):
        return f"{estimate['value']:.4f} [{estimate['low']:.4f}, {estimate['high']:.4f}]"

    lines = [
        f"PubMedQA probe, {result['item_set']} ({result['n_test']} test items, {result['n_train']} train): "
        f"{result['encoder']}, {result['pooling']} pooling, max_length {result['max_length']}, {result['dtype']}",
        f"  accuracy {fmt(result['accuracy'])}",
        f"  macro-F1 {fmt(result['macro_f1'])}",
        f"  always-yes: accuracy {result['always_yes']['accuracy']:.4f}, macro-F1 {result['always_yes']['macro_f1']:.4f}",
        f"  wall time {result['seconds']['total']:.1f} s (embedding {result['seconds']['embed']:.1f} s"
        f"{', from cache' if result['seconds']['embeddings_from_cache'] else ''})",
    ]
    return "\n".join(lines)
