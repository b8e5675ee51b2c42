"""Time ``report`` and ``leaderboard`` over full-size MedFact-Bench runs (14,274 items each) of a scripted model,
the installed code against an earlier commit of this repository, alternating the two on the same runs.

    python examples/leaderboard_timing.py --runs 2 10 30 --baseline HEAD~1 --repeats 3
    python examples/leaderboard_timing.py --runs 30 100 --repeats 1 --reports  # runs with their reports beside them

Each run's replies are drawn at random (seeded), so every pair has a difference to test. Every command is a
whole process (``python -m lm_eval_tasks ...``), measured from outside: wall seconds and its peak resident memory.
For each command the two versions run in turn (A B A B ...), so a drift of the machine's speed hits both; the
table gives min / median / max of each and the median of the pairwise ratios, with the load average before and
after. The leaderboard's median times are fitted as ``a + b * runs + c * pairs`` (least squares): a constant
cost per added run means ``c`` near 0. Goals: ``report`` no slower than 0.2.0 (about 2.9 s on 2 cores); the
leaderboard over 30 runs under 60 s and 2 GB, over 100 runs under 4 minutes and 4 GB.

``--baseline`` takes any commit: its ``lm_eval_tasks`` and ``utils`` are unpacked (``git archive``) into a
temporary package that shadows the installed one on ``PYTHONPATH``. Without it only the installed code runs.
``--reports`` first writes each run's report with the installed code: its leaderboards then read each run's saved
scored run (scored_run.json) instead of scoring it, as after the README's flow; the baseline scores every run.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import lm_eval_tasks.utils
import numpy as np
from lm_eval_tasks.utils.medfact_bench.constants import PUBLISHED_COUNTS
from tqdm import tqdm

STAMP = "2026-12-01T00-00-00.000000"
# Leaderboard size -> (wall seconds, peak RSS MB) it should stay under.
GOALS = {30: (60, 2048), 100: (240, 4096)}
SCORES = {"SUPPORT": 2, "NEI": 0, "CONTRADICT": -2}
REPO = Path(__file__).resolve().parents[1]
# Runs a command and prints its wall seconds and peak resident memory (KiB) as JSON on the last line of stderr.
_MEASURE = (
    "import json, resource, subprocess, sys, time; start = time.perf_counter(); "
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
    "usage = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(json.dumps({'code': code, 'wall': time.perf_counter() - start, 'rss_kib': usage.ru_maxrss, "
    "'cpu': usage.ru_utime + usage.ru_stime}), file=sys.stderr)"
)


def write_run(folder: Path, seed: int) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    tasks = {f"medfact_bench_{c.replace('-', '_')}": (c, n) for c, n in PUBLISHED_COUNTS.items()}
    generation = {"until": [], "max_gen_toks": 1024, "do_sample": False}
    results = {
        "configs": {task: {"output_type": "generate_until"} for task in tasks},
        "n-samples": {task: {"original": n, "effective": n} for task, (_, n) in tasks.items()},
        "config": {"model": "hf", "model_args": f"pretrained=scripted-{seed},dtype=float32", "limit": None},
        "model_name": f"scripted-{seed}",
        "versions": {task: 2.0 for task in tasks},
        "n-shot": {task: 0 for task in tasks},
    }
    (folder / f"results_{STAMP}.json").write_text(json.dumps(results), encoding="utf-8")
    skill = 0.4 + 0.4 * rng.random()
    for task, (component, n) in tasks.items():
        with (folder / f"samples_{task}_{STAMP}.jsonl").open("w", encoding="utf-8") as out:
            for doc_id in range(n):
                gold = ("SUPPORT", "NEI", "CONTRADICT")[doc_id % 3]
                score = SCORES[gold] if rng.random() < skill else rng.choice((2, 0, -2, 7))
                reply = f"<think>{'reasoning ' * 20}</think><score>{score}</score>"
                row = {
                    "doc_id": doc_id,
                    "doc": {"dataset": component, "label": gold},
                    "doc_hash": f"{task}-{doc_id}",
                    "prompt_hash": f"p-{task}-{doc_id}",
                    "arguments": {"gen_args_0": {"arg_0": "prompt", "arg_1": generation}},
                    "filter": "none",
                    "resps": [[reply]],
                    "filtered_resps": [reply],
                }
                out.write(json.dumps(row) + "\n")


def shadow_package(commit: str, root: Path) -> Path:
    """A folder holding ``lm_eval_tasks`` (with its ``utils``) as of ``commit``, to put first on PYTHONPATH."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", commit, "lm_eval_tasks", "utils"], check=True, capture_output=True
    ).stdout
    source = root / "source"
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(source, filter="data")
    compileall.compile_dir(source, quiet=1)
    package = root / "package"
    package.mkdir()
    (package / "lm_eval_tasks").symlink_to(source / "lm_eval_tasks")
    # The repository keeps utils/ beside the package; installed, it is lm_eval_tasks.utils.
    (source / "lm_eval_tasks" / "utils").symlink_to(source / "utils")
    return package


