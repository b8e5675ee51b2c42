"""BERTScore of real MedExQA explanation pairs in float32 (the default, evaluate's) and in bfloat16 (the opt-in).

Each pair is an item's second reference explanation scored as a reply against its first one and the next
item's first one (the pairs of examples/compare_medexqa_explanation_metrics_with_evaluate.py), plus the
identical pair "x" / ["x"] (F1 exactly 100 by definition). Prints both means, how far bfloat16 moves item
scores, and the time each dtype took here.

    python examples/medexqa_bertscore_dtypes.py [--shared ../shared/data] [--items 300] [--bertscore-model minilm]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from lm_eval_tasks.utils import models
from lm_eval_tasks.utils.medexqa import explanation_metrics, loader


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--bertscore-model", default=explanation_metrics.MINILM)
    args = parser.parse_args()
    rows = loader.load(args.shared)
    pairs = [(row["exp1"], [row["exp0"], rows[(i + 1) % len(rows)]["exp0"]]) for i, row in enumerate(rows)]
    pairs = pairs[: args.items] + [("x", ["x"])]
    print(
        f"{len(pairs) - 1} MedExQA pairs + ('x', ['x']); this CPU computes bfloat16 natively: {models.native_bfloat16()}"
    )
    scores = {}
    for dtype in ("float32", "bfloat16"):
        metric = explanation_metrics.bertscore(model=args.bertscore_model, dtype=dtype)
        started = time.perf_counter()
        scores[dtype] = metric.score_batch(pairs)
        seconds = time.perf_counter() - started
        real = scores[dtype][:-1]
        print(
            f"{dtype}: mean {sum(real) / len(real):.4f} over {len(real)} pairs, 'x' vs ['x'] {scores[dtype][-1]:.4f}, "
            f"{seconds:.1f} s ({metric.details['implementation']}, {metric.details['model']}, "
            f"layer {metric.details['num_layers']})"
        )
    moved = [abs(b - f) for f, b in zip(scores["float32"][:-1], scores["bfloat16"][:-1])]
    print(
        f"bfloat16 - float32 per pair (0-100): max |diff| {max(moved):.4f}, mean |diff| {sum(moved) / len(moved):.4f}, "
        f"pairs moved by more than 0.01: {sum(m > 0.01 for m in moved)} of {len(moved)}"
    )


if __name__ == "__main__":
    main()
