"""MedExQA: multiple choice with explanations in five specialties; see lm_eval_tasks/medexqa/README.md.

Modules: constants (data location, specialties, published counts and numbers), prompts, parsing
(the authors' letter extraction and the scoring of both protocols), loader, tasks (lm-eval hooks),
report_spec, explanations and explanation_metrics (explanation scores after a run), commands.
"""

from ..benchmarks import Benchmark
from . import commands, constants
from .report_spec import REPORT_SPECS

BENCHMARK = Benchmark(
    name="medexqa",
    title="MedExQA",
    data_folder=constants.BENCHMARK,
    report_specs=REPORT_SPECS,
    register_commands=commands.register,
    smoke_tasks=("medexqa_logit_be", "medexqa_be"),
)
