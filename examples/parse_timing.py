"""Parse time of every reply parser on hostile replies at 1x, 8x and 64x their size.

The parsers are tests/reply_parsers.py's: each benchmark's declared ones (``Benchmark.reply_parsers``),
MedExQA's cascade on real items' options and the shared think-block stripper. A parser linear in the
reply length takes about 8x and 64x as long on the larger inputs; a quadratic one about 64x and 4096x.
Run from the repository root: ``python examples/parse_timing.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shapes and the parsers

from tests.hostile_replies import SHAPES  # noqa: E402
from tests.reply_parsers import PARSERS  # noqa: E402


def seconds(parser, reply: str, repeats: int = 3) -> float:
    """The fastest of ``repeats`` calls (the machine is shared: the minimum is the least disturbed)."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        parser(reply)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli.add_argument("--size", type=int, default=10_000, help="characters of the 1x input (default 10,000)")
    args = cli.parse_args()
    sizes = (args.size, 8 * args.size, 64 * args.size)
    print(f"{'parser':45} {'shape':24} " + " ".join(f"{s // 1000:>7} KB" for s in sizes) + "   64x/1x")
    for name, parser in PARSERS.items():
        for shape, build in SHAPES.items():
            times = [seconds(parser, build(size)) for size in sizes]
            ratio = times[2] / times[0] if times[0] > 0 else float("nan")
            print(f"{name:45} {shape:24} " + " ".join(f"{t * 1000:8.2f}ms" for t in times) + f"   {ratio:6.1f}")


if __name__ == "__main__":
    main()
