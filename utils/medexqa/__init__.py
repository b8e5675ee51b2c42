"""MedExQA: multiple choice with explanations in five specialties; see lm_eval_tasks/medexqa/README.md.

Modules: constants (data location, specialties, published counts and numbers), prompts, parsing
(the authors' letter extraction and the scoring of both protocols), loader, tasks (lm-eval hooks),
report_spec, explanations and explanation_metrics (explanation scores after a run), commands.
"""

from functools import partial

from ..benchmarks import Asset, Benchmark, Setting, SettingKind
from . import commands, constants, parsing, prompts
from .report_spec import REPORT_SPECS

# The cascade reads a reply against an item's options: BE test row 1's, and CLS test row 325's one-letter
# options (every "e" of a reply becomes B there, the most substitution any real item makes).
_BE_1 = {"question": "What should be the maximum surface temperature of a device attachment?", "answer": "D"}
_BE_1 |= dict(zip(constants.LETTERS, ("43℃", "36℃", "38℃", "41℃")))
_CLS_325_OPTIONS = ("D", "e", "C", "E")


def _prompt_included_reading(reply: str) -> parsing.Extraction:
    return parsing.prompt_included_reading(_BE_1, parsing.score_generation(_BE_1, reply))


BENCHMARK = Benchmark(
    name=constants.NAME,
    title="MedExQA",
    data_folder=constants.DATA_FOLDER,
    report_specs=REPORT_SPECS,
    register_commands=commands.register,
    smoke_tasks=("medexqa_logit_be", "medexqa_be"),
    settings=(
        Setting("split", SettingKind.TEXT, "test", "which items are evaluated: test (the paper's) or dev"),
        Setting("shuffle", SettingKind.FLAG, False, "shuffles every item's options (not the paper's order)"),
        Setting("shuffle_seed", SettingKind.COUNT, constants.DEFAULT_SHUFFLE_SEED, "the seed of that shuffle"),
    ),
    reply_parsers={
        "extract_answer": partial(parsing.extract_answer, options=prompts.doc_options(_BE_1)),
        "extract_answer_one_letter_options": partial(parsing.extract_answer, options=_CLS_325_OPTIONS),
        "prompt_included_reading": _prompt_included_reading,
        "parse_judge_score": parsing.parse_judge_score,
    },
    assets=(
        Asset(
            "MedExQA",
            f"hf://datasets/{constants.HUB_REPO}",
            constants.HUB_REVISION,
            "CC BY-NC-SA 4.0 (dataset card)",
            published_counts=constants.PUBLISHED_COUNTS["test"],
        ),
    ),
)
