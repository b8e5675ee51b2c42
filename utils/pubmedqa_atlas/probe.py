"""The PubMedQA linear probe: frozen encoder embeddings, a logistic head fit on the train pool.

Protocol (lm_eval_tasks/pubmedqa_atlas/README.md, "The probe"): embed ``Question: {question}\\nContext:
{context}`` with a frozen encoder (its last layer, mean over the tokens of the text, truncated at the
encoder's own maximum length), fit a multinomial logistic regression (L2, C = 1, lbfgs) on the raw pooled
vectors of the 500 train-pool items, report accuracy and macro-F1 on the test set with 95% bootstrap CIs
stratified by answer.

Any transformers encoder or causal LM folder works (a causal LM is loaded without its LM head).
torch, transformers and scikit-learn are imported only when a probe runs.
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
import time
import warnings
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from .. import models, stats
from ..data import DataError, read_json
from ..files import UntrustedFile, open_own_file, own_folder, warn_untrusted, write_file_atomically
from .constants import LABELS, SUBSETS
from .loader import load
from .parsing import macro_f1_value
from .prompts import PROBE_TEXT, probe_text

# Its changes, version by version: lm_eval_tasks/pubmedqa_atlas/README.md, "Changelog".
PROBE_VERSION = 3
POOLINGS = ("mean", "cls", "last")  # mean is the protocol; cls / last are offered for comparisons
# The logistic head, fixed in advance and never tuned on test: scikit-learn's LogisticRegression with
# its L2 penalty, C = 1 and lbfgs, which minimises the multinomial loss for three classes.
LOGISTIC_C = 1.0
# Unscaled features need many lbfgs steps (SmolLM2's pooled coordinates span 0.2 to 3.3 in standard
# deviation, up to 31 in size: about 1,000 iterations); whether the fit converged is recorded with every result.
LOGISTIC_MAX_ITER = 20_000
HEADS = {
    "raw": f"LogisticRegression(C={LOGISTIC_C}, L2, lbfgs, multinomial) on the raw pooled vectors (the card's head)",
    "standardized": f"StandardScaler fit on the train pool + LogisticRegression(C={LOGISTIC_C}, L2, lbfgs, "
    "multinomial) (probe version 1's head)",
}
DEFAULT_HEAD = "raw"
DEFAULT_DTYPE = "float32"  # a reported number: the same on any hardware; bfloat16 is an opt-in (--dtype)
ST_CONFIG = "sentence_bert_config.json"


def declared_max_lengths(encoder_dir: str | os.PathLike, tokenizer: Any, config: Any) -> dict[str, int | None]:
    """Every token limit the encoder's folder declares (None where it declares none)."""
    st_length = None
    st_config = Path(encoder_dir) / ST_CONFIG
    if st_config.is_file():
        st_length = read_json(st_config).get("max_seq_length")
        if st_length is not None and (isinstance(st_length, bool) or not isinstance(st_length, int) or st_length < 1):
            raise DataError(f"{st_config}, field 'max_seq_length': expected a positive integer, got {st_length!r:.80}")
    positions = getattr(config, "max_position_embeddings", None)
    return {
        "sentence_transformers_max_seq_length": st_length,
        "tokenizer_model_max_length": models.tokenizer_limit(tokenizer),
        "max_position_embeddings": int(positions) if positions else None,
    }


def encoder_max_length(encoder_dir: str | os.PathLike, tokenizer: Any, config: Any) -> int:
    """The length the encoder is meant to run at: the ``max_seq_length`` its sentence-transformers
    packaging declares (what ``SentenceTransformer.encode`` uses), else the smaller of the tokenizer's
    ``model_max_length`` and the model's position limit."""
    declared = declared_max_lengths(encoder_dir, tokenizer, config)
    if declared["sentence_transformers_max_seq_length"]:
        return declared["sentence_transformers_max_seq_length"]
    limits = [declared[key] for key in ("tokenizer_model_max_length", "max_position_embeddings") if declared[key]]
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
    tokenizer = AutoTokenizer.from_pretrained(str(encoder_dir), trust_remote_code=False)
    config = AutoConfig.from_pretrained(str(encoder_dir), trust_remote_code=False)
    max_length = max_length or encoder_max_length(encoder_dir, tokenizer, config)
    if tokenizer.pad_token is None:  # causal LMs: padding positions are masked out anyway
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    tokenizer.padding_side = "right"
    model = AutoModel.from_pretrained(str(encoder_dir), dtype=getattr(torch, dtype), trust_remote_code=False).eval()
    encoded = [tokenizer(text, truncation=True, max_length=max_length)["input_ids"] for text in texts]
    order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))  # similar lengths share a batch
    out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for start in tqdm(range(0, len(order), batch_size), desc=f"embedding {len(texts)} texts", unit="batch"):
            chunk = order[start : start + batch_size]
            batch = tokenizer.pad({"input_ids": [encoded[i] for i in chunk]}, return_tensors="pt")
            hidden = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
            out[chunk] = pool(hidden.float(), batch["attention_mask"], pooling).numpy()
    return out, max_length


