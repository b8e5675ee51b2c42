"""PubMedQA commands: the linear probe on frozen encoder embeddings."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..models import add_dtype_option
from .probe import DEFAULT_DTYPE, DEFAULT_HEAD, HEADS


def _pubmedqa_probe(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils import models
    from lm_eval_tasks.utils.files import write_atomically
    from lm_eval_tasks.utils.pubmedqa_atlas.probe import run_probe, summary

    encoder = Path(args.encoder)
    if not encoder.exists() and args.encoder in ("minilm", "smollm2"):
        try:
            encoder = models.minilm_dir() if args.encoder == "minilm" else models.prepare_model("smollm2")
        except models.ModelUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    dtype = models.choose_dtype(args.dtype)
    print(models.dtype_reason(dtype, requested=args.dtype, default=DEFAULT_DTYPE), file=sys.stderr)
    result = run_probe(
        encoder,
        data_dir=args.data_dir,
        subset=args.subset,
        pooling=args.pooling,
        max_length=args.max_length,
        dtype=args.dtype,
        batch_size=args.batch_size,
        embeddings_cache=args.embeddings_cache,
        head=args.head,
    )
    if args.out:
        out = Path(args.out)
        write_atomically(out.parent, {out.name: (json.dumps(result, indent=2) + "\n").encode("utf-8")})
    print(summary(result))
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    probe = commands.add_parser("pubmedqa-probe", help="PubMedQA linear probe on frozen encoder embeddings")
    probe.add_argument(
        "--encoder",
        required=True,
        help="transformers model folder (encoder or causal LM); 'minilm' / 'smollm2' for the packaged ones",
    )
    probe.add_argument("--data-dir", help="data directory (default: $MEDEVAL_DATA_DIR, else the pinned hub copy)")
    probe.add_argument(
        "--subset",
        default="full",
        choices=["full", "n100"],
        help="test items (the probe always trains on the 500-item train pool)",
    )
    probe.add_argument("--pooling", default="mean", choices=["mean", "cls", "last"], help="mean is the protocol")
    probe.add_argument(
        "--max-length",
        type=int,
        help="token limit (default: the encoder's own: a sentence-transformers folder's max_seq_length, else the "
        "smaller of the tokenizer's model_max_length and the position limit)",
    )
    probe.add_argument(
        "--head",
        default=DEFAULT_HEAD,
        choices=list(HEADS),
        help="raw: logistic regression on the pooled vectors (the protocol); standardized: features standardised "
        "on the train pool first (probe version 1)",
    )
    add_dtype_option(probe, "--dtype", default=DEFAULT_DTYPE)
    probe.add_argument("--batch-size", type=int, default=16)
    probe.add_argument("--embeddings-cache", help=".npz file reused when encoder, texts and options are unchanged")
    probe.add_argument("--out", help="write the full result (CIs, per-class, confusion matrix, predictions) as JSON")
    probe.set_defaults(func=_pubmedqa_probe)
