"""Time ``report`` and ``leaderboard`` over runs of the real shape: the installed code, A/B against earlier commits.

    python examples/report_timing.py RUNS_FOLDER --baseline 78a0617 --baseline HEAD~1 --repeats 3
    python examples/report_timing.py RUNS_FOLDER --leaderboards 10 20 30 --reports

RUNS_FOLDER holds lm-eval run folders (``--output_path`` with ``--log_samples``), one per subfolder, sorted by name:
runs of the real shape, written through this package's ``medfact_bench`` tasks by lm-eval with a scripted model (a
``lm_eval.api.model.LM`` whose ``generate_until`` returns a reply of realistic length for each request, with
``apply_chat_template=True`` and ``log_samples=True``), so that every sample holds the real prompt (the Med-V1
instruction, the claim and its abstract, the chat template around them) and a reply with its reasoning: about
156 MB per 14,274-item run. Further runs may be copies of the first with other replies (same items, same doc
hashes). A run much smaller than that (a one-word prompt, a short reply) is no measurement of the report.

The script states each run's size in bytes and its prompt and reply lengths, then times each command as a whole
process (``python -m lm_eval_tasks ...``, measured from outside: wall seconds, the CPU seconds of all its processes
and the peak resident memory of its largest process), the versions in turn (A B A B ...) so that a drift of the
machine's speed hits both, and prints min / median / max of each, the median of the pairwise wall ratios with a
distribution-free 95% interval (order statistics; from 6 pairs on: on a shared machine whose speed swings by half
within the hour, a few pairs cannot tell a few percent) and the load average before and after:

- ``report`` over the first run, against each ``--baseline`` (a commit; its ``lm_eval_tasks`` and ``utils`` are
  unpacked with ``git archive`` into a package that shadows the installed one on ``PYTHONPATH``); every version's
  modules byte-compiled first, as an installed package's are;
- ``leaderboard`` over the first N runs for each of ``--leaderboards``, cold (no report beside any run), with the
  installed code; their medians fitted as ``a + b * runs + c * pairs`` (least squares): a constant cost per added
  run means ``c`` near 0;
- with ``--reports``: every run's report written first (``report/`` beside it, the README's flow; removed again at
  the end), then the largest leaderboard again, reading each run's saved scored run.

Goals: ``report`` no slower than 0.2.0 and under 500 MB; the leaderboard over 30 runs cold within 20 times 0.2.0's
report time (about 60 s) and under 2 GB, under 20 s with every run's report written first.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
from leaderboard_timing import compile_versions, measure, shadow_package, spread


def run_bytes(run: Path) -> int:
    return sum(path.stat().st_size for path in run.rglob("*") if path.is_file())


def describe(run: Path) -> str:
    """A run's size in bytes and its prompt and reply lengths (characters: mean, min, max)."""
    size = run_bytes(run)
    prompts, replies = [], []
    for path in run.rglob("samples_*.jsonl"):
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                sample = json.loads(line)
                prompts.append(len(str(sample["arguments"]["gen_args_0"]["arg_0"])))
                reply = sample["filtered_resps"][0]
                replies.append(len(reply) if isinstance(reply, str) else 0)
    lengths = lambda values: f"mean {statistics.mean(values):.0f}, min {min(values)}, max {max(values)}"  # noqa: E731
    return (
        f"{run.name}: {size:,} bytes, {len(prompts):,} samples; prompt characters {lengths(prompts)}; "
        f"reply characters {lengths(replies)}"
    )


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def timed(label: str, command: list[str], versions: dict[str, Path | None], repeats: int, scratch: Path) -> dict:
    """``command`` (its output folder appended) ``repeats`` times per version, in turn; one table row per version."""
    timings: dict[str, list[dict]] = {name: [] for name in versions}
    for repeat in range(repeats):
        for name, package in versions.items():
            out = scratch / f"out-{name}-{repeat}"
            timings[name].append(measure([*command, str(out)], package, scratch))
            shutil.rmtree(out, ignore_errors=True)
    for name, runs in timings.items():
        ratios = {
            other: median_with_interval([a["wall"] / b["wall"] for a, b in zip(runs, timings[other], strict=True)])
            for other in versions
            if other != name and name == "now"
        }
        ratio = "; ".join(f"{value} {other}" for other, value in ratios.items())
        walls, rss = [t["wall"] for t in runs], [t["rss_kib"] / 1024 for t in runs]
        cpu = [t["cpu"] for t in runs]
        print(f"| {label} | {name} | {spread(walls)} | {spread(cpu)} | {spread(rss, 0)} | {ratio} |", flush=True)
    return timings


