"""MillerQA: 24 curated multiple-choice benchmarks in five competency dimensions; see lm_eval_tasks/millerqa/README.md.

Modules: ``constants`` (pinned source, benchmarks, counts, families), ``prompts`` (shuffle and messages),
``parsing`` (the reply cascade and the scoring of each protocol), ``loader`` (files and checks),
``medbullets`` (rebuilding the withheld file), ``tasks`` (lm-eval hooks), ``report_spec`` (the report).
"""

from ..benchmarks import Asset, Benchmark, Setting, SettingKind
from . import commands, constants, loader, parsing
from .constants import DATA_FOLDER, NAME, SHUFFLE_SEED
from .report_spec import REPORT_SPECS

BENCHMARK = Benchmark(
    name=NAME,
    title="MillerQA",
    data_folder=DATA_FOLDER,
    report_specs=REPORT_SPECS,
    register_commands=commands.register,
    smoke_tasks=("millerqa_triage", "millerqa_choiceonly_triage", "millerqa_ll_triage"),
    settings=(
        Setting(
            "model_label",
            SettingKind.TEXT,
            None,
            "keys the per-(item, model) option shuffle; derived from pretrained= or model= (with a warning) when not given",
        ),
        Setting("shuffle_seed", SettingKind.COUNT, SHUFFLE_SEED, "the seed of that shuffle (42: the authors')"),
    ),
    reply_parsers={
        "parse_reply": parsing.parse_reply,
        "selected_letter": parsing.selected_letter,
        "clamp_confidence": parsing.clamp_confidence,
        "fenced_block": parsing.fenced_block,
        "escape_control_characters": parsing.escape_control_characters,
    },
    assets=(
        Asset(
            "MillerQA curated benchmarks",
            f"github.com/{constants.GITHUB_REPO}",
            constants.GITHUB_COMMIT,
            "per source (benchmarks/LICENSES.csv)",
            published_counts=constants.PUBLISHED_COUNTS[constants.CURATED],
        ),
    ),
    overlap_items=loader.overlap_items,
    shared_ids=loader.shared_ids,
)
