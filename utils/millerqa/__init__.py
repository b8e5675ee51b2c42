"""MillerQA: 24 curated multiple-choice benchmarks in five competency dimensions; see lm_eval_tasks/millerqa/README.md."""

from ..benchmarks import Benchmark
from . import commands, protocol

BENCHMARK = Benchmark(
    name="millerqa",
    title="MillerQA",
    data_folder=protocol.BENCHMARK,
    report_specs=protocol.REPORT_SPECS,
    register_commands=commands.register,
    smoke_tasks=("millerqa_triage", "millerqa_choiceonly_triage", "millerqa_ll_triage"),
)
