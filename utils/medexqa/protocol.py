"""MedExQA (Kim et al., BioNLP 2024, arXiv 2406.06331): data, prompts, answer extraction, task hooks.

Two protocols (shared/SPEC.md section 2), one task per specialty each:

- log-likelihood (the paper's main numbers): ``The following are multiple choice questions (with
  answers) about {specialty words}.`` + blank line + ``Question: ...``, ``A. ...``-``D. ...``,
  ``Answer:``; the letter with the highest probability is the answer;
- generation (the paper's chat numbers): the authors' instruction, blank line, question, option
  lines; greedy; the letter is read from the reply with the authors' extraction cascade
  (:func:`extract_answer`). Explanation scores are computed after the run
  (:mod:`.explanation_metrics`, ``python -m lm_eval_tasks medexqa-explanations``).

Answer shuffling is optional and deterministic: the permutation of an item depends only on the
seed and the item (specialty, split, row), and is recorded in the doc.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import data as data_layer
from ..scoring import INVALID, BenchmarkSpec, Headline, ScoredItem, Stratum
from ..text import strip_think

logger = logging.getLogger(__name__)

BENCHMARK = "medexqa"
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
COUNTS = {
    "test": {"BE": 143, "CLS": 372, "CP": 106, "OT": 189, "SLP": 130},
    "dev": {code: 5 for code in SPECIALTIES},
}
LOCAL_LAYOUT = (
    f"DIR/{BENCHMARK}/{{test,dev}}/<specialty>_{{test,dev}}.tsv, the hub's header-less TSV files "
    f"(columns {', '.join(COLUMNS)}); specialties: " + ", ".join(s.stem for s in SPECIALTIES.values())
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


def _leaderboard() -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
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
    return logit, generation


PAPER_LOGIT_ACCURACY, PAPER_GENERATION_ACCURACY = _leaderboard()


def specialty(code_or_stem: str) -> Specialty:
    """A specialty from its code (any case) or its file stem."""
    key = str(code_or_stem).strip()
    for spec in SPECIALTIES.values():
        if key.upper() == spec.code or key.lower() == spec.stem:
            return spec
    raise data_layer.DataError(
        f"unknown MedExQA specialty '{code_or_stem}' (known: "
        + ", ".join(f"{s.code} = {s.stem}" for s in SPECIALTIES.values())
        + ")"
    )


# ----------------------------------------------------------------------------- data


def _validate(
    rows: list[dict[str, Any]], source: str, spec: Specialty, split: str, require_count: bool
) -> tuple[dict[str, Any], ...]:
    data_layer.require_columns(rows, COLUMNS, source)
    data_layer.require_nonempty_strings(rows, COLUMNS, source)
    data_layer.require_allowed(rows, "answer", LETTERS, source)
    expected = COUNTS[split][spec.code]
    if len(rows) != expected:
        if require_count:
            data_layer.require_counts({spec.code: len(rows)}, {spec.code: expected}, source, "row")
        logger.warning(
            "%s holds %d rows, the published %s split of %s has %d: scores are not comparable with the paper.",
            source,
            len(rows),
            split,
            spec.code,
            expected,
        )
    return tuple(
        {**row, "specialty": spec.code, "split": split, "row": number} for number, row in enumerate(rows, start=1)
    )


@data_layer.cached_on_file
def load_file(path: Path, code: str, split: str) -> tuple[dict[str, Any], ...]:
    """The validated rows of one local TSV (header-less: every line is an item)."""
    rows = data_layer.read_table(path, delimiter="\t", fieldnames=COLUMNS)
    return _validate(rows, str(path), SPECIALTIES[code], split, require_count=False)


def load_rows(code: str, split: str = "test", data_dir: str | None = None) -> tuple[dict[str, Any], ...]:
    """One specialty's split from ``data_dir``, ``$MEDEVAL_DATA_DIR`` or the pinned hub copy."""
    data_layer.refuse_training_split(BENCHMARK, split)
    if split not in SPLITS:
        raise data_layer.DataError(f"MedExQA has the splits {', '.join(SPLITS)}; asked for '{split}'")
    spec = specialty(code)
    folder = data_layer.local_benchmark_dir(BENCHMARK, data_dir)
    if folder is not None:
        path = folder / spec.path(split)
        if not path.is_file():
            raise data_layer.DataError(f"{path}: missing. Expected layout: {LOCAL_LAYOUT}")
        return load_file(path, code=spec.code, split=split)
    path = data_layer.download_hub_file(HUB_REPO, spec.path(split), HUB_REVISION, BENCHMARK, LOCAL_LAYOUT)
    rows = data_layer.read_table(path, delimiter="\t", fieldnames=COLUMNS)
    return _validate(
        rows, f"hf://datasets/{HUB_REPO}@{HUB_REVISION}/{spec.path(split)}", spec, split, require_count=True
    )


