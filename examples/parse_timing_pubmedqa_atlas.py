"""Parse time of PubMedQA's text handlers on hostile inputs at 1x / 8x / 64x size (linear time means ~8x per step).

    PYTHONPATH=.pyroot python examples/parse_timing_pubmedqa_atlas.py [--base-chars 10000]

Parsers: ``parsing.parse_answer`` (the generative task's reply parser) and ``prompts.first_words`` (the 300-word
context cut). Each shape is built to about ``base-chars`` characters, then 8 and 64 times that; the time is the best
of three runs.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from lm_eval_tasks.utils.pubmedqa_atlas import parsing, prompts


def repeat_to(piece: str, chars: int, head: str = "", tail: str = "") -> str:
    return head + piece * max(1, chars // len(piece)) + tail


# name -> (parser, build(chars) -> input)
SHAPES: dict[str, tuple[Callable[[str], object], Callable[[int], str]]] = {
    "answer: 'answer is ' repeated": (parsing.parse_answer, lambda n: repeat_to("answer is ", n)),
    "answer: 'answer' + spaces + 'yesterday'": (
        parsing.parse_answer,
        lambda n: repeat_to(" ", n, head="answer", tail="yesterday"),
    ),
    "answer: punctuation + 'yesterday'": (parsing.parse_answer, lambda n: repeat_to("!", n, tail="yesterday")),
    "answer: '**Answer:**' repeated": (parsing.parse_answer, lambda n: repeat_to("**Answer:** ", n)),
    "answer: unclosed '<think>' repeated": (parsing.parse_answer, lambda n: repeat_to("<think>", n)),
    "answer: closed think blocks, then Yes": (
        parsing.parse_answer,
        lambda n: repeat_to("<think>a</think>", n, tail="Yes"),
    ),
    "answer: prose, then 'The answer is maybe.'": (
        parsing.parse_answer,
        lambda n: repeat_to("The study found no difference. ", n, tail="The answer is maybe."),
    ),
    "answer: long s 'yeſ' repeated": (parsing.parse_answer, lambda n: repeat_to("yeſ anſwer iſ ", n)),
    "answer: digits": (parsing.parse_answer, lambda n: repeat_to("9", n)),
    "first_words: one-letter words": (prompts.first_words, lambda n: repeat_to("a ", n)),
    "first_words: whitespace only": (prompts.first_words, lambda n: repeat_to(" \n\t", n)),
}


def best_time(parse: Callable[[str], object], text: str, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        parse(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-chars", type=int, default=10_000)
    args = parser.parse_args()
    factors = (1, 8, 64)
    print(f"{'shape':46} " + " ".join(f"{f'{f}x ({f * args.base_chars:,} ch)':>22}" for f in factors) + "   64x/1x")
    for name, (parse, build) in SHAPES.items():
        seconds = [best_time(parse, build(factor * args.base_chars)) for factor in factors]
        cells = " ".join(f"{s * 1000:19.3f} ms" for s in seconds)
        print(f"{name:46} {cells} {seconds[-1] / seconds[0]:9.1f}")


if __name__ == "__main__":
    main()
