"""PubMedQA's fixed facts: where the data lives, the labels, the published counts and numbers, the item sets.

Every value is documented in lm_eval_tasks/pubmedqa_atlas/README.md.
"""

from __future__ import annotations

from ..data import HubDataset

NAME = "pubmedqa_atlas"  # the task folder and the code package
DATA_FOLDER = "pubmedqa"  # DIR/pubmedqa
HUB = HubDataset("qiaojin/PubMedQA", "9001f2853fb87cab8d220904e0de81ac6973b318", config="pqa_labeled", split="train")
UPSTREAM_COMMIT = "1cbae8e92f72f20c8d3747cbb3bf5bc53554d997"
TEST_IDS_URL = f"https://raw.githubusercontent.com/pubmedqa/pubmedqa/{UPSTREAM_COMMIT}/data/test_ground_truth.json"
TEST_IDS_SHA256 = "939fe566f09017d13b1ca64d2ddfee0bc2374b366048152997669cccedc44d51"
ITEMS_FILE = "ori_pqal.json"
TEST_IDS_FILE = "test_ground_truth.json"
LOCAL_LAYOUT = (
    f"DIR/{DATA_FOLDER}/ holding {ITEMS_FILE} and {TEST_IDS_FILE} from github.com/pubmedqa/pubmedqa "
    f"(folder data/, commit {UPSTREAM_COMMIT})"
)

LABELS = ("yes", "no", "maybe")
# Answer counts of the official test split and (the authors split each answer in half) of the train pool.
PUBLISHED_COUNTS = {"yes": 276, "no": 169, "maybe": 55}
CONTEXT_WORDS = 300
N100_SIZE = 100
N100_SEED = 20261006
# lm-eval dataset subset -> version name of the item set (the names the benchmark card uses).
SUBSETS = {"full": "atlas-full-v1", "n100": "atlas-n100-v1"}
SUBSET_SIZES = {"full": sum(PUBLISHED_COUNTS.values()), "n100": N100_SIZE}

# Jin et al. 2019 and the authors' leaderboard (reasoning-required setting, official test set).
PUBLISHED_NUMBERS = {
    "always yes (majority baseline)": {"accuracy": 0.552, "macro_f1": 0.2372},
    "single human annotator (Jin et al. 2019)": {"accuracy": 0.7800, "macro_f1": 0.7219},
    "BioBERT multi-phase fine-tuning (Jin et al. 2019)": {"accuracy": 0.6808, "macro_f1": 0.5272},
}
