"""Every reply parser the fuzz (tests/test_parsers.py) and the timing (examples/parse_timing.py) cover, by name.

The shared think-block stripper, each benchmark's declared parsers (``Benchmark.reply_parsers``: they read a reply
alone), and MedExQA's cascade, which reads a reply against an item's options, bound here to real items: BE test
row 1's options, and CLS test row 325's one-letter options (every "e" of a reply becomes B there, the most
substitution any real item makes).
"""

from functools import partial

from lm_eval_tasks.utils.benchmarks import discover
from lm_eval_tasks.utils.medexqa import constants, parsing, prompts
from lm_eval_tasks.utils.text import strip_think

BE_1 = {"question": "What should be the maximum surface temperature of a device attachment?", "answer": "D"}
BE_1 |= dict(zip(constants.LETTERS, ("43℃", "36℃", "38℃", "41℃")))
CLS_325_OPTIONS = ("D", "e", "C", "E")


def _prompt_included_reading(reply: str) -> parsing.Extraction:
    return parsing.prompt_included_reading(BE_1, parsing.score_generation(BE_1, reply))


PARSERS = (
    {"text.strip_think": strip_think}
    | {
        f"{benchmark.name}.{name}": parser
        for benchmark in discover()
        for name, parser in benchmark.reply_parsers.items()
    }
    | {
        "medexqa.extract_answer": partial(parsing.extract_answer, options=prompts.doc_options(BE_1)),
        "medexqa.extract_answer_one_letter_options": partial(parsing.extract_answer, options=CLS_325_OPTIONS),
        "medexqa.prompt_included_reading": _prompt_included_reading,
    }
)
