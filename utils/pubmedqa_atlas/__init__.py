"""PubMedQA on the authors' official 500-item test split; see lm_eval_tasks/pubmedqa_atlas/README.md."""

from ..benchmarks import Benchmark
from . import commands, protocol

BENCHMARK = Benchmark(
    name="pubmedqa_atlas",
    title="PubMedQA",
    data_folder=protocol.BENCHMARK,
    report_specs=protocol.REPORT_SPECS,
    register_commands=commands.register,
    smoke_tasks=("pubmedqa_atlas", "pubmedqa_atlas_gen"),
)
