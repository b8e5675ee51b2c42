"""MedFact-Bench (Med-V1 paper): claim verification over five components; see lm_eval_tasks/medfact_bench/README.md."""

from ..benchmarks import Benchmark
from . import demo_data, parsing
from .constants import BENCHMARK as NAME
from .report_spec import REPORT_SPECS

BENCHMARK = Benchmark(
    name=NAME,
    title="MedFact-Bench",
    data_folder=NAME,
    report_specs=REPORT_SPECS,
    smoke_tasks=("medfact_bench_scifact", "medfact_bench_healthver"),
    build_demo_data=demo_data.build_demo_data,
    reply_parsers={
        "parse_score": parsing.parse_score,
        "is_strict_format": parsing.is_strict_format,
        "score_reply": parsing.score_reply,
    },
)
