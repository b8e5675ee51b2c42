"""MedFact-Bench's fixed facts: the pinned hub copy, columns, labels, published counts and the paper's numbers.

See lm_eval_tasks/medfact_bench/README.md for where each comes from.
"""

from __future__ import annotations

from .. import data as data_layer

NAME = "medfact_bench"
DATA_FOLDER = NAME  # DIR/medfact_bench
HUB = data_layer.HubDataset("ncbi/MedFact-Bench", "249028caf7ad5a3e63331269a606f4b2696693ed", split="train")
COLUMNS = ("dataset", "claim", "source", "label", "system_prompt", "user_prompt")
LOCAL_LAYOUT = (
    f"DIR/{DATA_FOLDER}/ holding one .parquet, .jsonl, .json or .csv file with the hub's columns ({', '.join(COLUMNS)})"
)

# Component -> rows in the published set, in the paper's order.
PUBLISHED_COUNTS = {"scifact": 340, "healthver": 903, "medaesqa": 9106, "pubmedqa-fact": 500, "bioasq-fact": 3425}
TOTAL_ROWS = sum(PUBLISHED_COUNTS.values())  # 14,274
LABELS = ("SUPPORT", "NEI", "CONTRADICT")
# Where a row's label comes from: a column of the files this package writes (the demo file, synthetic
# rows), kept in every logged doc. The hub's file has no such column: its labels are the benchmark's gold.
LABEL_SOURCE = "label_source"
LABEL_SOURCES = {
    "gold": "the dataset's own label",
    "medv1_l3b_prediction": "Med-V1-L3B's own prediction, not a gold label (the demo SciFact rows)",
    "synthetic": "assigned in turn for plumbing checks and timing; never a score",
}
LABEL_TOTALS = {"SUPPORT": 10118, "NEI": 2988, "CONTRADICT": 1168}
# sha256 of the published system prompt (UTF-8); it has tabs, en dashes, a U+2010 hyphen and a
# trailing space, so it is always taken from the data, never retyped.
SYSTEM_PROMPT_SHA256 = "f0b47375f1680cd40c830a72c94b2d30b4865500b93b4bbb93d7bd3d7e8022ea"

# lm-eval task name -> component (task names cannot carry the hyphen of the data's component).
TASK_COMPONENTS = {f"{NAME}_{c.replace('-', '_')}": c for c in PUBLISHED_COUNTS}

# The paper's generation: greedy, no stop string, at most this many new tokens.
MAX_NEW_TOKENS = 1024

# Paper Figure 3, zero-shot accuracy per component and the macro mean.
PUBLISHED_NUMBERS = {
    "Llama-3.2-3B-Instruct": {
        "scifact": 0.600,
        "healthver": 0.435,
        "medaesqa": 0.437,
        "pubmedqa-fact": 0.550,
        "bioasq-fact": 0.531,
        "macro": 0.511,
    },
    "Qwen2.5-3B-Instruct": {
        "scifact": 0.638,
        "healthver": 0.447,
        "medaesqa": 0.577,
        "pubmedqa-fact": 0.470,
        "bioasq-fact": 0.444,
        "macro": 0.515,
    },
    "Llama-3.3-70B-Instruct": {
        "scifact": 0.812,
        "healthver": 0.597,
        "medaesqa": 0.687,
        "pubmedqa-fact": 0.774,
        "bioasq-fact": 0.771,
        "macro": 0.728,
    },
    "o3-mini": {
        "scifact": 0.832,
        "healthver": 0.591,
        "medaesqa": 0.733,
        "pubmedqa-fact": 0.778,
        "bioasq-fact": 0.747,
        "macro": 0.736,
    },
    "GPT-4o-mini": {
        "scifact": 0.847,
        "healthver": 0.580,
        "medaesqa": 0.704,
        "pubmedqa-fact": 0.734,
        "bioasq-fact": 0.720,
        "macro": 0.717,
    },
    "GPT-4o": {
        "scifact": 0.832,
        "healthver": 0.576,
        "medaesqa": 0.717,
        "pubmedqa-fact": 0.776,
        "bioasq-fact": 0.777,
        "macro": 0.736,
    },
    "GPT-5": {
        "scifact": 0.818,
        "healthver": 0.615,
        "medaesqa": 0.703,
        "pubmedqa-fact": 0.788,
        "bioasq-fact": 0.753,
        "macro": 0.735,
    },
    "Med-V1-L3B": {
        "scifact": 0.844,
        "healthver": 0.575,
        "medaesqa": 0.748,
        "pubmedqa-fact": 0.746,
        "bioasq-fact": 0.725,
        "macro": 0.728,
    },
    "Med-V1-Q3B": {
        "scifact": 0.856,
        "healthver": 0.588,
        "medaesqa": 0.733,
        "pubmedqa-fact": 0.764,
        "bioasq-fact": 0.717,
        "macro": 0.732,
    },
}
