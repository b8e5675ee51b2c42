"""MillerQA: 24 curated multiple-choice benchmarks in five competency dimensions (shared/SPEC.md section 4).

Source: ``KatherLab/MillerQA`` at commit ``92af60f8eac8b532fe882ae0dcbb701797660be8`` (the project
was called Prj-BENCH before that commit). Each benchmark is a JSON array of
``{id, question, options, target, kind}``; ``target`` indexes ``options`` in file order.

Protocol, as the authors' harness runs it (described in shared/data/millerqa/PROVENANCE.md):

- options are shuffled per (item, model): SHA-256 of ``"42:{item_id}:{model_label}"``, the first
  64 bits seed Python's ``random.Random``, which shuffles ``list(range(n_options))``;
  ``permutation[position] = original index``;
- a system message and a user message that ends in a JSON answer skeleton;
- a parse cascade (strict JSON, JSON with escaped control characters, a fenced block, first to
  last brace, the last object holding ``selected_answer``, then regex fallbacks); the letter is
  mapped back through the permutation to an original option index;
- accuracy = correct / answered: replies without a usable letter are unscored, not wrong.

Everything here is free of lm-eval; the task YAMLs point at the hooks at the end.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import random
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import data as data_layer
from ..files import write_atomically
from ..scoring import INVALID, AccuracyOver, BenchmarkSpec, Headline, ScoredItem, Stratum
from ..text import strip_think

logger = logging.getLogger(__name__)

BENCHMARK = "millerqa"
GITHUB_REPO = "KatherLab/MillerQA"
GITHUB_COMMIT = "92af60f8eac8b532fe882ae0dcbb701797660be8"
GITHUB_RAW = f"https://raw.githubusercontent.com/{GITHUB_REPO}/{GITHUB_COMMIT}/benchmarks"
MANIFEST = "_manifest.csv"
CURATED, PRE_QC = "curated", "pre_qc"
# _manifest.csv column holding each release's item count.
MANIFEST_COUNT_COLUMN = {CURATED: "n_curated", PRE_QC: "n_source"}
SHUFFLE_SEED = 42  # the authors' SHUFFLE_SEED; the published runs used it
LETTERS = string.ascii_uppercase
MEDBULLETS = "medbullets"  # withheld upstream; rebuilt by the user (rebuild_medbullets)

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

# Items per benchmark, pinned from _manifest.csv at the pinned commit (n_curated / n_source).
ITEM_COUNTS = {
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
LOCAL_LAYOUT = (
    f"DIR/{BENCHMARK}/ laid out like the upstream benchmarks/ folder ({MANIFEST}, curated/<source>/<name>.json, "
    f"pre_qc/<source>/<name>.json), or DIR itself a clone of {GITHUB_REPO} at {GITHUB_COMMIT}"
)


@dataclass(frozen=True)
class Family:
    """One set of tasks over the suite: a release and a protocol variant."""

    prefix: str
    release: str
    variant: str  # "generate" (the paper's), "choice_only" (the authors' baseline) or "loglikelihood"
    title: str


FAMILIES = (
    Family("millerqa", CURATED, "generate", "MillerQA (curated)"),
    Family("millerqa_preqc", PRE_QC, "generate", "MillerQA (pre-QC release)"),
    Family("millerqa_choiceonly", CURATED, "choice_only", "MillerQA choice-only baseline (curated)"),
    Family("millerqa_ll", CURATED, "loglikelihood", "MillerQA log-likelihood variant (curated)"),
)
# Every leaf task: name -> (family, benchmark stem).
TASKS = {f"{family.prefix}_{stem}": (family, stem) for family in FAMILIES for stem in BENCHMARKS}

# ----------------------------------------------------------------------------- prompt (the authors')

SYSTEM_PROMPT = (
    "You are an expert evaluator. Your task is to answer multiple-choice questions accurately. "
    "Always respond with a single JSON object and nothing else. "
    "Do not add markdown fences, commentary, or extra text outside the JSON."
)
_ANSWER_SKELETON = (
    "Respond with ONLY this JSON object (no markdown, no extra text):\n"
    "{\n"
    '  "selected_answer": "<letter>",\n'
    '  "explanation": "<one to two sentence justification for your choice>",\n'
    '  "confidence": <integer 0-100 reflecting how confident you are>\n'
    "}"
)
_INSTRUCTION = "Answer the following multiple-choice question."


def options_block(options: Sequence[str]) -> str:
    return "\n".join(f"{LETTERS[i]}. {option}" for i, option in enumerate(options))


def user_prompt(question: str, options: Sequence[str]) -> str:
    """The authors' user message for already-shuffled options."""
    return f"{_INSTRUCTION}\n\nQuestion:\n{question}\n\nOptions:\n{options_block(options)}\n\n{_ANSWER_SKELETON}"


