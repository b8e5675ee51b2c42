"""MedExQA's fixed facts: where the data lives, its specialties and columns, the published counts and numbers.

See lm_eval_tasks/medexqa/README.md (Data; Reproducing the published numbers).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..data import DataError

NAME = "medexqa"
DATA_FOLDER = NAME  # DIR/medexqa
HUB_REPO = "bluesky333/MedExQA"
# The dataset repository's commit cited together with the authors' code commit 9a5b34af by two
# independent public projects; our local copy's counts reproduce the paper's denominators. The hub
# itself is unreachable from where this was written, so the pin could not be fetched here.
HUB_REVISION = "3a9f80d6de2c354956d7e86d323214b92d547d6e"
COLUMNS = ("question", "A", "B", "C", "D", "exp0", "exp1", "answer")
LETTERS = ("A", "B", "C", "D")
SPLITS = ("test", "dev")
DEFAULT_SHUFFLE_SEED = 1618


@dataclass(frozen=True)
class Specialty:
    code: str  # as in the paper's tables: BE, CLS, CP, OT, SLP
    stem: str  # the data file's stem (also the authors' subject name)

    @property
    def words(self) -> str:
        """The subject as the authors' log-likelihood header spells it (underscores to spaces)."""
        return self.stem.replace("_", " ")

    def path(self, split: str) -> str:
        return f"{split}/{self.stem}_{split}.tsv"


SPECIALTIES = {
    s.code: s
    for s in (
        Specialty("BE", "biomedical_engineer"),
        Specialty("CLS", "clinical_laboratory_scientist"),
        Specialty("CP", "clinical_psychologist"),
        Specialty("OT", "occupational_therapist"),
        Specialty("SLP", "speech_pathologist"),
    )
}
# sha256 (first 16 hex digits) of the question on line 1 of each published file, (split, specialty code) -> digest:
# a row of one specialty's file found in another's (a file copied over another) is an error, not a row-count warning.
FIRST_QUESTIONS = {
    ("test", "BE"): "d04a61f011887f29",
    ("test", "CLS"): "5e66653d098a9b6e",
    ("test", "CP"): "4b853f57496a6fcf",
    ("test", "OT"): "9963b23e9ef9497c",
    ("test", "SLP"): "d4514806ce37e590",
    ("dev", "BE"): "1f69b46669cc8418",
    ("dev", "CLS"): "8d26914124fce481",
    ("dev", "CP"): "6fb95b8ca133eab2",
    ("dev", "OT"): "21851e4a3267a78e",
    ("dev", "SLP"): "eecf364596dd1d92",
}

PUBLISHED_COUNTS = {
    "test": {"BE": 143, "CLS": 372, "CP": 106, "OT": 189, "SLP": 130},
    "dev": {code: 5 for code in SPECIALTIES},
}


def specialty(code_or_stem: str) -> Specialty:
    """A specialty from its code (any case) or its file stem."""
    key = str(code_or_stem).strip()
    for spec in SPECIALTIES.values():
        if key.upper() == spec.code or key.lower() == spec.stem:
            return spec
    raise DataError(
        f"unknown MedExQA specialty '{code_or_stem}' (known: "
        + ", ".join(f"{s.code} = {s.stem}" for s in SPECIALTIES.values())
        + ")"
    )


