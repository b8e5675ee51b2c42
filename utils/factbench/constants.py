"""FActBench's fixed facts: task names, token budgets, sources (hub ids, pinned revisions), published counts and numbers.

See lm_eval_tasks/factbench/README.md for where each comes from.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import data as data_layer

NAME = "factbench"
DATA_FOLDER = NAME  # DIR/factbench
SUMM, LAYSUMM, RAG, GEN = "summ", "laysumm", "rag", "gen"
TASKS = (SUMM, LAYSUMM, RAG, GEN)
TASK_NAMES = {component: f"{NAME}_{component}" for component in TASKS}
TASK_TITLES = {SUMM: "Summarization", LAYSUMM: "Lay Summarization", RAG: "RAG (QA)", GEN: "Open-ended Gen"}
# New-token budget. 256 for the summaries is the paper's (Table 1). It gives none for the QA tasks
# (its RAG answers averaged 116.5 words; Gen used the provider default): 512 leaves such answers uncut.
MAX_GEN_TOKS = {SUMM: 256, LAYSUMM: 256, RAG: 512, GEN: 512}

SAMPLE_SIZE = 1000  # articles per summarisation task, as in the paper
SAMPLE_SEED = "factbench-1234"
PAPER_BIOASQ_SUMMARY_QUESTIONS = 1130
# Published items per task (paper section 3.2); the report and the fact-checker state coverage against them.
PUBLISHED_COUNTS = {
    SUMM: SAMPLE_SIZE,
    LAYSUMM: SAMPLE_SIZE,
    RAG: PAPER_BIOASQ_SUMMARY_QUESTIONS,
    GEN: PAPER_BIOASQ_SUMMARY_QUESTIONS,
}
PAPER_MODELS = 6  # generators in the paper's Table 2

TECHNIQUES = ("cot", "nli", "unvot")
TECHNIQUE_TITLES = {"cot": "CoT", "nli": "NLI", "unvot": "UnVot"}
SETTINGS = ("intrinsic", "extrinsic")  # "extrinsic" = intrinsic followed by the extrinsic re-check
SETTING_TITLES = {"intrinsic": "Grounding document", "extrinsic": "Grounding document + passage store"}


def _table2_rows(rows: dict[str, tuple[float, ...]], setting: str) -> dict[str, dict[str, float]]:
    """Twelve numbers per model (task-major, CoT/NLI/UnVot) as ``{task}_{technique}_{setting}`` keys."""
    keys = [f"{task}_{technique}_{setting}" for task in TASKS for technique in TECHNIQUES]
    return {model: dict(zip(keys, values, strict=True)) for model, values in rows.items()}


_TABLE2_GROUNDING = {
    "GPT-4o mini": (95.8, 77.4, 86.6, 95.4, 94.8, 95.1, 25.4, 77.7, 51.5, 44.5, 50.4, 47.5),
    "Llama3.1 8b": (95.3, 87.8, 85.28, 95.4, 93.5, 94.4, 35.6, 76.7, 56.1, 74.4, 35.6, 55.0),
    "Llama3.1 70b": (96.52, 84.59, 82.84, 96.1, 94.1, 95.1, 31.3, 76.3, 53.8, 37.3, 46.5, 41.8),
    "Mistral 7b": (95.8, 82.55, 80.38, 96.3, 97.32, 94.75, 82.9, 73.1, 78.0, 80.9, 32.5, 56.6),
    "Mixtral 8x7b": (95.2, 87.86, 95.5, 96.5, 97.0, 95.0, 88.2, 75.0, 81.6, 85.4, 36.9, 61.1),
    "Gemma 9b": (84.55, 71.95, 68.77, 82.94, 80.65, 75.48, 35.8, 44.0, 43.7, 54.1, 30.5, 28.0),
}
_TABLE2_WIKIPEDIA = {
    "GPT-4o mini": (96.8, 82.6, 80.4, 96.2, 96.6, 93.4, 97.3, 78.2, 76.4, 95.8, 51.4, 50.3),
    "Llama3.1 8b": (96.4, 88.85, 86.25, 96.5, 94.2, 91.5, 98.2, 77.1, 76.1, 79.3, 36.7, 32.1),
    "Llama3.1 70b": (97.27, 85.71, 83.9, 97.0, 94.8, 92.0, 97.2, 76.8, 75.1, 90.9, 47.7, 45.9),
    "Mistral 7b": (96.51, 83.59, 81.34, 97.83, 96.7, 94.93, 98.6, 73.5, 72.7, 92.1, 33.2, 31.9),
    "Mixtral 8x7b": (96.9, 88.68, 86.24, 97.5, 97.2, 95.1, 97.7, 75.3, 74.0, 93.0, 37.8, 36.5),
    "Gemma 9b": (93.03, 74.46, 70.99, 91.11, 81.68, 76.43, 97.4, 45.0, 44.6, 80.1, 31.5, 28.8),
}
# The paper's numbers, in percent, as printed. Table 2's grounding-only block is transcribed but is
# no target: in 16 of its 24 cells UnVot exceeds min(CoT, NLI), which a per-fact AND of the same
# decisions cannot give (README, "Table 2"). Table 3's CoT/NLI/UnVot are after the extrinsic step.
PUBLISHED_NUMBERS = {
    "table2_grounding": _table2_rows(_TABLE2_GROUNDING, "intrinsic"),
    "table2_wikipedia": _table2_rows(_TABLE2_WIKIPEDIA, "extrinsic"),
    "table2_factscore_baseline": {
        model: dict(zip(TASKS, values, strict=True))
        for model, values in {
            "GPT-4o mini": (51.34, 52.6, 19.4, 41.4),
            "Llama3.1 8b": (43.97, 49.4, 25.3, 71.3),
            "Llama3.1 70b": (50.08, 48.8, 24.0, 34.8),
            "Mistral 7b": (46.11, 50.02, 61.1, 78.4),
            "Mixtral 8x7b": (49.71, 51.00, 64.5, 81.6),
            "Gemma 9b": (53.54, 54.56, 44.0, 52.0),
        }.items()
    },
    # 20 human-annotated generations per task; "human" is the domain experts' mean score (1-100).
    "table3": {
        task: dict(zip(("baseline", "cot_extrinsic", "nli_extrinsic", "unvot_extrinsic", "human"), values, strict=True))
        for task, values in {
            SUMM: (54.81, 96.87, 85.41, 83.45, 84.0),
            LAYSUMM: (52.5, 97.6, 91.09, 88.94, 88.7),
            RAG: (38.43, 100.0, 83.04, 83.04, 87.3),
            GEN: (71.26, 88.17, 31.61, 31.31, 62.7),
        }.items()
    },
}


@dataclass(frozen=True)
class SummarisationSource:
    """Where one summarisation task's articles come from, on the hub and in a local data dir."""

    task: str
    local_stem: str  # DIR/factbench/<stem>.{parquet,jsonl,json,csv}
    article_column: str
    reference_column: str
    hub: data_layer.HubDataset
    hub_file: str | None = None  # one file of the pinned repo, else load_dataset(data_dir=...)

    @property
    def layout(self) -> str:
        return (
            f"DIR/{DATA_FOLDER}/{self.local_stem}.jsonl (or .parquet/.json/.csv) with the columns "
            f"{self.article_column}, {self.reference_column}"
        )


