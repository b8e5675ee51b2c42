"""Command line: ``python -m lm_eval_tasks`` (also installed as ``lm-eval-tasks``).

    python -m lm_eval_tasks --include-path            # the directory for lm_eval --include_path
    python -m lm_eval_tasks report OUTPUT_PATH        # report over an lm_eval --log_samples run
    python -m lm_eval_tasks compare RUN_A RUN_B       # paired comparison of two runs
    python -m lm_eval_tasks prepare-model smollm2     # SmolLM2-135M-Instruct as a transformers folder
    python -m lm_eval_tasks serve                     # SmolLM2 behind an OpenAI-compatible server
    python -m lm_eval_tasks demo-data --shared DIR --out DIR
    python -m lm_eval_tasks pubmedqa-probe --encoder DIR|minilm|smollm2   # PubMedQA linear probe
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from lm_eval_tasks import tasks_dir


def _report(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.report import write_report

    report, files = write_report(args.path, args.out)
    for path in files:
        print(path)
    for name, bench in report["benchmarks"].items():
        headline = bench[bench["headline_metric"]]
        print(f"{name}: {bench['headline_metric']} {headline['value']:.4f} "
              f"[{headline['low']:.4f}, {headline['high']:.4f}] over {bench['n_items']} items"
              f"{'' if bench['full_coverage'] else ' (partial coverage: not paper-comparable)'}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.report import compare_runs, write_atomically

    text = json.dumps(compare_runs(args.run_a, args.run_b), indent=2) + "\n"
    if args.out:
        out = Path(args.out)
        write_atomically(out.parent, {out.name: text.encode("utf-8")})
    sys.stdout.write(text)
    return 0


def _prepare_model(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.models import prepare_smollm2

    print(prepare_smollm2(args.out, dtype=args.dtype))
    return 0


def _serve(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.models import start_llama_server

    server = start_llama_server(args.gguf, n_ctx=args.n_ctx, port=args.port, threads=args.threads)
    print(f"serving {server.model} at {server.chat_completions_url} (Ctrl-C stops)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
    return 0


def _demo_data(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.demo_data import build_demo_data_dir

    print(build_demo_data_dir(args.shared, args.out))
    return 0


def _pubmedqa_probe(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils import models
    from lm_eval_tasks.utils.pubmedqa_probe import run_probe, summary
    from lm_eval_tasks.utils.report import write_atomically

    encoder = Path(args.encoder)
    if not encoder.exists() and args.encoder in ("minilm", "smollm2"):
        try:
            encoder = models.minilm_dir() if args.encoder == "minilm" else models.prepare_smollm2()
        except models.ModelUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    result = run_probe(encoder, data_dir=args.data_dir, subset=args.subset, pooling=args.pooling,
                       max_length=args.max_length, dtype=args.dtype, batch_size=args.batch_size,
                       embeddings_cache=args.embeddings_cache)
    if args.out:
        out = Path(args.out)
        write_atomically(out.parent, {out.name: (json.dumps(result, indent=2) + "\n").encode("utf-8")})
    print(summary(result))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lm_eval_tasks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--include-path", action="store_true", help="print the directory for lm_eval --include_path")
    commands = parser.add_subparsers(dest="command")

    report = commands.add_parser("report", help="report (JSON, Markdown, PNG) over an lm_eval --log_samples run")
    report.add_argument("path", help="lm_eval --output_path folder, or one results_*.json (newest run is used)")
    report.add_argument("--out", help="folder for the report (default: <run folder>/report)")
    report.set_defaults(func=_report)

    compare = commands.add_parser("compare", help="paired comparison (A minus B) of two runs on the same items")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--out", help="also write the comparison JSON here")
    compare.set_defaults(func=_compare)

    prepare = commands.add_parser("prepare-model", help="convert a packaged small model for --model hf")
    prepare.add_argument("model", choices=["smollm2"])
    prepare.add_argument("--out", help="target folder (default: ~/.cache/lm_eval_tasks/...)")
    prepare.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    prepare.set_defaults(func=_prepare_model)

    serve = commands.add_parser("serve", help="serve a GGUF model (SmolLM2 by default) on 127.0.0.1")
    serve.add_argument("--gguf", help="GGUF file (default: the packaged SmolLM2-135M-Instruct)")
    serve.add_argument("--port", type=int, default=8089)
    serve.add_argument("--n-ctx", type=int, default=4096)
    serve.add_argument("--threads", type=int, default=2)
    serve.set_defaults(func=_serve)

    demo = commands.add_parser("demo-data", help="build a data directory from the public pieces in shared/data")
    demo.add_argument("--shared", required=True, help="the shared/data folder")
    demo.add_argument("--out", required=True)
    demo.set_defaults(func=_demo_data)

    probe = commands.add_parser("pubmedqa-probe", help="PubMedQA linear probe on frozen encoder embeddings")
    probe.add_argument("--encoder", required=True,
                       help="transformers model folder (encoder or causal LM); 'minilm' / 'smollm2' for the packaged ones")
    probe.add_argument("--data-dir", help="data directory (default: $MEDEVAL_DATA_DIR, else the pinned hub copy)")
    probe.add_argument("--subset", default="full", choices=["full", "n100"], help="test items (the probe always trains on the 500-item train pool)")
    probe.add_argument("--pooling", default="mean", choices=["mean", "cls", "last"], help="mean is the protocol")
    probe.add_argument("--max-length", type=int, help="token limit (default: the encoder's own)")
    probe.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    probe.add_argument("--batch-size", type=int, default=16)
    probe.add_argument("--embeddings-cache", help=".npz file reused when encoder, texts and options are unchanged")
    probe.add_argument("--out", help="write the full result (CIs, per-class, confusion matrix, predictions) as JSON")
    probe.set_defaults(func=_pubmedqa_probe)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.include_path:
        print(tasks_dir())
        return 0
    if args.command is None:
        parser.print_help()
        return 2
    from lm_eval_tasks.utils.data import DataError

    try:
        return args.func(args)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
