"""FActBench commands: passage store, fact-checking a run, re-scoring saved verdicts."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..models import add_dtype_option


def _factbench_index(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.factbench.passage_store import PassageStore

    store = PassageStore.build(
        args.corpus,
        args.out,
        text_field=args.text_field,
        title_field=args.title_field or None,
        id_field=args.id_field or None,
        passage_words=args.passage_words,
    )
    info = store.record()
    print(
        f"{info['path']}: {info['n_passages']} passages from {info['n_documents']} documents "
        f"(fingerprint {info['fingerprint']})"
    )
    return 0


def _print_factcheck(report: dict, files: list) -> None:
    for path in files:
        print(path)
    if "usage" in report:
        from lm_eval_tasks.utils.openai_client import format_usage

        print(f"LLM usage: {format_usage(report['usage'])}")
    for task, entry in report["table"].items():
        cells = []
        for key, cell in entry["cells"].items():
            cells.append(
                f"{key} {100 * cell['estimate']['value']:.1f}" if "estimate" in cell else f"{key} {cell['status']}"
            )
        print(f"{task}: {entry['generations']} generations, {entry['facts']} facts; " + "; ".join(cells))


def _factbench_check(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.factbench.pipeline import FactChecker, generations_from_run
    from lm_eval_tasks.utils.factbench.records import CHECK_FOLDER
    from lm_eval_tasks.utils.factbench.scores import read_human_scores
    from lm_eval_tasks.utils.factbench.tables import write_outputs
    from lm_eval_tasks.utils.files import cache_dir
    from lm_eval_tasks.utils.openai_client import ChatCache, ChatClient, parse_endpoint_spec, read_prices

    judge_endpoint = parse_endpoint_spec(args.judge, "--judge")
    decomposer_endpoint = parse_endpoint_spec(args.decomposer, "--decomposer") if args.decomposer else judge_endpoint
    generations, run = generations_from_run(args.path, args.tasks.split(",") if args.tasks else None, args.limit)
    human = read_human_scores(args.human) if args.human else None
    prices = read_prices(args.prices) if args.prices else None
    cache = ChatCache(args.cache or cache_dir() / "factbench_calls.sqlite")
    judge = ChatClient(judge_endpoint, cache, concurrency=args.concurrency)
    # Its own client even on the judge's endpoint, so that calls are counted per role.
    decomposer = ChatClient(decomposer_endpoint, cache, concurrency=args.concurrency)
    nli, unavailable = None, None
    if args.nli_model.lower() != "none":
        from lm_eval_tasks.utils.factbench.nli import NliUnavailable, NliVerifier

        try:
            nli = NliVerifier.from_pretrained(
                args.nli_model,
                revision=args.nli_revision,
                dtype=args.nli_dtype,
                max_length=args.nli_max_length,
                stride=args.nli_stride,
                batch_size=args.nli_batch_size,
                cache=cache,
            )
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
        from lm_eval_tasks.utils.factbench.passage_store import PassageStore

        store = PassageStore(args.passages)
    checker = FactChecker(
        decomposer,
        judge,
        nli,
        store,
        k=args.k,
        nli_unavailable=unavailable,
        progress=lambda message: print(message, file=sys.stderr, flush=True),
        prices=prices,
        prices_source=args.prices or "--prices",
    )
    result = checker.check(generations)
    out = Path(args.out) if args.out else Path(run["results_file"]).parent / CHECK_FOLDER
    report, files = write_outputs(result, out, human, run)
    _print_factcheck(report, files)
    return 0


def _factbench_table(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.factbench.scores import read_human_scores
    from lm_eval_tasks.utils.factbench.tables import rescore

    human = read_human_scores(args.human) if args.human else None
    report, files = rescore(args.folder, human, args.out)
    _print_factcheck(report, files)
    return 0


def register(commands: argparse._SubParsersAction) -> None:
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
    check.add_argument(
        "--judge",
        required=True,
        help="CoT judge: base_url=URL,model=NAME[,max_tokens=N|none,max_completion_tokens=N,reasoning_effort=E,"
        "temperature=0|none,extra_body={JSON},api_key_env=VAR,timeout=S]",
    )
    check.add_argument("--decomposer", help="atomic-fact decomposer (default: the judge)")
    check.add_argument(
        "--nli-model",
        default="tasksource/deberta-base-long-nli",
        help="HF sequence-classification checkpoint or folder; 'none' to skip NLI",
    )
    check.add_argument("--nli-revision", help="hub revision of the NLI model")
    check.add_argument("--nli-required", action="store_true", help="fail instead of reporting NLI as unavailable")
    add_dtype_option(check, "--nli-dtype")
    check.add_argument("--nli-max-length", type=int, default=1024)
    check.add_argument("--nli-stride", type=int, default=128)
    check.add_argument("--nli-batch-size", type=int, default=8)
    check.add_argument("--passages", help="passage store for the extrinsic re-check (factbench-index)")
    check.add_argument("--k", type=int, default=5, help="passages retrieved per re-checked fact (default 5)")
    check.add_argument(
        "--cache",
        help="SQLite cache of LLM answers and NLI results (default ~/.cache/lm_eval_tasks/factbench_calls.sqlite)",
    )
    check.add_argument("--concurrency", type=int, default=4, help="concurrent LLM requests")
    check.add_argument(
        "--prices",
        help='JSON file of USD per million tokens, {"MODEL": {"input": X, "output": Y}}: the LLM calls\' cost',
    )
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
