"""MedExQA: multiple choice with explanations in five specialties; see lm_eval_tasks/medexqa/README.md."""

from ..benchmarks import Benchmark
from . import commands, protocol

BENCHMARK = Benchmark(
    name="medexqa",
    title="MedExQA",
    data_folder=protocol.BENCHMARK,
    report_specs=protocol.REPORT_SPECS,
    register_commands=commands.register,
    smoke_tasks=("medexqa_logit_be", "medexqa_be"),
)
