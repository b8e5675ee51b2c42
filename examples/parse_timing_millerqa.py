"""How long MillerQA's reply parsers take on ordinary and hostile replies at 1x, 8x and 64x their size.

    python examples/parse_timing_millerqa.py [BASE_CHARACTERS]   (default 4096)

Time linear in the length shows as a 64x/1x ratio near 64 (short inputs add fixed costs, so it can be
lower). Each shape is built to about BASE_CHARACTERS times the factor; the best of three runs is printed.
Nothing here is asserted: the tests check verdicts, this script only measures.
"""

from __future__ import annotations

import sys
import time

from lm_eval_tasks.utils.millerqa import parsing

DOC = {"permutation": [3, 0, 4, 1, 2], "target": 4}
ANSWER = '{"selected_answer": "C", "explanation": "Because.", "confidence": 70}'


def repeat_to(unit: str, size: int) -> str:
    return unit * max(1, size // len(unit))


# name -> reply of about `size` characters
SHAPES = {
    "JSON answer, long explanation": lambda n: ANSWER.replace("Because.", repeat_to("Because. ", n)),
    "prose with stray braces, then JSON": lambda n: repeat_to("Let f = {x}. ", n) + ANSWER,
    "fenced JSON after prose": lambda n: repeat_to("Some words. ", n) + "```json\n" + ANSWER + "\n```",
    "braces only": lambda n: "{" * n,
    "prose, JSON, then braces": lambda n: "Let f = {x}. " + ANSWER + " " + "{" * n,
    "unclosed objects": lambda n: repeat_to('{"a":', n),
    "answer inside deep arrays": lambda n: "[" * (n // 2) + ANSWER + "]" * (n // 2),
    "deep arrays in the answer": lambda n: ANSWER[:-1] + ', "x": ' + "[" * (n // 2) + "]" * (n // 2) + "}",
    "confidence of n digits": lambda n: '{"selected_answer": "C", "confidence": ' + "9" * n + "}",
    "truncated, confidence of n digits": lambda n: '{"selected_answer": "C", "confidence": ' + "9" * n,
    "unclosed fence and blanks": lambda n: "```" + " " * n,
    "unterminated string of escaped quotes": lambda n: '{"a": "' + repeat_to('\\"', n),
    "repeated answer keys, never closed": lambda n: repeat_to('{"selected_answer": "C", ', n),
    "raw newlines in repeated strings": lambda n: repeat_to('{"selected_answer": "A\n", ', n),
    "unclosed think block": lambda n: "<think>" + repeat_to("hmm ", n),
}
# The other parsers, on their own hostile inputs.
OTHERS = {
    "selected_letter, long answer text": (parsing.selected_letter, lambda n: "D. " + "x" * n),
    "clamp_confidence, digit string": (parsing.clamp_confidence, lambda n: "9" * n),
    "escape_control_characters, quotes and newlines": (
        parsing.escape_control_characters,
        lambda n: repeat_to('"a\n', n),
    ),
    "fenced_block, unclosed fence": (parsing.fenced_block, lambda n: "```json" + " " * n),
}
FACTORS = (1, 8, 64)


def best_of_three(function, argument) -> float:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        function(argument)
        times.append(time.perf_counter() - start)
    return min(times)


def main(base: int) -> None:
    print(f"base size {base} characters; best of 3 runs, milliseconds")
    print(f"{'reply shape':48s} {'verdict':>20s} " + " ".join(f"{f'{f}x':>9s}" for f in FACTORS) + "  64x/1x")
    rows = [(name, lambda reply: parsing.score_reply(DOC, reply), build) for name, build in SHAPES.items()]
    rows += [(name, function, build) for name, (function, build) in OTHERS.items()]
    for name, function, build in rows:
        timings = [best_of_three(function, build(base * factor)) for factor in FACTORS]
        result = function(build(base))
        verdict = f"{result.method}:{result.letter}" if isinstance(result, parsing.Answer) else "-"
        cells = " ".join(f"{1000 * t:9.2f}" for t in timings)
        print(f"{name:48s} {verdict:>20s} {cells}  {timings[-1] / max(timings[0], 1e-9):6.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4096)
