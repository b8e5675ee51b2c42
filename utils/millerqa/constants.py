"""MillerQA's fixed facts: the pinned source, the suite's benchmarks and dimensions, item counts, task families.

Source: ``KatherLab/MillerQA`` at commit ``92af60f8eac8b532fe882ae0dcbb701797660be8`` (the project was
called Prj-BENCH before that commit); see lm_eval_tasks/millerqa/README.md.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

NAME = "millerqa"
DATA_FOLDER = NAME  # DIR/millerqa
GITHUB_REPO = "KatherLab/MillerQA"
GITHUB_COMMIT = "92af60f8eac8b532fe882ae0dcbb701797660be8"
GITHUB_RAW = f"https://raw.githubusercontent.com/{GITHUB_REPO}/{GITHUB_COMMIT}/benchmarks"
MANIFEST = "_manifest.csv"
CURATED, PRE_QC = "curated", "pre_qc"
# _manifest.csv column holding each release's item count.
MANIFEST_COUNT_COLUMN = {CURATED: "n_curated", PRE_QC: "n_source"}
SHUFFLE_SEED = 42  # the authors' SHUFFLE_SEED; the published runs used it
LETTERS = string.ascii_uppercase
MEDBULLETS = "medbullets"  # withheld upstream; rebuilt by the user (medbullets.rebuild_medbullets)


# Competency dimension -> (title, benchmark file stems), as in the upstream README.
DIMENSIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "clinical_judgment": ("Clinical Judgment", ("cupcase", "hle", "mhqa", "medcalc", "metamedqa", "triage")),
    "robustness_fairness": ("Robustness and Fairness", ("fairmedqa", "global_mmlu", "truthfulqa")),
    "ethical_professional": ("Ethical and Professional Reasoning", ("mmlupro_phil", "medethicsqa", "tridentbench")),
    "medical_knowledge": ("Medical Knowledge", ("mmlupro_med", MEDBULLETS, "pubmedqa")),
    "legal_regulatory": (
        "Legal and Regulatory",
        tuple(f"{code}_legalbench" for code in ("ipi", "lhb", "lhh", "oad", "odr", "ods", "ofp", "otp", "tos")),
    ),
}
BENCHMARKS = tuple(stem for _, stems in DIMENSIONS.values() for stem in stems)
DIMENSION_OF = {stem: dim for dim, (_, stems) in DIMENSIONS.items() for stem in stems}
# Upstream source folder of each benchmark file: benchmarks/<release>/<folder>/<stem>.json.
SOURCE_FOLDER = {
    stem: "legalbench" if stem.endswith("_legalbench") else "mmlu_pro" if stem.startswith("mmlupro_") else stem
    for stem in BENCHMARKS
}

# Items per benchmark and release, pinned from _manifest.csv at the pinned commit (n_curated / n_source).
PUBLISHED_COUNTS = {
    CURATED: {
        "cupcase": 700,
        "hle": 128,
        "mhqa": 616,
        "medcalc": 340,
        "metamedqa": 658,
        "triage": 84,
        "fairmedqa": 960,
        "global_mmlu": 705,
        "truthfulqa": 790,
        "mmlupro_phil": 200,
        "medethicsqa": 928,
        "tridentbench": 842,
        "mmlupro_med": 252,
        MEDBULLETS: 188,
        "pubmedqa": 998,
        "ipi_legalbench": 133,
        "lhb_legalbench": 65,
        "lhh_legalbench": 225,
        "oad_legalbench": 95,
        "odr_legalbench": 94,
        "ods_legalbench": 97,
        "ofp_legalbench": 100,
        "otp_legalbench": 98,
        "tos_legalbench": 298,
    },
    PRE_QC: {
        "cupcase": 700,
        "hle": 146,
        "mhqa": 624,
        "medcalc": 340,
        "metamedqa": 676,
        "triage": 86,
        "fairmedqa": 960,
        "global_mmlu": 750,
        "truthfulqa": 790,
        "mmlupro_phil": 237,
        "medethicsqa": 1000,
        "tridentbench": 854,
        "mmlupro_med": 326,
        MEDBULLETS: 308,
        "pubmedqa": 1000,
        "ipi_legalbench": 133,
        "lhb_legalbench": 66,
        "lhh_legalbench": 226,
        "oad_legalbench": 100,
        "odr_legalbench": 100,
        "ods_legalbench": 100,
        "ofp_legalbench": 100,
        "otp_legalbench": 100,
        "tos_legalbench": 298,
    },
}
# The paper's per-model numbers are not part of the shipped material, so none are built in (README,
# "Reproducing published numbers").
PUBLISHED_NUMBERS: dict[str, dict[str, float]] = {}

LOCAL_LAYOUT = (
    f"DIR/{DATA_FOLDER}/ laid out like the upstream benchmarks/ folder ({MANIFEST}, curated/<source>/<name>.json, "
    f"pre_qc/<source>/<name>.json), or DIR itself a clone of {GITHUB_REPO} at {GITHUB_COMMIT}"
)


@dataclass(frozen=True)
class Family:
    """One set of tasks over the suite: a release and a protocol variant."""

    prefix: str
    release: str
    variant: str  # "generate" (the paper's), "choice_only" (the authors' baseline) or "loglikelihood"
    title: str
    # Every item asked once per cyclic rotation of its shuffled options (utils/rotation.py), not the paper's protocol.
    rotated: bool = False


FAMILIES = (
    Family("millerqa", CURATED, "generate", "MillerQA (curated)"),
    Family("millerqa_preqc", PRE_QC, "generate", "MillerQA (pre-QC release)"),
    Family("millerqa_choiceonly", CURATED, "choice_only", "MillerQA choice-only baseline (curated)"),
    Family("millerqa_ll", CURATED, "loglikelihood", "MillerQA log-likelihood variant (curated)"),
    Family("millerqa_rotated", CURATED, "generate", "MillerQA (curated), rotated options", rotated=True),
    Family(
        "millerqa_ll_rotated",
        CURATED,
        "loglikelihood",
        "MillerQA log-likelihood variant, rotated options",
        rotated=True,
    ),
)
# Every leaf task: name -> (family, benchmark stem).
TASKS = {f"{family.prefix}_{stem}": (family, stem) for family in FAMILIES for stem in BENCHMARKS}