def choice_only_prompt(options: Sequence[str]) -> str:
    """The choice-only baseline: the same message with the question section left out."""
    return f"{_INSTRUCTION}\n\nOptions:\n{options_block(options)}\n\n{_ANSWER_SKELETON}"


def loglikelihood_prompt(question: str, options: Sequence[str]) -> str:
    """The log-likelihood variant: question and lettered options, scored on the letter after 'Answer:'."""
    return f"{_INSTRUCTION}\n\nQuestion:\n{question}\n\nOptions:\n{options_block(options)}\n\nAnswer:"


# ----------------------------------------------------------------------------- the per-(item, model) shuffle


def seed_from_key(item_id: str, model_label: str, seed: int = SHUFFLE_SEED) -> int:
    """The first 64 bits of SHA-256("{seed}:{item_id}:{model_label}") as an integer."""
    return int(hashlib.sha256(f"{seed}:{item_id}:{model_label}".encode()).hexdigest()[:16], 16)


def permutation(item_id: str, model_label: str, n_options: int, seed: int = SHUFFLE_SEED) -> list[int]:
    """``perm[position] = original option index``, exactly as the authors' harness draws it.

    CPython's Mersenne Twister ``shuffle``; numpy or another language gives different orders.
    """
    order = list(range(n_options))
    random.Random(seed_from_key(item_id, model_label, seed)).shuffle(order)
    return order


def model_label_from(model_label: str | None = None, pretrained: Any = None, model: Any = None) -> str:
    """The label that keys the shuffle: ``--metadata model_label=...``, else one derived from the model.

    The derived label is the last path component of ``pretrained`` (hf, vllm) or ``model`` (API
    backends): ``meta-llama/Llama-3.1-8B-Instruct`` -> ``Llama-3.1-8B-Instruct``, so the same model
    gets the same shuffles from the hub or from any local folder of that name. The authors used
    their own labels (``gpt-4o``, ``llama-3-1-8b``, ...); pass one to reproduce their shuffles.
    """
    if model_label is not None and str(model_label).strip():
        return str(model_label).strip()
    source = pretrained if pretrained is not None else model
    if isinstance(source, str) and source.strip().strip("/\\"):
        return source.strip().replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    raise data_layer.DataError(
        "MillerQA shuffles the options per (item, model) and needs a model label: pass "
        "--metadata model_label=LABEL (Python: TaskManager(metadata={'model_label': LABEL})). It is "
        "derived from --model_args pretrained=... or model=... when those are given."
    )


# ----------------------------------------------------------------------------- parsing (the authors' cascade)

_FENCE = re.compile(r"```(?:json)?\s*([\s\S]*?)```", re.IGNORECASE)
_ANSWER_KEY = re.compile(r'"selected_answer"\s*:\s*"([A-Za-z])"')
_STANDALONE_CAPITAL = re.compile(r"\b([A-Z])\b")
_CONFIDENCE_KEY = re.compile(r'"confidence"\s*:\s*(\d+)')
_EXPLANATION_KEY = re.compile(r'"explanation"\s*:\s*"([^"]*)"', re.DOTALL)
_LEADING_LETTER = re.compile(r"^([A-Za-z])[.):\s]")
_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# How the answer object was found, in cascade order; the regex steps are the authors' parse_failed.
JSON_METHODS = ("json", "json_escaped", "fenced", "braces", "last_object")
REGEX_METHODS = ("regex_key", "regex_letter")


