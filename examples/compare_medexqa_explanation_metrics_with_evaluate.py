"""Check the explanation metrics against evaluate's own modules, item by item, on MedExQA explanations.

Each evaluate module is called the way MedARC's medexqa environment calls it, one item at a time:
``evaluate.load(NAME).compute(predictions=[explanation], references=[[ref_1, ref_2]])`` (BERTScore with
``model_type``, ``num_layers``, ``lang="en"``), and compared with ``explanation_metrics`` computing the same
items without evaluate. Online the modules come from the hub; offline give ``--modules DIR`` holding
``bleu/``, ``rouge/``, ``meteor/``, ``bertscore/`` folders with the modules' scripts.

    python examples/compare_medexqa_explanation_metrics_with_evaluate.py [--modules DIR] [--items 200] [--bertscore-items 50]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from lm_eval_tasks.utils.medexqa import explanation_metrics, loader

# evaluate's module of each explanation metric.
EVALUATE_NAMES = {"rouge_l": "rouge", "bleu": "bleu", "meteor": "meteor", "bertscore": "bertscore"}


def medexqa_pairs(shared: str, count: int) -> list[tuple[str, list[str]]]:
    """Explanation 2 of an item against explanation 1 and the next item's explanation 1, then short and odd cases."""
    rows = loader.load(shared)
    pairs = [(row["exp1"], [row["exp0"], rows[(i + 1) % len(rows)]["exp0"]]) for i, row in enumerate(rows)]
    truncated = [(" ".join(cand.split()[:k]), refs) for k, (cand, refs) in zip((1, 3, 5, 8, 13), pairs)]
    odd = [("<skipped>", ["a b"]), ("a b c d", ["a b c d", "<skipped>"]), ("x", ["x"]), ("", ["a"])]
    return pairs[:count] + truncated + odd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modules", help="folder with evaluate's metric scripts (offline); default: the hub")
    parser.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--bertscore-items", type=int, default=50)
    parser.add_argument("--bertscore-model", default=explanation_metrics.MINILM)
    args = parser.parse_args()
    import evaluate

    pairs = medexqa_pairs(args.shared, args.items)
    for name in explanation_metrics.METRICS:
        module_name = EVALUATE_NAMES[name]
        module = evaluate.load(
            os.path.join(args.modules, module_name) if args.modules else f"evaluate-metric/{module_name}"
        )
        options = {"model": args.bertscore_model} if name == "bertscore" else {}
        metric = explanation_metrics.load(name, **options)
        subset = [p for p in pairs if p[0].strip()][: args.bertscore_items] if name == "bertscore" else pairs
        begin = time.perf_counter()
        ours = metric.score_batch(subset)
        middle = time.perf_counter()
        theirs = []
        for cand, refs in subset:
            try:
                if name == "bertscore":
                    result = module.compute(
                        predictions=[cand],
                        references=[refs],
                        lang="en",
                        model_type=metric.details["model_path"],
                        num_layers=metric.details["num_layers"],
                    )
                    theirs.append(100.0 * result["f1"][0])
                else:
                    key = {"rouge_l": "rougeL"}.get(name, name)
                    theirs.append(100.0 * float(module.compute(predictions=[cand], references=[refs])[key]))
            except ZeroDivisionError:
                theirs.append(None)
        end = time.perf_counter()
        compared = [(a, b) for a, b in zip(ours, theirs) if b is not None]
        exact = sum(a == b for a, b in compared)
        worst = max(abs(a - b) for a, b in compared)
        errors = [subset[i][0][:30] for i, b in enumerate(theirs) if b is None]
        print(
            f"{name:10s} {len(compared)} items: {exact} identical, max |difference| {worst:.3g} (0-100 scale); "
            f"evaluate raised ZeroDivisionError on {errors or 'none'} (ours: "
            f"{[ours[i] for i, b in enumerate(theirs) if b is None]}); ours {middle - begin:.2f} s, "
            f"evaluate {end - middle:.2f} s; {metric.details['implementation']}"
        )


if __name__ == "__main__":
    main()
