"""Time the MedFact-Bench reply parsers on hostile replies at 1x, 8x and 64x input size (linear time: ~8x per step).

Shapes: a score block followed by spaces (version 1.0's strict-format check was quadratic there), an open
score block followed by spaces, many ``<score>`` tags without a closing one, a score of many digits (past
int()'s 4,300-digit limit), many complete think/score block pairs, and a lone ``<think>`` followed by spaces.
Usage:

    python examples/parse_timing_medfact_bench.py [--base-kb 10] [--repeats 5]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from lm_eval_tasks.utils.medfact_bench.parsing import is_strict_format, parse_score, score_reply

PARSERS: dict[str, Callable[[str], object]] = {
    "parse_score": parse_score,
    "is_strict_format": is_strict_format,
    "score_reply": score_reply,
}


def pad(prefix: str, filler: str, suffix: str, size: int) -> str:
    """``prefix + filler * k + suffix`` of about ``size`` characters."""
    return prefix + filler * max(1, (size - len(prefix) - len(suffix)) // len(filler)) + suffix


SHAPES: dict[str, Callable[[int], str]] = {
    "score block, then spaces": lambda size: pad("<think>t</think><score>1</score>", " ", ".", size),
    "open score block, then spaces": lambda size: pad("<think>t</think><score>1", " ", ".", size),
    "many <score> tags": lambda size: pad("", "<score>", "", size),
    "score of many digits": lambda size: pad("<think>t</think><score>", "0", "1</score>", size),
    "many think/score pairs": lambda size: pad("", "<think>t</think><score>1</score>", "", size),
    "<think>, then spaces": lambda size: pad("<think>", " ", "", size),
}


def best_time(parser: Callable[[str], object], reply: str, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        parser(reply)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-kb", type=int, default=10, help="the 1x size in KB (default 10: 10, 80, 640 KB)")
    parser.add_argument("--repeats", type=int, default=5, help="best of this many runs per cell")
    args = parser.parse_args()
    sizes = [args.base_kb * 1000 * factor for factor in (1, 8, 64)]
    header = " | ".join(f"{size // 1000} KB" for size in sizes)
    print(f"| shape | parser | {header} | 64x / 1x |\n|---|---|" + "---:|" * (len(sizes) + 1))
    for shape, build in SHAPES.items():
        replies = [build(size) for size in sizes]
        for name, parse in PARSERS.items():
            times = [best_time(parse, reply, args.repeats) for reply in replies]
            cells = " | ".join(f"{t * 1e3:.3f} ms" for t in times)
            print(f"| {shape} | {name} | {cells} | {times[-1] / times[0]:.0f} |")


if __name__ == "__main__":
    main()