def escape_control_characters(text: str) -> str:
    """Escape raw newlines, CRs and tabs that sit inside JSON strings (some models emit them)."""
    out, in_string, escaped = [], False, False
    for char in text:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            in_string = not in_string
        elif in_string and char in _CONTROL_ESCAPES:
            out.append(_CONTROL_ESCAPES[char])
            continue
        out.append(char)
    return "".join(out)


def _json_object(text: str) -> tuple[dict | None, bool]:
    """(object, escaping was needed) for a text that is one JSON object, strictly or once escaped."""
    text = text.strip()
    for escaped, candidate in ((False, text), (True, escape_control_characters(text))):
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value, escaped
    return None, False


def _last_answer_object(text: str) -> dict | None:
    """Scanning backwards from the last '{', the first object that decodes and has ``selected_answer``."""
    decoder = json.JSONDecoder()
    for candidate in (text, escape_control_characters(text)):
        start = candidate.rfind("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                value = None
            if isinstance(value, dict) and "selected_answer" in value:
                return value
            start = candidate.rfind("{", 0, start)
    return None


@dataclass(frozen=True)
class ParsedReply:
    fields: Mapping[str, Any]  # the answer object, or what the regex fallback found
    method: str  # one of JSON_METHODS + REGEX_METHODS, "none", or "unclosed_think"

    @property
    def json_parsed(self) -> bool:
        return self.method in JSON_METHODS


def parse_reply(reply: str) -> ParsedReply:
    """The authors' cascade, first success wins; ``<think>`` blocks are removed first (SPEC).

    An unclosed think block means the model never reached its answer: nothing is read.
    """
    text = strip_think(reply)
    if text is None:
        return ParsedReply({}, "unclosed_think")
    found, escaped = _json_object(text)
    if found is not None:
        return ParsedReply(found, "json_escaped" if escaped else "json")
    fence = _FENCE.search(text)
    if fence:
        found, _ = _json_object(fence.group(1))
        if found is not None:
            return ParsedReply(found, "fenced")
    first, last = text.find("{"), text.rfind("}")
    if first != -1 and last > first:
        found, _ = _json_object(text[first : last + 1])
        if found is not None:
            return ParsedReply(found, "braces")
    found = _last_answer_object(text)
    if found is not None:
        return ParsedReply(found, "last_object")
    # Regex fallback: the authors flag it parse_failed but still score a letter found here.
    key = _ANSWER_KEY.search(text)
    letter = key.group(1).upper() if key else None
    method = "regex_key"
    if letter is None:
        capital = _STANDALONE_CAPITAL.search(text)  # a prose "I" or "A" counts, as upstream
        letter, method = (capital.group(1), "regex_letter") if capital else (None, "none")
    confidence = _CONFIDENCE_KEY.search(text)
    explanation = _EXPLANATION_KEY.search(text)
    return ParsedReply(
        {
            "selected_answer": letter,
            "confidence": int(confidence.group(1)) if confidence else None,
            "explanation": explanation.group(1) if explanation else None,
        },
        method,
    )


def selected_letter(value: Any) -> str | None:
    """The answer letter as the authors read it: "D. Legal ..." / "D) ..." / "d" -> "D"; non-strings -> None."""
    if not isinstance(value, str):
        return None
    stripped = value.strip()
    leading = _LEADING_LETTER.match(stripped)
    return (leading.group(1) if leading else stripped).upper()


def original_index(letter: str | None, perm: Sequence[int]) -> int | None:
    """The original option index of a shuffled-position letter; None unless exactly one letter in range."""
    if letter is None:
        return None
    letter = letter.strip().upper()
    if len(letter) != 1 or not "A" <= letter <= "Z":
        return None
    position = ord(letter) - ord("A")
    return perm[position] if position < len(perm) else None


def clamp_confidence(value: Any) -> int | None:
    try:
        return max(0, min(100, int(value)))
    except (TypeError, ValueError, OverflowError):
        return None


@dataclass(frozen=True)
class Answer:
    """One reply scored against one shuffled doc (the authors' result record, in brief)."""

    letter: str | None
    original_index: int | None
    is_correct: bool | None  # None: unscored (no usable letter)
    confidence: int | None
    explanation: str | None
    method: str

    @property
    def answered(self) -> bool:
        return self.is_correct is not None

    def record(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "benchmark": doc["benchmark"],
            "release": doc["release"],
            "id": doc["id"],
            "model_label": doc["model_label"],
            "permutation": list(doc["permutation"]),
            "correct_letter": doc["correct_letter"],
            "selected_letter": self.letter,
            "selected_original_index": self.original_index,
            "is_correct": self.is_correct,
            "confidence": self.confidence,
            "explanation": self.explanation,
            "parse_method": self.method,
            "parse_failed": self.method not in JSON_METHODS,
        }


def score_reply(doc: Mapping[str, Any], reply: str) -> Answer:
    parsed = parse_reply(reply)
    letter = selected_letter(parsed.fields.get("selected_answer"))
    index = original_index(letter, doc["permutation"])
    explanation = parsed.fields.get("explanation")
    return Answer(
        letter=letter,
        original_index=index,
        is_correct=None if index is None else index == doc["target"],
        confidence=clamp_confidence(parsed.fields.get("confidence")),
        explanation=(explanation.strip() or None) if isinstance(explanation, str) else None,
        method=parsed.method,
    )


# ----------------------------------------------------------------------------- data


def resolve_root(data_dir: str | None) -> Path | None:
    """The folder holding ``_manifest.csv``, ``curated/`` and ``pre_qc/``; None means the GitHub copy.

    ``data_dir`` may be a data directory (``DIR/millerqa/``) or a clone of the upstream repository.
    """
    if data_dir and (Path(data_dir).expanduser() / "benchmarks" / MANIFEST).is_file():
        return Path(data_dir).expanduser() / "benchmarks"
    folder = data_layer.local_benchmark_dir(BENCHMARK, data_dir)
    if folder is None:
        return None
    return folder / "benchmarks" if (folder / "benchmarks" / MANIFEST).is_file() else folder


def _file(root: Path | None, relative: str) -> Path:
    """A file of the benchmarks folder: local, or downloaded once from the pinned GitHub commit."""
    if root is not None:
        if not (root / relative).is_file():
            raise data_layer.DataError(f"{root / relative}: missing; expected {LOCAL_LAYOUT}")
        return root / relative
    from ..files import cache_dir

    return data_layer.download_pinned_file(
        f"{GITHUB_RAW}/{relative}", cache_dir() / BENCHMARK / GITHUB_COMMIT / relative, BENCHMARK, LOCAL_LAYOUT
    )


@data_layer.cached_on_file
def read_manifest(path: Path) -> dict[str, dict[str, Any]]:
    """``_manifest.csv`` rows by benchmark, checked against the pinned release counts."""
    rows = data_layer.read_table(path)
    data_layer.require_columns(rows, ("benchmark", *MANIFEST_COUNT_COLUMN.values()), path)
    by_name = {}
    for number, row in enumerate(rows, start=1):
        name = row["benchmark"]
        if name not in ITEM_COUNTS[CURATED]:
            raise data_layer.row_error(path, number, "benchmark", f"unknown benchmark {name!r}")
        for release, column in MANIFEST_COUNT_COLUMN.items():
            if row[column] != str(ITEM_COUNTS[release][name]):
                raise data_layer.row_error(
                    path,
                    number,
                    column,
                    f"{row[column]!r} differs from the pinned release "
                    f"({ITEM_COUNTS[release][name]} items at {GITHUB_REPO}@{GITHUB_COMMIT})",
                )
        by_name[name] = row
    missing = sorted(set(ITEM_COUNTS[CURATED]) - set(by_name))
    if missing:
        raise data_layer.DataError(f"{path}: no row for {', '.join(missing)}")
    return by_name


@data_layer.cached_on_file
def read_benchmark_file(path: Path) -> tuple[dict[str, Any], ...]:
    """Items normalised as the authors' loader does (id as text, stripped question and options).

    Items the authors' loader would skip with a warning (fewer than two options, a target out of
    range) are errors here: nothing is silently dropped.
    """
    rows = data_layer.read_table(path)
    items, seen = [], {}
    for number, row in enumerate(rows, start=1):
        for field in ("id", "question", "options", "target"):
            if field not in row:
                raise data_layer.row_error(path, number, field, "missing")
        item_id, question, options, target = row["id"], row["question"], row["options"], row["target"]
        if isinstance(item_id, bool) or not isinstance(item_id, (str, int)) or not str(item_id).strip():
            raise data_layer.row_error(path, number, "id", f"expected a non-empty string or integer, got {item_id!r}")
        if not isinstance(question, str) or not question.strip():
            raise data_layer.row_error(path, number, "question", "expected a non-empty string")
        if not isinstance(options, list) or not 2 <= len(options) <= len(LETTERS):
            raise data_layer.row_error(path, number, "options", f"expected a list of 2 to {len(LETTERS)} strings")
        if not all(isinstance(option, str) for option in options):
            raise data_layer.row_error(path, number, "options", "every option must be a string")
        if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < len(options):
            raise data_layer.row_error(
                path, number, "target", f"{target!r} is not an index into the {len(options)} options"
            )
        if str(item_id) in seen:
            raise data_layer.row_error(
                path, number, "id", f"duplicate id {item_id!r} (first on row {seen[str(item_id)]})"
            )
        seen[str(item_id)] = number
        kind = row.get("kind") or row.get("categories")  # medethicsqa's older field name, as upstream
        items.append(
            {
                "id": str(item_id),
                "question": question.strip(),
                "options": [o.strip() for o in options],
                "target": target,
                "kind": ", ".join(map(str, kind)) if isinstance(kind, list) else "" if kind is None else str(kind),
            }
        )
    return tuple(items)


def medbullets_missing_error(path: Path | str, release: str) -> data_layer.DataError:
    return data_layer.DataError(
        f"{path}: MedBullets is not redistributed upstream (no licence could be established), so "
        f"'{MEDBULLETS}' has no data here. Rebuild it from your own copy of its public source "
        f"(LangAGI-Lab/medbullets_op5, 308 rows) and the shipped item ids:\n"
        f"  python -m lm_eval_tasks millerqa-rebuild-medbullets --source FILE --out DIR\n"
        f"then pass --metadata data_dir=DIR. Every other MillerQA task, and the groups without "
        f"'_with_medbullets' in their name, run without it ({release} release)."
    )


def load_benchmark(benchmark: str, release: str = CURATED, data_dir: str | None = None) -> tuple[dict[str, Any], ...]:
    """The validated items of one benchmark file, in file order, with its manifest count checked."""
    if benchmark not in ITEM_COUNTS[CURATED]:
        raise data_layer.DataError(f"unknown MillerQA benchmark '{benchmark}' (known: {', '.join(BENCHMARKS)})")
    if release not in MANIFEST_COUNT_COLUMN:
        raise data_layer.DataError(f"unknown MillerQA release '{release}' (known: {', '.join(MANIFEST_COUNT_COLUMN)})")
    root = resolve_root(data_dir)
    relative = f"{release}/{SOURCE_FOLDER[benchmark]}/{benchmark}.json"
    if benchmark == MEDBULLETS and (root is None or not (root / relative).is_file()):
        raise medbullets_missing_error(root / relative if root else f"{GITHUB_RAW}/{relative}", release)
    manifest = read_manifest(_file(root, MANIFEST))
    path = _file(root, relative)
    items = read_benchmark_file(path)
    expected = int(manifest[benchmark][MANIFEST_COUNT_COLUMN[release]])
    if len(items) != expected:
        raise data_layer.DataError(
            f"{path}: {len(items)} items, but {MANIFEST} gives {expected} for '{benchmark}' in the {release} release"
        )
    return items


def shuffled_doc(
    item: Mapping[str, Any], benchmark: str, release: str, model_label: str, seed: int = SHUFFLE_SEED
) -> dict[str, Any]:
    """A task doc: the item, its permutation for this model, the shuffled options and the correct letter."""
    perm = permutation(item["id"], model_label, len(item["options"]), seed)
    return {
        "benchmark": benchmark,
        "release": release,
        "dimension": DIMENSION_OF[benchmark],
        **item,
        "model_label": model_label,
        "shuffle_seed": seed,
        "permutation": perm,
        "shuffled_options": [item["options"][i] for i in perm],
        "correct_position": perm.index(item["target"]),
        "correct_letter": LETTERS[perm.index(item["target"])],
        "system_prompt": SYSTEM_PROMPT,
    }


# ----------------------------------------------------------------------------- MedBullets rebuild

MEDBULLETS_SOURCE_COLUMNS = ("question", "opa", "opb", "opc", "opd", "ope", "answer_idx")
MEDBULLETS_SOURCE_ROWS = ITEM_COUNTS[PRE_QC][MEDBULLETS]  # the pre-QC id list is every source row, 0..307


def medbullets_items(source: str | Path) -> list[dict[str, Any]]:
    """The 308 five-option MedBullets items of a local copy of ``LangAGI-Lab/medbullets_op5`` (test split).

    Any format :func:`data.read_table` reads (Parquet, JSONL, JSON, CSV). The item id is the
    0-based row position, which is how the shipped id lists refer to items.
    """
    rows = data_layer.read_table(source)
    data_layer.require_columns(rows, MEDBULLETS_SOURCE_COLUMNS, source)
    data_layer.require_nonempty_strings(rows, MEDBULLETS_SOURCE_COLUMNS, source)
    if len(rows) != MEDBULLETS_SOURCE_ROWS:
        raise data_layer.DataError(
            f"{source}: {len(rows)} rows; the five-option MedBullets set "
            f"(LangAGI-Lab/medbullets_op5) has {MEDBULLETS_SOURCE_ROWS}"
        )
    items = []
    for number, row in enumerate(rows, start=1):
        answer = row["answer_idx"].strip().upper()
        if len(answer) != 1 or answer not in "ABCDE":
            raise data_layer.row_error(source, number, "answer_idx", f"{row['answer_idx']!r} is not one of A-E")
        options = [row[column].strip() for column in ("opa", "opb", "opc", "opd", "ope")]
        if isinstance(row.get("answer"), str) and row["answer"].strip() != options["ABCDE".index(answer)]:
            raise data_layer.row_error(source, number, "answer", f"{row['answer']!r} is not option {answer}")
        items.append(
            {
                "id": number - 1,
                "question": row["question"].strip(),
                "options": options,
                "target": "ABCDE".index(answer),
                "kind": "medbullets_op5",
            }
        )
    return items


def rebuild_medbullets(source: str | Path, out_dir: str | Path) -> list[Path]:
    """Write ``medbullets.json`` for every release whose ``item_ids.csv`` the data directory holds."""
    root = resolve_root(str(out_dir))
    if root is None:
        raise data_layer.DataError(f"{out_dir}: not a data directory")
    items = medbullets_items(source)
    written = []
    for release in MANIFEST_COUNT_COLUMN:
        folder = root / release / SOURCE_FOLDER[MEDBULLETS]
        ids_file = folder / "item_ids.csv"
        if not ids_file.is_file():
            continue
        rows = data_layer.read_table(ids_file)
        data_layer.require_columns(rows, ("id",), ids_file)
        wanted = []
        for number, row in enumerate(rows, start=1):
            if not row["id"].isdigit() or int(row["id"]) >= len(items):
                raise data_layer.row_error(ids_file, number, "id", f"{row['id']!r} is not a row of the source")
            wanted.append(int(row["id"]))
        expected = ITEM_COUNTS[release][MEDBULLETS]
        if len(wanted) != expected or len(set(wanted)) != expected:
            raise data_layer.DataError(
                f"{ids_file}: {len(set(wanted))} distinct ids; the {release} release has {expected}"
            )
        content = json.dumps([items[i] for i in wanted], ensure_ascii=False, indent=1) + "\n"
        written += write_atomically(folder, {f"{MEDBULLETS}.json": content.encode("utf-8")})
    if not written:
        raise data_layer.DataError(f"{root}: no {{curated,pre_qc}}/{MEDBULLETS}/item_ids.csv; {LOCAL_LAYOUT}")
    return written


# ----------------------------------------------------------------------------- lm-eval hooks


def custom_dataset(
    benchmark: str,
    release: str = CURATED,
    data_dir: str | None = None,
    model_label: str | None = None,
    shuffle_seed: int | str = SHUFFLE_SEED,
    pretrained: Any = None,
    model: Any = None,
    split: str | None = None,
    **_: Any,
):
    """lm-eval ``custom_dataset`` hook: one benchmark's docs, shuffled for this model, as split 'test'.

    lm-eval passes the task metadata, ``--metadata`` and every ``--model_args`` value; the model
    label is derived from ``pretrained``/``model`` unless ``model_label`` is given. The docs depend
    only on the data, the label and the seed, so every process of a multi-GPU run builds the same.
    """
    data_layer.refuse_training_split(BENCHMARK, split)
    label = model_label_from(model_label, pretrained, model)
    items = load_benchmark(benchmark, release, data_dir)
    return data_layer.to_dataset_dict(
        [shuffled_doc(item, benchmark, release, label, int(shuffle_seed)) for item in items]
    )


def doc_to_text(doc: Mapping[str, Any]) -> str:
    return user_prompt(doc["question"], doc["shuffled_options"])


def doc_to_text_choice_only(doc: Mapping[str, Any]) -> str:
    return choice_only_prompt(doc["shuffled_options"])


def doc_to_text_loglikelihood(doc: Mapping[str, Any]) -> str:
    return loglikelihood_prompt(doc["question"], doc["shuffled_options"])


def doc_to_choice(doc: Mapping[str, Any]) -> list[str]:
    return list(LETTERS[: len(doc["shuffled_options"])])


def process_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, float | None]:
    """Per-sample metrics of the generative tasks.

    ``acc`` is None for an unscored reply (aggregated by :func:`mean_over_answered`: the paper's
    accuracy); ``acc_all`` counts it wrong; ``answered`` is coverage. The ``_micro`` keys repeat a
    value so that groups can give a size-weighted mean next to the unweighted one.
    """
    answer = score_reply(doc, results[0])
    correct = float(bool(answer.is_correct))
    answered = float(answer.answered)
    return {
        "acc": correct if answer.answered else None,
        "acc_all": correct,
        "acc_all_micro": correct,
        "answered": answered,
        "answered_micro": answered,
    }


