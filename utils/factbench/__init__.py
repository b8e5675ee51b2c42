"""FActBench: fact-checking model-written medical text; see lm_eval_tasks/factbench/README.md."""

from ..benchmarks import Benchmark
from . import commands, demo_data, protocol

BENCHMARK = Benchmark(
    name="factbench",
    title="FActBench",
    data_folder=protocol.BENCHMARK,
    register_commands=commands.register,
    smoke_tasks=("factbench_summ", "factbench_rag"),
    build_demo_data=demo_data.build_demo_data,
)
