"""MedExQA: multiple choice with explanations in five specialties; see lm_eval_tasks/medexqa/README.md.

Modules: constants (data location, specialties, published counts and numbers), prompts, parsing
(the authors' letter extraction and the scoring of both protocols), loader, tasks (lm-eval hooks),
report_spec, explanations and explanation_metrics (explanation scores after a run), commands.
"""

from ..benchmarks import Asset, Benchmark, Setting, SettingKind
from . import commands, constants, loader, parsing
from .report_spec import REPORT_SPECS

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
    # The cascade reads a reply against an item's options: tests/reply_parsers.py binds it to real items.
    reply_parsers={"parse_judge_score": parsing.parse_judge_score},
    assets=(
        Asset(
            "MedExQA",
            f"hf://datasets/{constants.HUB_REPO}",
            constants.HUB_REVISION,
            "CC BY-NC-SA 4.0 (dataset card)",
            published_counts=constants.PUBLISHED_COUNTS["test"],
        ),
    ),
    overlap_items=loader.overlap_items,
)