# The paper's leaderboard (authors' README at 9a5b34af), accuracy in %: log-likelihood numbers, and
# in brackets the change with chat generation. GPT models have generation numbers only.
_LEADERBOARD = """
Medinote-7B     33.6 -4.9  34.9 -8.5  23.1 6.2   38.1 -8.5  44.6 -11.6 34.9 -5.5
Meditron-7B     37.8 -7.7  46.2 -16.0 20.8 2.3   42.9 -10.6 43.3 -6.7  38.2 -7.8
Llama2-7B       42.0 -9.1  47.2 -9.4  22.3 1.5   40.2 -12.7 47.6 -17.5 39.9 -9.4
Asclepius-7B    44.8 -11.2 47.2 -17.0 27.7 -1.5  42.9 -15.3 45.2 -13.4 41.5 -11.7
Medinote-13B    46.2 -18.9 52.8 -30.2 28.5 -4.6  49.2 -28.1 52.4 -20.2 45.8 -20.4
AlpaCare-7B     53.2 6.3   53.8 1.9   26.9 6.2   59.8 -3.7  54.6 -0.5  49.6 2.0
Asclepius-13B   57.3 -21.0 56.6 -33.0 25.4 -3.8  59.8 -34.4 56.5 -22.9 51.1 -23.0
Phi-2           61.5 -35.7 68.9 -38.7 26.2 2.3   64.0 -43.4 50.0 -25.0 54.1 -28.1
Llama2-13B      63.6 -26.6 65.1 -42.8 27.7 16.2  60.9 -28.8 59.4 -17.5 55.3 -19.9
MedPhi-2        65.7 -5.6  70.8 0.0   23.1 0.0   65.1 -0.5  55.1 5.1   56.0 -0.2
AlpaCare-13B    67.1 -4.9  69.8 -10.4 26.9 -1.5  65.1 -4.8  61.6 -4.3  58.1 -5.2
Mistral         75.5 -11.2 73.6 -10.4 32.3 -6.2  75.7 -6.3  71.2 0.0   65.7 -6.8
Meditron-70B    78.3 -36.4 84.9 -43.4 30.8 -5.4  69.8 -37.0 68.6 -24.2 66.5 -29.3
Yi              75.5 -20.3 83.0 -28.3 30.8 0.8   74.1 -20.6 73.4 -17.2 67.4 -17.1
SOLAR           74.8 0.0   81.1 -2.8  33.1 -7.7  73.0 -1.1  76.1 -3.2  67.6 -3.0
InternLM2       77.6 -25.2 82.1 -38.7 29.2 -5.4  74.6 -36.0 75.0 -33.6 67.7 -27.8
ClinicalCamel   78.3 -6.3  84.0 -14.1 28.5 -5.4  79.9 -6.3  75.8 -6.2  69.3 -7.7
Llama2-70B      78.3 -10.5 84.0 -47.2 31.5 -10.8 80.4 -44.4 72.9 -29.8 69.4 -28.5
Med42           83.2 -14.0 84.9 -10.4 31.5 -4.6  79.4 -13.8 80.9 -12.6 72.0 -11.1
"""
_LEADERBOARD_ORDER = ("BE", "CP", "SLP", "OT", "CLS", "macro")
_GPT_GENERATION = {
    "GPT3.5_1106": (72.0, 82.1, 29.2, 70.4, 71.5, 65.0),
    "GPT4_1106": (86.7, 86.8, 31.5, 88.4, 91.7, 77.0),
    "GPT4_0125": (90.2, 91.5, 30.8, 90.0, 91.7, 78.8),
}
LOGIT, GENERATION = "logit", "generation"  # the two protocols


def _leaderboard() -> dict[str, dict[str, dict[str, float]]]:
    logit, generation = {}, {}
    for line in _LEADERBOARD.strip().splitlines():
        model, *numbers = line.split()
        pairs = list(zip(numbers[::2], numbers[1::2]))
        logit[model] = {key: round(float(a) / 100, 4) for key, (a, _) in zip(_LEADERBOARD_ORDER, pairs)}
        generation[model] = {
            key: round((float(a) + float(d)) / 100, 4) for key, (a, d) in zip(_LEADERBOARD_ORDER, pairs)
        }
    for model, numbers in _GPT_GENERATION.items():
        generation[model] = {key: round(value / 100, 4) for key, value in zip(_LEADERBOARD_ORDER, numbers)}
    return {LOGIT: logit, GENERATION: generation}


# protocol -> model -> specialty code or "macro" -> accuracy (0-1)
PUBLISHED_NUMBERS = _leaderboard()