def _embeddings_key(encoder_dir: Path, texts: Sequence[str], pooling: str, max_length: int | None, dtype: str) -> str:
    """What the embeddings are made from: the encoder's files, the texts, the options, and the code that embeds
    them (this package's, transformers' and torch's versions: another version may embed otherwise)."""
    import torch
    import transformers

    from lm_eval_tasks import __version__

    digest = hashlib.sha256()
    weights = sorted(p for p in encoder_dir.iterdir() if p.suffix in {".safetensors", ".bin"})
    for part in [
        f"lm-eval-medical-tasks {__version__}",
        f"transformers {transformers.__version__}",
        f"torch {torch.__version__}",
        str(encoder_dir.resolve()),
        pooling,
        str(max_length),
        dtype,
        *(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in weights),
        *texts,
    ]:
        digest.update(part.encode("utf-8") + b"\0")
    return digest.hexdigest()


# Far more than any encoder's embeddings of the probe's 1,000 texts take (33 MB at hidden size 8,192): a larger
# file is not one this probe wrote.
MAX_CACHE_BYTES = 1 << 30


def cached_embeddings(cache_file: str | os.PathLike | None, encoder_dir: Path, texts: Sequence[str], **options: Any):
    """``embed_texts``, reusing ``cache_file`` (.npz) when it was made from the same encoder files, texts and
    options; otherwise the embeddings are computed and the file is (re)written. Only a file of this user's own, in a
    folder of this user's own, is read or written (``utils/files.py``: a regular file, not a link, writable by nobody
    else): any other is ignored, with a warning, and left as it is. A file that cannot be read as such a cache (cut
    short, another format) is computed again and replaced, saying so."""
    if cache_file is None:
        return (*embed_texts(encoder_dir, texts, **options), False)
    key = _embeddings_key(
        encoder_dir, texts, options.get("pooling", "mean"), options.get("max_length"), options.get("dtype", "float32")
    )
    cache_file = Path(cache_file)
    try:
        own_folder(cache_file.parent)
        handle = os.fdopen(open_own_file(cache_file, MAX_CACHE_BYTES), "rb")
    except FileNotFoundError:
        handle = None
    except UntrustedFile as exc:
        warn_untrusted(cache_file, f"{exc}; the embeddings are computed and not kept")
        return (*embed_texts(encoder_dir, texts, **options), False)
    if handle is not None:
        try:
            with handle, np.load(handle) as stored:
                if str(stored["key"]) == key:
                    return stored["embeddings"], int(stored["max_length"]), True
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            sys.stderr.write(f"warning: {cache_file} is no embeddings cache ({exc}); it is made again\n")
    embeddings, max_length = embed_texts(encoder_dir, texts, **options)
    stored = io.BytesIO()
    np.savez(stored, key=np.array(key), embeddings=embeddings, max_length=np.array(max_length))
    write_file_atomically(cache_file, stored.getvalue())
    return embeddings, max_length, False


@dataclass(frozen=True)
class HeadFit:
    predictions: list[str]
    iterations: int  # lbfgs iterations
    converged: bool
    warning: str | None  # scikit-learn's ConvergenceWarning, if any

    def record(self) -> dict[str, Any]:
        return {
            "iterations": self.iterations,
            "max_iter": LOGISTIC_MAX_ITER,
            "converged": self.converged,
            "warning": self.warning,
        }