def mean_over_answered(values: Sequence[float | None]) -> float:
    """Mean of the scored values; NaN (with a warning) when no reply gave a usable answer."""
    scored = [value for value in values if value is not None]
    if not scored:
        logger.warning(
            "MillerQA: none of %d replies gave a usable answer; accuracy over answered items is undefined (NaN).",
            len(values),
        )
        return math.nan
    return sum(scored) / len(scored)


def chosen_position(loglikelihoods: Sequence[float]) -> int:
    """The letter with the highest log-likelihood (the first on a tie)."""
    return max(range(len(loglikelihoods)), key=lambda i: (loglikelihoods[i], -i))


def process_results_loglikelihood(doc: Mapping[str, Any], results: Sequence[Sequence[Any]]) -> dict[str, float]:
    correct = float(chosen_position([float(r[0]) for r in results]) == doc["correct_position"])
    return {"acc": correct, "acc_micro": correct}


# ----------------------------------------------------------------------------- report


def score_sample(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    """A logged generative sample, re-parsed from its raw reply."""
    doc = sample["doc"]
    answer = score_reply(doc, sample["filtered_resps"][0])
    return ScoredItem(
        task=task,
        doc_id=int(sample["doc_id"]),
        doc_hash=sample.get("doc_hash", ""),
        component=doc["benchmark"],
        gold=str(doc["target"]),
        pred=INVALID if answer.original_index is None else str(answer.original_index),
        correct=float(bool(answer.is_correct)),
        extras={"json_parsed": float(answer.method in JSON_METHODS), "chance": 1 / len(doc["permutation"])},
        details=answer.record(doc),
    )


def _loglikelihoods(response: Sequence[Sequence[Any]]) -> list[float]:
    """Per-letter log-likelihoods of a logged multiple-choice sample (lm-eval writes each pair as text)."""
    return [float(pair[0]) for pair in response]


def score_sample_loglikelihood(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    doc = sample["doc"]
    position = chosen_position(_loglikelihoods(sample["filtered_resps"]))
    chosen = doc["permutation"][position]
    return ScoredItem(
        task=task,
        doc_id=int(sample["doc_id"]),
        doc_hash=sample.get("doc_hash", ""),
        component=doc["benchmark"],
        gold=str(doc["target"]),
        pred=str(chosen),
        correct=float(chosen == doc["target"]),
        extras={"chance": 1 / len(doc["permutation"])},
        details={
            "benchmark": doc["benchmark"],
            "release": doc["release"],
            "id": doc["id"],
            "model_label": doc["model_label"],
            "permutation": list(doc["permutation"]),
            "correct_letter": doc["correct_letter"],
            "selected_letter": LETTERS[position],
            "selected_original_index": chosen,
            "is_correct": chosen == doc["target"],
        },
    )


def _spec(family: Family) -> BenchmarkSpec:
    generative = family.variant != "loglikelihood"
    notes = [
        "chance: the accuracy of a uniform random guess (1 / number of options), for reading each benchmark's numbers.",
        "Options are shuffled per (item, model label); see each item's permutation in items_<benchmark>.jsonl.",
        "MillerQA's pubmedqa is 998 of all 1,000 PQA-L items, not the 500-item PubMedQA test set: never "
        "report it as PubMedQA.",
        "The paper-comparable suite has 24 benchmarks; MedBullets is only present when rebuilt by the user.",
    ]
    if generative:
        notes.insert(
            0,
            "accuracy = correct / answered (the paper's): replies without a usable letter are "
            "unscored and reported as coverage; accuracy_all counts them wrong.",
        )
    if family.variant == "choice_only":
        notes.insert(
            0,
            "Choice-only baseline: the question was withheld; accuracy above chance means answerable "
            "from the options alone.",
        )
    return BenchmarkSpec(
        name=family.prefix,
        title=family.title,
        task_prefix=family.prefix,
        score_sample=score_sample if generative else score_sample_loglikelihood,
        expected_counts={stem: ITEM_COUNTS[family.release][stem] for stem in BENCHMARKS},
        stratify_by=Stratum.COMPONENT,
        headline=Headline.ACCURACY_MACRO,
        task_names=frozenset(name for name, (f, _) in TASKS.items() if f == family),
        accuracy_over=AccuracyOver.ANSWERED if generative else AccuracyOver.ALL,
        component_groups={title: stems for title, stems in DIMENSIONS.values()},
        notes=tuple(notes),
    )


REPORT_SPECS = tuple(_spec(family) for family in FAMILIES)
