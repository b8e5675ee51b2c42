"""Parse time of every FActBench parser on hostile replies at 1x, 8x and 64x a base size.

Linear parsers take about 8x and 64x the 1x time; a quadratic one about 64x and 4,096x.
Run: python examples/parse_timing_factbench.py [BASE_CHARS] (default 4,000 characters).
"""

from __future__ import annotations

import sys
import time

from lm_eval_tasks.utils.factbench.factcheck_prompts import parse_facts, parse_verdict
from lm_eval_tasks.utils.factbench.parsing import score_generation
from lm_eval_tasks.utils.factbench.pipeline import split_sentences

# Each shape builds a reply of about n characters.
SHAPES = {
    "bullet then spaces": lambda n: "- " + " " * n,
    "number then spaces": lambda n: "12. " + " " * n + "x",
    "many facts": lambda n: "".join(f"- fact {i}\n" for i in range(n // 10)),
    "unclosed think": lambda n: "<think>" * (n // 7),
    "answer words": lambda n: "answer " * (n // 7),
    "answer then gap": lambda n: "Answer:" + " " * n + "True",
    "abbreviations": lambda n: "e.g. " * (n // 5),
    "numbered dots": lambda n: "1. " * (n // 3),
}
PARSERS = {
    "parse_facts": parse_facts,
    "parse_verdict": parse_verdict,
    "score_generation": score_generation,
    "split_sentences": split_sentences,
}
SCALES = (1, 8, 64)


def seconds(parser, text: str) -> float:
    """Best of three runs (repeats for very short times)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        parser(text)
        best = min(best, time.perf_counter() - start)
    return best


def main(base: int) -> None:
    split_sentences("Warm up the sentence splitter.")
    print(f"base size {base:,} characters; seconds (ratio to 1x)")
    print(f"| parser | shape | {' | '.join(f'{s}x' for s in SCALES)} |")
    print("|---|---|" + "---:|" * len(SCALES))
    for name, parser in PARSERS.items():
        for shape, build in SHAPES.items():
            times = [seconds(parser, build(base * scale)) for scale in SCALES]
            cells = [f"{t:.5f}" if i == 0 else f"{t:.5f} ({t / times[0]:.0f}x)" for i, t in enumerate(times)]
            print(f"| {name} | {shape} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4000)