def median_with_interval(values: list[float], confidence: float = 0.95) -> str:
    """The median of ``values`` and a distribution-free interval for it: the order statistics k and n + 1 - k, with
    k the largest whose tail P(Binomial(n, 1/2) < k) is at most (1 - confidence) / 2 (no interval below 6 values,
    where even the smallest and largest value cover less than 95%)."""
    n = len(values)
    tail = (1.0 - confidence) / 2.0
    k = 0
    while k + 1 <= n and sum(math.comb(n, i) for i in range(k + 1)) / 2**n <= tail:
        k += 1
    middle = f"{statistics.median(values):.3f}x"
    if k == 0:
        return f"{middle} (no {confidence:.0%} interval from {n} pairs)"
    ordered = sorted(values)
    return f"{middle} [{ordered[k - 1]:.3f}, {ordered[n - k]:.3f}] ({n} pairs)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, help="a folder of run folders of the real shape (see above)")
    parser.add_argument("--baseline", action="append", default=[], help="a commit to compare report with")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each command per version")
    parser.add_argument("--leaderboards", type=int, nargs="*", default=[], help="leaderboard sizes (runs)")
    parser.add_argument("--reports", action="store_true", help="then the largest leaderboard with reports written")
    args = parser.parse_args()
    folders = sorted(path for path in args.runs.iterdir() if path.is_dir() and any(path.rglob("results_*.json")))
    if not folders:
        raise SystemExit(f"{args.runs}: no run folders")
    if any(path.name.startswith("report") for folder in folders for path in folder.rglob("report*")):
        raise SystemExit(f"{args.runs}: a report is written beside a run already; remove it for cold timings")
    print(describe(folders[0]))
    print(f"{len(folders)} runs, {sum(run_bytes(f) for f in folders):,} bytes in all")
    python = [sys.executable, "-m", "lm_eval_tasks"]
    compile_versions()
    with tempfile.TemporaryDirectory() as temporary:
        scratch = Path(temporary)
        versions: dict[str, Path | None] = {"now": None}
        for commit in args.baseline:
            versions[commit] = shadow_package(commit, scratch / f"baseline-{commit}")
        print(f"load average before: {load()}", flush=True)
        print(
            "| command | version | wall s min / median / max | CPU s (user + sys) min / median / max "
            "| peak RSS MB min / median / max | now / baseline: median wall ratio of the pairs [95% interval] |"
        )
        print("|---|---|---:|---:|---:|---:|")
        timed("report 1 run", [*python, "report", str(folders[0]), "--out"], versions, args.repeats, scratch)
        fit = {}
        for n in args.leaderboards:
            runs = [str(folder) for folder in folders[:n]]
            timings = timed(
                f"leaderboard {n} runs, cold", [*python, "leaderboard", *runs, "--out"], {"now": None}, 1, scratch
            )
            fit[n] = timings["now"][0]
        if args.reports and args.leaderboards:
            n = max(args.leaderboards)
            written = []
            try:
                for folder in folders[:n]:
                    measure([*python, "report", str(folder)], None, scratch)
                    written += [path for path in folder.rglob("report") if path.is_dir()]
                runs = [str(folder) for folder in folders[:n]]
                timed(
                    f"leaderboard {n} runs, reports written",
                    [*python, "leaderboard", *runs, "--out"],
                    {"now": None},
                    1,
                    scratch,
                )
            finally:
                for path in written:
                    shutil.rmtree(path, ignore_errors=True)
        print(f"load average after: {load()}")
        if len(fit) >= 3:
            sizes = sorted(fit)
            design = np.array([[1.0, n, n * (n - 1) / 2] for n in sizes])
            for key, unit in (("wall", "s"), ("rss_kib", "KiB")):
                (a, b, c), *_ = np.linalg.lstsq(design, np.array([fit[n][key] for n in sizes]), rcond=None)
                print(f"fit of leaderboard {key}: {a:.2f} {unit} + {b:.3f} {unit} per run + {c:.4f} {unit} per pair")


if __name__ == "__main__":
    main()