# ----------------------------------------------------------------------------- answer shuffling


def permutation(seed: int, code: str, split: str, row: int) -> tuple[str, ...]:
    """The original letters in the order they are shown (``result[i]`` is shown as ``LETTERS[i]``).

    A pure function of the seed and the item: the same in every process, run and Python version.
    """

    def rank(letter: str) -> str:
        return hashlib.sha256(f"{seed}:{code}:{split}:{row}:{letter}".encode("utf-8")).hexdigest()

    return tuple(sorted(LETTERS, key=rank))


def to_doc(row: Mapping[str, Any], shuffle_seed: int | None) -> dict[str, Any]:
    """The task doc: options (shuffled when a seed is given), gold letter, and the permutation used."""
    order = LETTERS if shuffle_seed is None else permutation(shuffle_seed, row["specialty"], row["split"], row["row"])
    return {
        "specialty": row["specialty"],
        "split": row["split"],
        "row": row["row"],
        "question": row["question"],
        **{shown: row[original] for shown, original in zip(LETTERS, order)},
        "exp0": row["exp0"],
        "exp1": row["exp1"],
        "answer": LETTERS[order.index(row["answer"])],
        "original_answer": row["answer"],
        "permutation": "".join(order),
        "shuffle_seed": -1 if shuffle_seed is None else int(shuffle_seed),
    }