SOURCES = {
    # Cohan et al. 2018 via ccdv/pubmed-summarization ("document" config: whole article -> abstract).
    # The repo is script-based upstream, so the pin is a commit of its auto-converted parquet branch.
    SUMM: SummarisationSource(
        SUMM,
        "pubmed_summ",
        "article",
        "abstract",
        data_layer.HubDataset(
            "ccdv/pubmed-summarization", "fc8f7ea8c1f34f8e8cb09f29c99b8c996524c216", split="test", data_dir="document"
        ),
    ),
    # Goldsack et al. 2022 PLOS. The canonical hub copy (tomasg25/scientific_lay_summarisation)
    # needs a loading script that datasets>=4 cannot run; this is its parquet re-release with the
    # same splits and columns (text Unicode-normalised).
    LAYSUMM: SummarisationSource(
        LAYSUMM,
        "plos_laysumm",
        "article",
        "summary",
        data_layer.HubDataset(
            "pszemraj/scientific_lay_summarisation-plos-norm", "fc5486ce7b7d8841cd988094b0004d4a3abd1e83", split="test"
        ),
        hub_file="test.parquet",
    ),
}
BIOASQ_DIR = "bioasq"
BIOASQ_LAYOUT = (
    f"DIR/{DATA_FOLDER}/{BIOASQ_DIR}/ holding one or more files in the official BioASQ JSON format "
    f'({{"questions": [{{"id", "type", "body", "snippets": [{{"text", ...}}], '
    f'"ideal_answer", ...}}]}}), or --metadata factbench_bioasq_path=FILE_OR_DIR'
)
BIOASQ_HOWTO = (
    "BioASQ is registration-gated and has no hub copy: register at https://participants-area.bioasq.org, "
    "download the Task B training set (JSON), then pass it with --metadata factbench_bioasq_path=/path/to/trainingXb.json "
    f"(a file or a folder of BioASQ JSON files), or put it in {BIOASQ_LAYOUT.split(' holding')[0]}."
)


def task_component(task_name: str) -> str | None:
    """``factbench_summ`` -> ``summ``; None for other tasks."""
    return next((c for c, name in TASK_NAMES.items() if name == task_name), None)