def compile_versions() -> None:
    """Byte-compile the installed code, as ``pip install`` does: where writing bytecode is off
    (``PYTHONDONTWRITEBYTECODE``), each process would otherwise compile every module of its own at start, which an
    installed package never does, and a version with more code would pay more. :func:`shadow_package` compiles
    each earlier commit's the same way."""
    for package in (lm_eval_tasks, lm_eval_tasks.utils):
        compileall.compile_dir(Path(package.__file__).parent, quiet=1)


def measure(command: list[str], pythonpath: Path | None, cwd: Path) -> dict:
    """One whole process; ``cwd`` outside the repository, whose own lm_eval_tasks/ would shadow either version."""
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = f"{pythonpath}{os.pathsep}{env['PYTHONPATH']}" if env.get("PYTHONPATH") else str(pythonpath)
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *command], env=env, capture_output=True, text=True, check=False, cwd=cwd
    )
    result = json.loads(done.stderr.strip().splitlines()[-1])
    if result["code"] != 0:
        raise SystemExit(f"{' '.join(command)} exited {result['code']}")
    return result


def spread(values: list[float], digits: int = 2) -> str:
    return f"{min(values):.{digits}f} / {statistics.median(values):.{digits}f} / {max(values):.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[2, 10, 30], help="leaderboard sizes")
    parser.add_argument("--baseline", help="a commit to compare with (e.g. HEAD~1); none: the installed code only")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each command per version")
    parser.add_argument("--no-report", action="store_true", help="skip timing report over one run")
    parser.add_argument(
        "--reports",
        action="store_true",
        help="write every run's report (installed code) before the leaderboards, so they reuse its scored_run.json",
    )
    args = parser.parse_args()
    compile_versions()
    python = [sys.executable, "-m", "lm_eval_tasks"]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        folders = [root / f"run{seed}" for seed in range(max(args.runs))]
        for seed, folder in enumerate(folders):
            write_run(folder, seed)
        versions = {"now": None}
        if args.baseline:
            versions = {"baseline": shadow_package(args.baseline, root / "baseline"), **versions}
        for name, package in versions.items():
            check = [
                sys.executable,
                "-c",
                "import lm_eval_tasks; print(lm_eval_tasks.__version__, lm_eval_tasks.__file__)",
            ]
            env = dict(os.environ, **({"PYTHONPATH": str(package)} if package else {}))
            print(
                f"{name}: lm_eval_tasks {subprocess.run(check, env=env, cwd=root, capture_output=True, text=True).stdout.strip()}"
            )
        cases = [] if args.no_report else [("report 1 run", [*python, "report", str(folders[0]), "--out"], 1)]
        cases += [
            (f"leaderboard {n} runs", [*python, "leaderboard", *map(str, folders[:n]), "--out"], n) for n in args.runs
        ]
        if args.reports:
            for folder in tqdm(folders, desc="writing reports", unit="run"):
                measure([*python, "report", str(folder)], None, root)
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        print("| command | version | wall s min / median / max | peak RSS MB min / median / max | now / baseline |")
        print("|---|---|---:|---:|---:|")
        fit, goals = {}, []
        for label, command, n in cases:
            timings: dict[str, list[dict]] = {name: [] for name in versions}
            for repeat in range(args.repeats):
                for name, package in versions.items():
                    out = root / f"out-{name}-{repeat}"
                    timings[name].append(measure([*command, str(out)], package, root))
            medians = {name: statistics.median(t["wall"] for t in runs) for name, runs in timings.items()}
            for name, runs in timings.items():
                ratio = ""
                if name == "now" and "baseline" in timings:
                    pairs = [a["wall"] / b["wall"] for a, b in zip(runs, timings["baseline"], strict=True)]
                    ratio = f"{statistics.median(pairs):.2f}x"
                walls, rss = [t["wall"] for t in runs], [t["rss_kib"] / 1024 for t in runs]
                print(f"| {label} | {name} | {spread(walls)} | {spread(rss, 0)} | {ratio} |", flush=True)
            if label.startswith("leaderboard"):
                fit[n] = medians
            if n in GOALS:
                seconds, megabytes = GOALS[n]
                wall = statistics.median(t["wall"] for t in timings["now"])
                rss = statistics.median(t["rss_kib"] / 1024 for t in timings["now"])
                met = "met" if wall < seconds and rss < megabytes else "MISSED"
                goals.append(f"goal {label}: under {seconds} s and {megabytes} MB: {met} ({wall:.1f} s, {rss:.0f} MB)")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print("\n".join(goals))
        if len(fit) >= 3:
            sizes = sorted(fit)
            design = np.array([[1.0, n, n * (n - 1) / 2] for n in sizes])
            for name in versions:
                (a, b, c), *_ = np.linalg.lstsq(design, np.array([fit[n][name] for n in sizes]), rcond=None)
                print(f"fit ({name}): {a:.2f} s + {b:.3f} s per run + {c:.4f} s per pair")
        elif fit:
            print("fit: needs three --runs sizes")
    print(f"finished {time.strftime('%Y-%m-%d %H:%M:%S')}")


if __name__ == "__main__":
    main()