def _flag(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off", ""}:
        return False
    raise data_layer.DataError(f"--metadata {name}={value!r}: expected true or false")


# ----------------------------------------------------------------------------- lm-eval hooks (data)


def custom_dataset(
    specialty: str,
    data_dir: str | None = None,
    split: str | None = None,
    shuffle: Any = False,
    shuffle_seed: Any = DEFAULT_SHUFFLE_SEED,
    **_: Any,
):
    """lm-eval ``custom_dataset`` hook: one specialty's items as split 'test', its dev items as 'dev'.

    ``--metadata split=dev`` evaluates the dev items instead; ``--metadata shuffle=true`` (optionally
    ``shuffle_seed=N``) shuffles the options of every item. lm-eval also passes the other metadata
    and the model arguments; they are ignored.
    """
    seed = None
    if _flag(shuffle, "shuffle"):
        try:
            seed = int(shuffle_seed)
        except (TypeError, ValueError):
            raise data_layer.DataError(f"--metadata shuffle_seed={shuffle_seed!r}: expected an integer") from None
    evaluated = load_rows(specialty, split or "test", data_dir)
    dev = load_rows(specialty, "dev", data_dir)
    import datasets

    return datasets.DatasetDict(
        {
            "test": datasets.Dataset.from_list([to_doc(row, seed) for row in evaluated]),
            "dev": datasets.Dataset.from_list([to_doc(row, seed) for row in dev]),
        }
    )


# ----------------------------------------------------------------------------- prompts


def logit_header(code: str) -> str:
    """The authors' header line and blank line (lm-eval ``description``)."""
    return f"The following are multiple choice questions (with answers) about {SPECIALTIES[code].words}.\n\n"


def logit_prompt(doc: Mapping[str, Any]) -> str:
    options = "".join(f"\n{letter}. {doc[letter]}" for letter in LETTERS)
    return f"Question: {doc['question']}{options}\nAnswer:"


GENERATION_INSTRUCTION = (
    "The following is a multiple-choice question. Please choose the most suitable one among A, B, C and D "
    "as the answer to this question. Your answer should be paired with an explanation why you chose that answer."
)


def generation_prompt(doc: Mapping[str, Any]) -> str:
    options = "".join(f"{letter}. {doc[letter]}\n" for letter in LETTERS)
    return f"{GENERATION_INSTRUCTION}\n\n{doc['question']}\n{options}"


def gold_index(doc: Mapping[str, Any]) -> int:
    return LETTERS.index(doc["answer"])


# ----------------------------------------------------------------------------- answer extraction
#
# The authors' cascade (evaluate_pipe_MedExQA.py at 9a5b34af), first hit wins:
#   1. every option text (trailing periods removed; longest option first) is replaced, ignoring
#      case, by its letter;
#   2. "answer"/"choice ... X" or "choose ... X";
#   3. "X is correct/right";
#   4. the text starts with X followed by ".", ",", ":" or the end;
#   5. the first capital X not touching another ASCII letter (nor followed by "=");
#   6. fuzzy match (thefuzz WRatio) of the text against the four option texts.
# Only capital A-D count as letters; the gaps the patterns allow exclude capital A-D.

_GAP = "[^ABCD]"
_NEGATION = "(?:n't|not)"
_ANSWER_CUE = rf"(?:[Aa]nswer|[Cc]hoice)(?!{_GAP}{{0,20}}?{_NEGATION}){_GAP}{{0,10}}?\b(?:|is|:|be)"
STEP_PATTERNS = (
    ("answer_pattern", re.compile(rf"(?:[Cc]hoose|{_ANSWER_CUE})\b{_GAP}{{0,20}}?\b([ABCD])\b")),
    (
        "correct_pattern",
        re.compile(
            rf"\b([ABCD])\b(?!{_GAP}{{0,8}}?{_NEGATION}{_GAP}{{0,5}}?(?:correct|right)){_GAP}{{0,10}}?\b(?:correct|right)\b"
        ),
    ),
    ("leading_letter", re.compile(r"^([ABCD])(?:\.|,|:|$)")),
    ("first_letter", re.compile(r"(?<![a-zA-Z])([ABCD])(?![a-zA-Z=])")),
)
FUZZY = "fuzzy"
# Steps that read a letter the reply states, as opposed to the two guessing fallbacks.
EXPLICIT_STEPS = frozenset({"answer_pattern", "correct_pattern", "leading_letter"})
UNCLOSED_THINK = "unclosed_think"
EMPTY = "empty"
NO_MATCH = "no_match"


@dataclass(frozen=True)
class Extraction:
    letter: str | None  # None: no answer (counted wrong)
    step: str  # a STEP_PATTERNS name, "fuzzy", or why there is no answer
    from_option_text: bool  # the letter was written in the reply as its option's text (step 1)


def replace_option_texts(text: str, options: Sequence[str]) -> tuple[str, list[bool]]:
    """Step 1, and which characters of the result are letters that replaced an option text."""
    mask = [False] * len(text)
    # Stable sort: options of equal length keep A-D order, as in the authors' script.
    for letter, option in sorted(zip(LETTERS, options), key=lambda pair: len(pair[1]), reverse=True):
        needle = option.rstrip(".")
        if not needle:  # an option of only periods would match everywhere; none exists in the data
            continue
        pieces, new_mask, start = [], [], 0
        for match in re.finditer(re.escape(needle), text, flags=re.IGNORECASE):
            pieces += [text[start : match.start()], letter]
            new_mask += mask[start : match.start()] + [True]
            start = match.end()
        text = "".join(pieces) + text[start:]
        mask = new_mask + mask[start:]
    return text, mask


def extract_answer(reply: str, options: Sequence[str]) -> Extraction:
    """The letter a reply chooses, read with the authors' cascade from the reply alone."""
    visible = strip_think(reply)
    if visible is None:
        return Extraction(None, UNCLOSED_THINK, False)
    visible = visible.strip()
    if not visible:
        return Extraction(None, EMPTY, False)
    text, mask = replace_option_texts(visible, options)
    for step, pattern in STEP_PATTERNS:
        match = pattern.search(text)
        if match:
            return Extraction(match.group(1), step, mask[match.start(1)])
    from thefuzz import process, utils

    if not utils.full_process(text):  # nothing left to compare (e.g. only punctuation)
        return Extraction(None, NO_MATCH, False)
    best, score = process.extractOne(text, list(options))
    if score == 0:
        return Extraction(None, NO_MATCH, False)
    return Extraction(LETTERS[list(options).index(best)], FUZZY, False)


def doc_options(doc: Mapping[str, Any]) -> list[str]:
    return [doc[letter] for letter in LETTERS]


# ----------------------------------------------------------------------------- lm-eval hooks (scoring)


def process_logit_results(doc: Mapping[str, Any], results: Sequence[tuple[float, bool]]) -> dict[str, float]:
    """Accuracy of the most likely letter (first on ties, as lm-eval's ``acc``)."""
    correct = float(logit_prediction([ll for ll, _ in results]) == doc["answer"])
    # The same per-sample value twice: the group averages `accuracy` over specialties (the
    # paper's macro) and `accuracy_micro` over items.
    return {"accuracy": correct, "accuracy_micro": correct}


def logit_prediction(loglikelihoods: Sequence[float]) -> str:
    values = [float(v) for v in loglikelihoods]
    return LETTERS[values.index(max(values))]


def process_generation_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, Any]:
    extraction = extract_answer(results[0], doc_options(doc))
    correct = float(extraction.letter == doc["answer"])
    return {
        "accuracy": correct,
        "accuracy_micro": correct,
        "answered": float(extraction.letter is not None),
        # logged per sample; aggregated by explicit_share
        "extraction_step": extraction.step,
    }