def make_head(head: str = DEFAULT_HEAD):
    """The unfitted scikit-learn estimator of a head named in :data:`HEADS`."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    # L2 is LogisticRegression's default penalty in every supported scikit-learn (1.4 and later); naming it
    # would warn from 1.8 on, where `penalty` is deprecated.
    logistic = LogisticRegression(C=LOGISTIC_C, solver="lbfgs", max_iter=LOGISTIC_MAX_ITER)
    if head == "raw":
        return logistic
    if head == "standardized":
        return make_pipeline(StandardScaler(), logistic)
    raise ValueError(f"unknown head '{head}' (known: {', '.join(HEADS)})")


def fit_and_predict(
    train_x: np.ndarray, train_y: Sequence[str], test_x: np.ndarray, head: str = DEFAULT_HEAD
) -> HeadFit:
    from sklearn.exceptions import ConvergenceWarning

    estimator = make_head(head)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        estimator.fit(train_x, list(train_y))
    problems = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    logistic = estimator[-1] if head == "standardized" else estimator
    iterations = int(np.max(logistic.n_iter_))
    return HeadFit(
        predictions=[str(label) for label in estimator.predict(test_x)],
        iterations=iterations,
        converged=not problems and iterations < LOGISTIC_MAX_ITER,
        warning=" ".join(problems) or None,
    )


def scores(gold: Sequence[str], pred: Sequence[str]) -> dict[str, Any]:
    """Accuracy and macro-F1 with stratified bootstrap CIs, per-class scores, confusion matrix."""
    correct = [float(g == p) for g, p in zip(gold, pred, strict=True)]
    labels = list(LABELS)
    matrix = stats.confusion_matrix(gold, pred, labels, labels)
    return {
        "accuracy": stats.bootstrap(stats.mean_of(correct), len(gold), strata=gold, outcomes=correct).as_dict(),
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
    dtype: str = DEFAULT_DTYPE,
    batch_size: int = 16,
    embeddings_cache: str | os.PathLike | None = None,
    head: str = DEFAULT_HEAD,
) -> dict[str, Any]:
    """The probe end to end; returns a JSON-ready result (scores, setup, timings, per-item predictions).

    float32 by default on any hardware, so the reported number does not depend on the machine;
    ``dtype="bfloat16"``, or ``"auto"`` (bfloat16 where the CPU computes it natively), only when asked
    for. The dtype used is recorded.
    """
    from transformers import AutoConfig, AutoTokenizer

    dtype = models.choose_dtype(dtype)
    started = time.perf_counter()
    encoder_dir = Path(encoder)
    if not (encoder_dir / "config.json").is_file():
        raise DataError(f"{encoder_dir}: not a transformers model folder (no config.json)")
    if head not in HEADS:
        raise ValueError(f"unknown head '{head}' (known: {', '.join(HEADS)})")
    declared = declared_max_lengths(
        encoder_dir,
        AutoTokenizer.from_pretrained(str(encoder_dir), trust_remote_code=False),
        AutoConfig.from_pretrained(str(encoder_dir), trust_remote_code=False),
    )
    loaded = load(data_dir)
    train, test = loaded.train, loaded.subset(subset)
    texts = [probe_text(item.doc()) for item in (*train, *test)]
    embeddings, used_max_length, from_cache = cached_embeddings(
        embeddings_cache, encoder_dir, texts, pooling=pooling, max_length=max_length, dtype=dtype, batch_size=batch_size
    )
    embedded = time.perf_counter()
    if not np.isfinite(embeddings).all():
        raise DataError(f"{encoder_dir}: the encoder produced non-finite embeddings (try dtype float32)")
    train_x, test_x = embeddings[: len(train)], embeddings[len(train) :]
    fit = fit_and_predict(train_x, [item.answer for item in train], test_x, head=head)
    fitted = time.perf_counter()
    gold, pred = [item.answer for item in test], fit.predictions
    return {
        "benchmark": "pubmedqa_probe",
        "probe_version": PROBE_VERSION,
        "encoder": str(encoder_dir.resolve()),
        "item_set": SUBSETS[subset],
        "data_source": loaded.source,
        "n_train": len(train),
        "n_test": len(test),
        "text": PROBE_TEXT,
        "pooling": pooling,
        "layer": "last",
        "max_length": used_max_length,
        "declared_max_lengths": declared,
        "dtype": dtype,
        "head": head,
        "head_description": HEADS[head],
        "head_fit": fit.record(),
        **scores(gold, pred),
        "always_yes": {
            "accuracy": float(np.mean([g == "yes" for g in gold])),
            "macro_f1": macro_f1_value(gold, ["yes"] * len(gold)),
        },
        "bootstrap": stats.bootstrap_description(stratified_by="gold answer"),
        "seconds": {
            "embed": round(embedded - started, 2),
            "fit": round(fitted - embedded, 2),
            "total": round(fitted - started, 2),
            "embeddings_from_cache": from_cache,
        },
        "predictions": [{"pubid": item.pubid, "gold": g, "pred": p} for item, g, p in zip(test, gold, pred)],
    }


def summary(result: dict[str, Any]) -> str:
    fit = result["head_fit"]
    convergence = (
        f"converged in {fit['iterations']} lbfgs iterations"
        if fit["converged"]
        else f"NOT CONVERGED after {fit['iterations']} iterations: {fit['warning']}"
    )
    lines = [
        f"PubMedQA probe v{result['probe_version']}, {result['item_set']} ({result['n_test']} test items, "
        f"{result['n_train']} train): {result['encoder']}, {result['pooling']} pooling, "
        f"max_length {result['max_length']}, {result['dtype']}",
        f"  head {result['head']}: {result['head_description']}; {convergence}",
        f"  accuracy {stats.format_estimate(result['accuracy'], digits=4)}",
        f"  macro-F1 {stats.format_estimate(result['macro_f1'], digits=4)}",
        f"  always-yes: accuracy {result['always_yes']['accuracy']:.4f}, macro-F1 {result['always_yes']['macro_f1']:.4f}",
        f"  wall time {result['seconds']['total']:.1f} s (embedding {result['seconds']['embed']:.1f} s"
        f"{', from cache' if result['seconds']['embeddings_from_cache'] else ''})",
    ]
    return "\n".join(lines)
