"""Time the leaderboard over N full-size MedFact-Bench runs (14,274 items each) of a scripted model.

    python examples/leaderboard_timing.py --runs 2 10 30

Each run's replies are drawn at random (seeded), so every pair has a difference to test. Prints the
whole leaderboard's wall time per N and the time per added run; the goal is linear growth (30 runs
under 60 s on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from lm_eval_tasks.utils.leaderboard import build_leaderboard
from lm_eval_tasks.utils.medfact_bench.constants import PUBLISHED_COUNTS

STAMP = "2026-12-01T00-00-00.000000"
SCORES = {"SUPPORT": 2, "NEI": 0, "CONTRADICT": -2}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[2, 10, 30])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        folders = []
        for seed in range(max(args.runs)):
            folders.append(Path(root) / f"run{seed}")
            write_run(folders[-1], seed)
        previous = None
        for n in args.runs:
            start = time.perf_counter()
            board = build_leaderboard(folders[:n])
            seconds = time.perf_counter() - start
            pairs = len(board["benchmarks"]["medfact_bench"]["comparisons"])
            per_run = f"; {seconds / n:.2f} s per run" if previous is None else f"; {seconds / n:.2f} s per run"
            print(f"{n} runs ({pairs} pairs): {seconds:.1f} s{per_run}", flush=True)
            previous = seconds


if __name__ == "__main__":
    main()
