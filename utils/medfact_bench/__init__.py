"""MedFact-Bench (Med-V1 paper): claim verification over five components; see lm_eval_tasks/medfact_bench/README.md."""

from ..benchmarks import Asset, Benchmark
from . import constants, demo_data, parsing
from .constants import DATA_FOLDER, NAME
from .demo_data import demo_label_note
from .report_spec import REPORT_SPECS

__all__ = ["BENCHMARK", "demo_label_note"]  # the note the report shows next to a number scored on demo labels

BENCHMARK = Benchmark(
    name=NAME,
    title="MedFact-Bench",
    data_folder=DATA_FOLDER,
    report_specs=REPORT_SPECS,
    smoke_tasks=("medfact_bench_scifact", "medfact_bench_healthver"),
    build_demo_data=demo_data.build_demo_data,
    reply_parsers={
        "parse_score": parsing.parse_score,
        "is_strict_format": parsing.is_strict_format,
        "score_reply": parsing.score_reply,
    },
    assets=(
        Asset(
            "MedFact-Bench",
            f"hf://datasets/{constants.HUB.repo_id}",
            constants.HUB.revision,
            "MIT (dataset card)",
            published_counts=constants.PUBLISHED_COUNTS,
        ),
    ),
)
