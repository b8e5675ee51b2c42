"""FActBench: fact-checking model-written medical text; see lm_eval_tasks/factbench/README.md.

Modules: :mod:`.constants`, :mod:`.prompts`, :mod:`.parsing`, :mod:`.loader`, :mod:`.tasks` (lm-eval
hooks), :mod:`.report_spec`; the fact-checker: :mod:`.records`, :mod:`.factcheck_prompts`,
:mod:`.pipeline`, :mod:`.nli`, :mod:`.passage_store`, :mod:`.scores`, :mod:`.tables`; :mod:`.commands`,
:mod:`.demo_data`.
"""

from ..benchmarks import Asset, Benchmark, Setting, SettingKind
from . import commands, constants, demo_data, factcheck_prompts, parsing
from .report_spec import REPORT_SPECS

BENCHMARK = Benchmark(
    name=constants.NAME,
    title="FActBench",
    data_folder=constants.DATA_FOLDER,
    report_specs=REPORT_SPECS,
    register_commands=commands.register,
    smoke_tasks=("factbench_summ", "factbench_rag"),
    settings=(
        Setting(
            "sample_size",
            SettingKind.COUNT,
            constants.SAMPLE_SIZE,
            "the fixed article sample of summ and laysumm (0: all; the paper's is 1,000)",
        ),
        Setting("bioasq_path", SettingKind.TEXT, None, "the BioASQ file or folder rag and gen read"),
    ),
    build_demo_data=demo_data.build_demo_data,
    reply_parsers={
        "parse_facts": factcheck_prompts.parse_facts,
        "parse_verdict": factcheck_prompts.parse_verdict,
        "score_generation": parsing.score_generation,
    },
    assets=tuple(
        Asset(
            f"FActBench {constants.TASK_TITLES[component]} source",
            f"hf://datasets/{source.hub.repo_id}",
            source.hub.revision,
            "as declared by the source dataset",
            published_counts={component: constants.PUBLISHED_COUNTS[component]},
        )
        for component, source in constants.SOURCES.items()
    )
    + (
        Asset(
            "BioASQ Task B training set (RAG and open generation)",
            "participants-area.bioasq.org (registration-gated; no hub copy)",
            "supplied by the user (--metadata factbench_bioasq_path)",
            "BioASQ terms of use",
            published_counts={
                component: constants.PUBLISHED_COUNTS[component] for component in (constants.RAG, constants.GEN)
            },
        ),
    ),
)
