"""Wall time of every MedExQA reply parser on hostile replies at 1x, 8x and 64x length.

Linear time shows as 64x / 8x near 8 (quadratic: 64); 64x / 1x is near 64 once the 1x time is well
above timer and cache noise.

Parsers: the whole extraction cascade (``parsing.extract_answer``), its option-text replacement
(step 1), each of its four patterns (steps 2-5) and the fuzzy fallback (step 6), the authors'
prompt-included reading, and the judge-score parser of the explanation scores. Run it under the
shared lock for clean timings:

    flock /tmp/medeval-heavy.lock python examples/parse_timing_medexqa.py [--base-chars 16000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from lm_eval_tasks.utils.medexqa import parsing

OPTIONS = ["X-ray", "Microwave", "Ultraviolet", "Infrared"]
DOC = {"question": "What is the band of electromagnetic waves used in a thermographic camera?", "answer": "D"}
DOC |= dict(zip("ABCD", OPTIONS))
# Hostile shapes: one unit, repeated to the wanted length.
SHAPES = {
    "'answer ' run": "answer ",
    "negated cues": "the choice is not ",
    "option-text repeats": "infrared ",
    "prose, no letter": "heat radiates from the skin; ",
    "lone surrogates": "\ud800 answer \udfff",
    "closed thinks": "<think>A</think>",
    "score tags": "<score>99",
}


def _step(name: str) -> Callable[[str], object]:
    pattern, anchored = next((p, a) for n, p, a in parsing.STEP_PATTERNS if n == name)
    return pattern.match if anchored else pattern.search


def _fuzzy(text: str) -> object:
    # read_letter on a text without option texts or capital A-D reaches the fuzzy step
    return parsing.read_letter(text.replace("A", "a").replace("B", "b").replace("C", "c").replace("D", "d"), OPTIONS)


PARSERS: dict[str, Callable[[str], object]] = {
    "extract_answer (cascade)": lambda text: parsing.extract_answer(text, OPTIONS),
    "step 1 option texts": lambda text: parsing.replace_option_texts(text, OPTIONS),
    **{f"step {i} {name}": _step(name) for i, (name, _, _) in enumerate(parsing.STEP_PATTERNS, start=2)},
    "step 6 fuzzy": _fuzzy,
    "prompt-included reading": lambda text: parsing.prompt_included_reading(DOC, parsing.score_generation(DOC, text)),
    "parse_judge_score": parsing.parse_judge_score,
}


def best_time(parse: Callable[[str], object], text: str, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        parse(text)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-chars", type=int, default=16000, help="reply length at 1x (default 16000)")
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs per cell")
    args = parser.parse_args()
    factors = (1, 8, 64)
    print(f"reply length at 1x: {args.base_chars} characters; seconds, best of {args.repeats}")
    print(f"| parser | shape | {' | '.join(f'{f}x' for f in factors)} | 64x / 8x | 64x / 1x |")
    print("|---|---|" + "---:|" * (len(factors) + 2))
    worst = 0.0
    for parser_name, parse in PARSERS.items():
        for shape, unit in SHAPES.items():
            times = []
            for factor in factors:
                text = unit * (args.base_chars * factor // len(unit))
                times.append(best_time(parse, text, args.repeats))
            step, overall = (times[-1] / max(t, 1e-9) for t in (times[1], times[0]))
            worst = max(worst, step)
            cells = " | ".join(f"{t:.4f}" for t in times)
            print(f"| {parser_name} | {shape} | {cells} | {step:.1f} | {overall:.0f} |")
    print(f"largest 64x / 8x ratio: {worst:.1f} (linear: about 8; quadratic: about 64)")


if __name__ == "__main__":
    main()
