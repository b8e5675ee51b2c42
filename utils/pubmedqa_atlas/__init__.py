"""PubMedQA on the authors' official 500-item test split; see lm_eval_tasks/pubmedqa_atlas/README.md.

Modules: constants (ids, labels, published counts and numbers), prompts, parsing (answers and the one
scoring function per protocol), loader (``load(data_dir=None)`` and its checks, the n100), tasks (lm-eval
hooks), report_spec (``REPORT_SPECS``), probe (the linear probe), commands (``pubmedqa-probe``).
"""

from ..benchmarks import Asset, Benchmark
from . import commands, constants, loader, parsing, prompts
from .constants import DATA_FOLDER, NAME
from .report_spec import REPORT_SPECS

BENCHMARK = Benchmark(
    name=NAME,
    title="PubMedQA",
    data_folder=DATA_FOLDER,
    report_specs=REPORT_SPECS,
    register_commands=commands.register,
    smoke_tasks=("pubmedqa_atlas", "pubmedqa_atlas_gen"),
    reply_parsers={"parse_answer": parsing.parse_answer, "first_words": prompts.first_words},
    overlap_items=loader.overlap_items,
    shared_ids=loader.shared_ids,
    assets=(
        Asset(
            "PubMedQA PQA-L",
            f"hf://datasets/{constants.HUB.repo_id} ({constants.HUB.config})",
            constants.HUB.revision,
            "MIT",
        ),
        Asset(
            "PubMedQA official test ids",
            "github.com/pubmedqa/pubmedqa",
            constants.TEST_IDS_URL,
            "MIT",
            sha256=constants.TEST_IDS_SHA256,
            published_counts=constants.PUBLISHED_COUNTS,
        ),
    ),
)