def explicit_share(steps: Sequence[str]) -> float:
    """Share of replies whose letter was stated explicitly (answer/choose, "X is correct", leading letter)."""
    return sum(step in EXPLICIT_STEPS for step in steps) / len(steps) if steps else float("nan")


# ----------------------------------------------------------------------------- report


def _component(doc: Mapping[str, Any]) -> str:
    return specialty(doc["specialty"]).code


def score_logit_sample(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    doc = sample["doc"]
    lls = [float(pair[0]) for pair in sample["filtered_resps"]]
    if len(lls) != len(LETTERS):
        raise ValueError(f"expected {len(LETTERS)} log-likelihoods, got {len(lls)}")
    pred = logit_prediction(lls)
    return ScoredItem(
        task=task,
        doc_id=int(sample["doc_id"]),
        doc_hash=sample.get("doc_hash", ""),
        component=_component(doc),
        gold=doc["answer"],
        pred=pred,
        correct=float(pred == doc["answer"]),
    )


def score_generation_sample(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    doc = sample["doc"]
    reply = sample["filtered_resps"][0]
    extraction = extract_answer(reply, doc_options(doc))
    # What the authors' script would read: it extracted from the prompt followed by the reply.
    authors = (
        extract_answer(generation_prompt(doc) + reply, doc_options(doc))
        if strip_think(reply) is not None
        else extraction
    )
    extras = {
        "answered": float(extraction.letter is not None),
        "letter_from_option_text": float(extraction.from_option_text),
        "accuracy_if_prompt_included": float(authors.letter == doc["answer"]),
    }
    extras |= {f"step_{name}": float(extraction.step == name) for name in extraction_steps()}
    pred = extraction.letter or INVALID
    return ScoredItem(
        task=task,
        doc_id=int(sample["doc_id"]),
        doc_hash=sample.get("doc_hash", ""),
        component=_component(doc),
        gold=doc["answer"],
        pred=pred,
        correct=float(pred == doc["answer"]),
        extras=extras,
    )


def extraction_steps() -> tuple[str, ...]:
    return (*(name for name, _ in STEP_PATTERNS), FUZZY, UNCLOSED_THINK, EMPTY, NO_MATCH)


_COMMON_NOTES = (
    "accuracy_macro is the paper's number (MAvg): the unweighted mean of the five specialty accuracies.",
    "Reference numbers are the authors' leaderboard (percent / 100), zero-shot.",
)

REPORT_SPECS = (
    BenchmarkSpec(
        name="medexqa_logit",
        title="MedExQA, log-likelihood protocol",
        task_prefix="medexqa_logit",
        task_names=frozenset(f"medexqa_logit_{code.lower()}" for code in SPECIALTIES),
        score_sample=score_logit_sample,
        expected_counts=COUNTS["test"],
        labels=LETTERS,
        stratify_by=Stratum.COMPONENT,
        headline=Headline.ACCURACY_MACRO,
        reference=PAPER_LOGIT_ACCURACY,
        notes=_COMMON_NOTES + ("The answer is the letter with the highest log-likelihood after 'Answer:'.",),
    ),
    BenchmarkSpec(
        name="medexqa",
        title="MedExQA, generation protocol",
        task_prefix="medexqa",
        task_names=frozenset(f"medexqa_{code.lower()}" for code in SPECIALTIES),
        score_sample=score_generation_sample,
        expected_counts=COUNTS["test"],
        labels=LETTERS,
        stratify_by=Stratum.COMPONENT,
        headline=Headline.ACCURACY_MACRO,
        reference=PAPER_GENERATION_ACCURACY,
        notes=_COMMON_NOTES
        + (
            "Letters are read from the reply only (think blocks removed) with the authors' cascade; INVALID "
            "(unclosed think block, empty reply, or nothing to match) is counted wrong.",
            "step_* rates say which extraction step produced each letter; accuracy_if_prompt_included is what "
            "the authors' script would score, since it extracted from the prompt followed by the reply.",
            "Explanation scores: python -m lm_eval_tasks medexqa-explanations OUTPUT_PATH.",
        ),
    ),
)
