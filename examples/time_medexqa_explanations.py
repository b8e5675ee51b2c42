"""Wall time of scoring MedExQA explanations with each metric (load once, then one batch of all items).

With a run (lm_eval --log_samples output of the medexqa_* generation tasks) the model's replies
are scored; without one, every item's second reference explanation is scored as if it were a
reply (realistic lengths, no model needed). Run it under the shared lock for clean timings:

    flock /tmp/medeval-heavy.lock python examples/time_medexqa_explanations.py [OUTPUT_PATH] \
        [--metrics rouge_l,bleu,meteor] [--bertscore-model minilm] [--shared ../shared/data]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from lm_eval_tasks.utils import runs
from lm_eval_tasks.utils.medexqa import constants, explanation_metrics, explanations, loader


def pairs_from_run(path: str) -> list[tuple[str, tuple[str, str]]]:
    items = explanations.read_items(runs.load_run(path))
    return [(item.explanation, item.references) for item in items if item.explanation is not None]


def pairs_from_data(shared: str) -> list[tuple[str, tuple[str, str]]]:
    rows = [row for code in constants.SPECIALTIES for row in loader.load(shared, split="test", specialty=code)]
    return [(row["exp1"], (row["exp0"], row["exp1"])) for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", nargs="?", help="lm_eval --output_path of a MedExQA generation run")
    parser.add_argument("--metrics", default="rouge_l,bleu,meteor")
    parser.add_argument("--bertscore-model", default=None)
    parser.add_argument("--bertscore-layers", type=int, default=None)
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    args = parser.parse_args()
    start = time.perf_counter()
    pairs = pairs_from_run(args.run) if args.run else pairs_from_data(args.shared)
    source = f"replies of {args.run}" if args.run else "reference explanation 2 of every test item"
    print(f"{len(pairs)} explanations ({source}), read in {time.perf_counter() - start:.2f} s")
    total = 0.0
    for name in args.metrics.split(","):
        begin = time.perf_counter()
        try:
            metric = explanation_metrics.load(
                name,
                **({"model": args.bertscore_model, "num_layers": args.bertscore_layers} if name == "bertscore" else {}),
            )
        except explanation_metrics.MetricUnavailable as exc:
            print(f"{name:10s} unavailable: {exc}")
            continue
        loaded = time.perf_counter()
        scores = metric.score_batch(pairs)
        done = time.perf_counter()
        total += done - begin
        print(
            f"{name:10s} load {loaded - begin:6.2f} s, score {done - loaded:6.2f} s "
            f"({len(pairs) / (done - loaded):7.1f} items/s), mean {sum(scores) / len(scores):6.2f}"
        )
    print(f"all metrics: {total:.2f} s")


if __name__ == "__main__":
    main()
