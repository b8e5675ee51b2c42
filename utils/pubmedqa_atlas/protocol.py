"""PubMedQA PQA-L on the authors' official test split: data, prompts, the n100 subset, scoring, report.

Protocol (shared/SPEC.md section 3; details and decisions in lm_eval_tasks/pubmedqa_atlas/README.md):

- Data: the 1,000 expert-labelled items of ``ori_pqal.json``; the test set is exactly the 500 pubids
  of the authors' ``test_ground_truth.json`` (276 yes / 169 no / 55 maybe), the other 500 are the
  train pool (same counts). Both are asserted on every load.
- Context: the abstract's sections (the conclusion is not among them) joined by single spaces and
  cut after its 300th word.
- Zero-shot: ``Abstract: {context}\\nQuestion: {question}\\nAnswer:`` scored with the continuations
  yes / no / maybe; the highest summed log-probability wins, an exact tie goes to the earliest of
  yes, no, maybe.
- Generative: the same prompt with one instruction line; the answer is read from the reply after
  ``<think>`` blocks are removed; an unreadable reply is INVALID, counted wrong.
- n100: a frozen stratified 100 (largest-remainder quotas 55/34/11; inside each answer the items
  with the smallest ``sha256("20261006:<pubid>")``).
- Docs are served sorted by that same hash (the file groups its items by answer, so ``--limit``
  in file order would see only yes items).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from .. import data as data_layer
from .. import stats
from ..scoring import INVALID, BenchmarkSpec, Headline, ScoredItem, Stratum
from ..text import strip_think

BENCHMARK = "pubmedqa"
HUB = data_layer.HubDataset(
    "qiaojin/PubMedQA", "9001f2853fb87cab8d220904e0de81ac6973b318", config="pqa_labeled", split="train"
)
UPSTREAM_COMMIT = "1cbae8e92f72f20c8d3747cbb3bf5bc53554d997"
TEST_IDS_URL = f"https://raw.githubusercontent.com/pubmedqa/pubmedqa/{UPSTREAM_COMMIT}/data/test_ground_truth.json"
TEST_IDS_SHA256 = "939fe566f09017d13b1ca64d2ddfee0bc2374b366048152997669cccedc44d51"
ITEMS_FILE = "ori_pqal.json"
TEST_IDS_FILE = "test_ground_truth.json"
LOCAL_LAYOUT = (
    f"DIR/{BENCHMARK}/ holding {ITEMS_FILE} and {TEST_IDS_FILE} from github.com/pubmedqa/pubmedqa "
    f"(folder data/, commit {UPSTREAM_COMMIT})"
)

LABELS = ("yes", "no", "maybe")
# Answer counts of the official test split, and (by the authors' per-answer split) of the train pool.
SPLIT_COUNTS = {"yes": 276, "no": 169, "maybe": 55}
CONTEXT_WORDS = 300
N100_SIZE = 100
N100_SEED = 20261006
# lm-eval dataset subset -> version name of the item set (the names the benchmark card uses).
SUBSETS = {"full": "atlas-full-v1", "n100": "atlas-n100-v1"}
SUBSET_SIZES = {"full": sum(SPLIT_COUNTS.values()), "n100": N100_SIZE}
GENERATIVE_INSTRUCTION = "Answer the question with yes, no or maybe."

# Jin et al. 2019 and the authors' leaderboard (reasoning-required setting, official test set).
PUBLISHED = {
    "always yes (majority baseline)": {"accuracy": 0.552, "macro_f1": 0.2372},
    "single human annotator (Jin et al. 2019)": {"accuracy": 0.7800, "macro_f1": 0.7219},
    "BioBERT multi-phase fine-tuning (Jin et al. 2019)": {"accuracy": 0.6808, "macro_f1": 0.5272},
}


# ----------------------------------------------------------------------------- text


_WORD = re.compile(r"\S+")


def first_words(text: str, n: int = CONTEXT_WORDS) -> str:
    """``text`` up to the end of its ``n``-th word (words are runs of non-whitespace); unchanged if shorter."""
    for count, match in enumerate(_WORD.finditer(text), start=1):
        if count == n:
            return text[: match.end()]
    return text


def context_of(sections: Sequence[str]) -> str:
    """The abstract's sections joined by single spaces, cut after the 300th word."""
    return first_words(" ".join(sections))


def zero_shot_prompt(doc: Mapping[str, Any]) -> str:
    return f"Abstract: {doc['context']}\nQuestion: {doc['question']}\nAnswer:"


def generative_prompt(doc: Mapping[str, Any]) -> str:
    return f"Abstract: {doc['context']}\nQuestion: {doc['question']}\n{GENERATIVE_INSTRUCTION}\nAnswer:"


def probe_text(doc: Mapping[str, Any]) -> str:
    """What the probe's encoder reads: the question first, so truncation only ever cuts context."""
    return f"Question: {doc['question']}\nContext: {doc['context']}"


# ----------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Item:
    """One PQA-L item; ``record`` is its object from ori_pqal.json (the bigbio "source" schema)."""

    pubid: str
    record: Mapping[str, Any]

    @property
    def answer(self) -> str:
        return self.record["final_decision"]

    def doc(self) -> dict[str, str]:
        """The document our tasks see. The conclusion (LONG_ANSWER) states the answer and is left out."""
        return {
            "pubid": self.pubid,
            "question": self.record["QUESTION"],
            "context": context_of(self.record["CONTEXTS"]),
            "final_decision": self.answer,
        }


@dataclass(frozen=True)
class PubMedQA:
    test: tuple[Item, ...]  # in the order of test_ground_truth.json
    train: tuple[Item, ...]  # the other 500, in the order of ori_pqal.json
    source: str

    def subset(self, name: str) -> tuple[Item, ...]:
        """The test items of an item set, in evaluation order (see :func:`evaluation_order`)."""
        if name == "full":
            return evaluation_order(self.test)
        if name == "n100":
            return evaluation_order(select_n100(self.test))
        raise data_layer.DataError(f"unknown PubMedQA subset '{name}' (known: {', '.join(SUBSETS)})")


def validate_items(raw: Any, source: str) -> dict[str, Mapping[str, Any]]:
    """ori_pqal.json's object keyed by pubid; every item needs a question, contexts and a gold answer."""
    if not isinstance(raw, dict):
        raise data_layer.DataError(f"{source}: expected a JSON object keyed by PubMed id, got {type(raw).__name__}")
    for row, (pubid, record) in enumerate(raw.items(), start=1):
        if not isinstance(record, dict):
            raise data_layer.row_error(
                source, row, None, f"pubid {pubid}: expected an object, got {type(record).__name__}"
            )
        question = record.get("QUESTION")
        if not isinstance(question, str) or not question.strip():
            raise data_layer.row_error(
                source, row, "QUESTION", f"pubid {pubid}: expected a non-empty string, got {question!r}"
            )
        contexts = record.get("CONTEXTS")
        if (
            not isinstance(contexts, list)
            or not contexts
            or not all(isinstance(c, str) and c.strip() for c in contexts)
        ):
            raise data_layer.row_error(
                source,
                row,
                "CONTEXTS",
                f"pubid {pubid}: expected a non-empty list of non-empty strings, got {contexts!r:.80}",
            )
        if record.get("final_decision") not in LABELS:
            raise data_layer.row_error(
                source,
                row,
                "final_decision",
                f"pubid {pubid}: {record.get('final_decision')!r} is not one of {', '.join(LABELS)}",
            )
    return raw


def split_items(items: Mapping[str, Mapping[str, Any]], items_source: str, test_ids: Any, ids_source: str) -> PubMedQA:
    """The official test split and the train pool, with both answer counts asserted."""
    if not isinstance(test_ids, dict):
        raise data_layer.DataError(
            f"{ids_source}: expected a JSON object {{pubid: answer}}, got {type(test_ids).__name__}"
        )
    for row, (pubid, label) in enumerate(test_ids.items(), start=1):
        if pubid not in items:
            raise data_layer.row_error(ids_source, row, None, f"pubid {pubid} is not an item of {items_source}")
        if label != items[pubid]["final_decision"]:
            raise data_layer.row_error(
                ids_source,
                row,
                None,
                f"pubid {pubid}: test label {label!r} differs from "
                f"final_decision {items[pubid]['final_decision']!r} in {items_source}",
            )
    test = tuple(Item(pubid, items[pubid]) for pubid in test_ids)
    train = tuple(Item(pubid, record) for pubid, record in items.items() if pubid not in test_ids)
    data_layer.require_counts(Counter(item.answer for item in test), SPLIT_COUNTS, ids_source, "test answer")
    data_layer.require_counts(
        Counter(item.answer for item in train),
        SPLIT_COUNTS,
        items_source,
        f"train-pool answer (items not in {TEST_IDS_FILE})",
    )
    return PubMedQA(test, train, f"{items_source} + {ids_source}")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise data_layer.DataError(f"{path}: file not found (expected {LOCAL_LAYOUT})") from exc
    except json.JSONDecodeError as exc:
        raise data_layer.DataError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc


@data_layer.cached_on_file
def _read_items(path: Path) -> dict[str, Mapping[str, Any]]:
    return validate_items(_read_json(path), str(path))


@data_layer.cached_on_file
def _read_test_ids(path: Path) -> Any:
    return _read_json(path)


def load_local(folder: Path) -> PubMedQA:
    items_path, ids_path = folder / ITEMS_FILE, folder / TEST_IDS_FILE
    for path in (items_path, ids_path):
        if not path.is_file():
            raise data_layer.DataError(f"{path}: file not found (expected {LOCAL_LAYOUT})")
    return split_items(_read_items(items_path), str(items_path), _read_test_ids(ids_path), str(ids_path))


def records_from_hub(rows: Sequence[Mapping[str, Any]], source: str) -> dict[str, dict[str, Any]]:
    """The hub's ``pqa_labeled`` rows (pubid, question, context{contexts, labels, meshes, ...},
    long_answer, final_decision) in ori_pqal.json's schema."""
    records = {}
    for row, hub_row in enumerate(rows, start=1):
        context = hub_row.get("context")
        if not isinstance(context, Mapping) or "contexts" not in context:
            raise data_layer.row_error(source, row, "context", "expected an object with the list 'contexts'")
        records[str(hub_row.get("pubid"))] = {
            "QUESTION": hub_row.get("question"),
            "CONTEXTS": list(context["contexts"]),
            "LABELS": list(context.get("labels") or []),
            "MESHES": list(context.get("meshes") or []),
            "YEAR": None,
            "final_decision": hub_row.get("final_decision"),
            "LONG_ANSWER": hub_row.get("long_answer"),
        }
    return records


def load(data_dir: str | None = None) -> PubMedQA:
    """The validated split from ``data_dir``, ``$MEDEVAL_DATA_DIR`` or the pinned hub + GitHub copies."""
    folder = data_layer.local_benchmark_dir(BENCHMARK, data_dir)
    if folder is not None:
        return load_local(folder)
    rows, label = data_layer.load_hub_rows(HUB, BENCHMARK, LOCAL_LAYOUT)
    from ..files import cache_dir

    ids_path = data_layer.download_pinned_file(
        TEST_IDS_URL,
        cache_dir() / BENCHMARK / UPSTREAM_COMMIT / TEST_IDS_FILE,
        BENCHMARK,
        LOCAL_LAYOUT,
        sha256=TEST_IDS_SHA256,
    )
    return split_items(validate_items(records_from_hub(rows, label), label), label, _read_json(ids_path), TEST_IDS_URL)


# ----------------------------------------------------------------------------- the frozen n100


def largest_remainder_quotas(counts: Mapping[str, int], size: int) -> dict[str, int]:
    """Seats per class proportional to ``counts`` (Hamilton's method); equal remainders go to the
    class listed first."""
    total = sum(counts.values())
    exact = {label: Fraction(size * n, total) for label, n in counts.items()}
    quotas = {label: math.floor(share) for label, share in exact.items()}
    order = sorted(counts, key=lambda label: (-(exact[label] - quotas[label]), list(counts).index(label)))
    for label in order[: size - sum(quotas.values())]:
        quotas[label] += 1
    return quotas


def hash_rank(pubid: str, seed: int = N100_SEED) -> str:
    return hashlib.sha256(f"{seed}:{pubid}".encode("utf-8")).hexdigest()


def evaluation_order(items: Sequence[Item]) -> tuple[Item, ...]:
    """Items sorted by their seeded hash rank. test_ground_truth.json lists all yes items, then no,
    then maybe, so in file order ``--limit N`` would see only yes items; in this order any prefix is
    a seeded random sample, and the order depends on nothing but the pubids."""
    return tuple(sorted(items, key=lambda item: (hash_rank(item.pubid), item.pubid)))


def select_n100(test: Sequence[Item]) -> tuple[Item, ...]:
    """The frozen stratified 100, in the order of ``test`` (algorithm in the task README)."""
    counts = Counter(item.answer for item in test)
    quotas = largest_remainder_quotas({label: counts[label] for label in LABELS}, N100_SIZE)
    chosen = set()
    for label in LABELS:
        ranked = sorted(
            (item for item in test if item.answer == label), key=lambda item: (hash_rank(item.pubid), item.pubid)
        )
        chosen.update(item.pubid for item in ranked[: quotas[label]])
    return tuple(item for item in test if item.pubid in chosen)


# ----------------------------------------------------------------------------- answers


def predicted_label(loglikelihoods: Sequence[float]) -> str:
    """The choice with the highest log-likelihood, in LABELS order; an exact tie (common in bf16)
    goes to the earliest of yes, no, maybe. A NaN score means no answer (INVALID)."""
    values = [float(v) for v in loglikelihoods]
    if len(values) != len(LABELS):
        raise ValueError(f"expected {len(LABELS)} log-likelihoods (yes, no, maybe), got {len(values)}")
    if any(math.isnan(v) for v in values):
        return INVALID
    best = max(values)
    return LABELS[values.index(best)]


def is_tied(loglikelihoods: Sequence[float]) -> bool:
    values = [float(v) for v in loglikelihoods]
    return values.count(max(values)) > 1


_LEADING_ANSWER = re.compile(r"^\W*(?:(?:final\s+)?answer\W*(?:is\W*)?)?(yes|no|maybe)\b", re.IGNORECASE)
_STATED_ANSWER = re.compile(r"\banswer\s*(?:is|would be|:)\W*(yes|no|maybe)\b", re.IGNORECASE)


def parse_answer(reply: str) -> str | None:
    """yes / no / maybe from a generated reply, else None.

    After ``<think>`` blocks are removed (an unclosed one means no answer), the reply must either
    start with the answer word (punctuation, markdown and an "Answer:" label may precede it) or
    state it as "answer is X" / "answer: X" (the first such statement counts).
    """
    text = strip_think(reply)
    if text is None:
        return None
    match = _LEADING_ANSWER.match(text) or _STATED_ANSWER.search(text)
    return match.group(1).lower() if match else None


def macro_f1_value(gold: Sequence[str], pred: Sequence[str]) -> float:
    return stats.macro_f1_of(gold, pred, LABELS)(np.arange(len(gold)))


# ----------------------------------------------------------------------------- lm-eval hooks


def custom_dataset(subset: str = "full", data_dir: str | None = None, **_: Any):
    """lm-eval ``custom_dataset`` hook: the test items of ``subset`` (full or n100) as split 'test'.

    lm-eval also passes the task metadata and the model arguments; they are ignored.
    """
    return data_layer.to_dataset_dict([item.doc() for item in load(data_dir).subset(subset)])


# The fields of bigbio's "source" schema, which lm-eval's built-in pubmedqa reads.
_SOURCE_FIELDS = (
    "QUESTION",
    "CONTEXTS",
    "LABELS",
    "MESHES",
    "YEAR",
    "reasoning_required_pred",
    "reasoning_free_pred",
    "final_decision",
    "LONG_ANSWER",
)


def builtin_custom_dataset(data_dir: str | None = None, **_: Any):
    """Our split in the schema lm-eval's built-in ``pubmedqa`` reads (bigbio's "source" schema:
    ori_pqal.json's fields): 'test' = the 500 official test items, 'train' = the 500-item train pool."""
    import datasets

    loaded = load(data_dir)

    def table(items: Sequence[Item]):
        rows = [{"pubid": item.pubid, **{k: item.record.get(k) for k in _SOURCE_FIELDS}} for item in items]
        return datasets.Dataset.from_list(rows)

    return datasets.DatasetDict({"train": table(loaded.train), "test": table(loaded.subset("full"))})


def process_results(doc: Mapping[str, Any], results: Sequence[tuple[float, bool]]) -> dict[str, Any]:
    """multiple_choice: ``results`` holds (log-likelihood, is_greedy) for yes, no, maybe."""
    pred = predicted_label([ll for ll, _ in results])
    gold = doc["final_decision"]
    return {"acc": float(pred == gold), "macro_f1": (gold, pred)}


def process_generation(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, Any]:
    pred = parse_answer(results[0])
    gold = doc["final_decision"]
    return {"acc": float(pred == gold), "macro_f1": (gold, pred or INVALID), "parseable": float(pred is not None)}


def macro_f1(pairs: Sequence[Sequence[str]]) -> float:
    """lm-eval aggregation over per-sample (gold, pred) pairs: macro-F1 over yes / no / maybe.

    A custom callable gets no lm-eval stderr (its built-in F1 bootstrap is 100,000 resamples);
    the report gives the stratified bootstrap CI.
    """
    gold, pred = zip(*pairs)
    return macro_f1_value(gold, pred)


# ----------------------------------------------------------------------------- report


def logged_loglikelihoods(sample: Mapping[str, Any]) -> list[float]:
    """yes / no / maybe log-likelihoods of a logged multiple_choice sample: ``filtered_resps`` holds
    one (log-likelihood, is_greedy) pair per choice (strings in lm-eval's samples file)."""
    return [float(pair[0]) for pair in sample["filtered_resps"]]


def _score_choice_sample(component: str):
    def score(task: str, sample: Mapping[str, Any]) -> ScoredItem:
        lls = logged_loglikelihoods(sample)
        gold, pred = sample["doc"]["final_decision"], predicted_label(lls)
        return ScoredItem(
            task=task,
            doc_id=int(sample["doc_id"]),
            doc_hash=sample.get("doc_hash", ""),
            component=component,
            gold=gold,
            pred=pred,
            correct=float(pred == gold),
            extras={"tied_top_choice": float(is_tied(lls))},
        )

    return score


def _score_generation_sample(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    pred = parse_answer(sample["filtered_resps"][0])
    gold = sample["doc"]["final_decision"]
    return ScoredItem(
        task=task,
        doc_id=int(sample["doc_id"]),
        doc_hash=sample.get("doc_hash", ""),
        component=SUBSETS["full"],
        gold=gold,
        pred=pred or INVALID,
        correct=float(pred == gold),
        extras={"parseable": float(pred is not None)},
    )


_COMMON_NOTES = (
    "Test set: the authors' 500 official test pubids (test_ground_truth.json); the probe and any few-shot "
    "use only the other 500.",
    "Bootstrap stratified by gold answer, so every resample keeps 276 yes / 169 no / 55 maybe (55/34/11 on n100).",
)
_CHOICE_NOTE = (
    "tied_top_choice: share of items whose best log-likelihood was shared by two answers "
    "(exact ties, common in bf16); the earliest of yes, no, maybe wins."
)


def _spec(name: str, title: str, task: str, component: str, size: int, score, notes: Sequence[str]) -> BenchmarkSpec:
    return BenchmarkSpec(
        name=name,
        title=title,
        task_prefix=task,
        task_names=frozenset({task}),
        score_sample=score,
        expected_counts={component: size},
        labels=LABELS,
        stratify_by=Stratum.GOLD,
        headline=Headline.ACCURACY_MICRO,
        reference={model: dict(numbers) for model, numbers in PUBLISHED.items()},
        notes=(*notes, *_COMMON_NOTES),
    )


REPORT_SPECS = (
    _spec(
        "pubmedqa_atlas",
        "PubMedQA, zero-shot log-likelihood (official test set)",
        "pubmedqa_atlas",
        SUBSETS["full"],
        SUBSET_SIZES["full"],
        _score_choice_sample(SUBSETS["full"]),
        (_CHOICE_NOTE,),
    ),
    _spec(
        "pubmedqa_atlas_n100",
        "PubMedQA, zero-shot log-likelihood (frozen stratified 100)",
        "pubmedqa_atlas_n100",
        SUBSETS["n100"],
        SUBSET_SIZES["n100"],
        _score_choice_sample(SUBSETS["n100"]),
        (_CHOICE_NOTE, "atlas-n100-v1 is a separate ranking: never compare it with full-set numbers."),
    ),
    _spec(
        "pubmedqa_atlas_gen",
        "PubMedQA, generative (official test set)",
        "pubmedqa_atlas_gen",
        SUBSETS["full"],
        SUBSET_SIZES["full"],
        _score_generation_sample,
        ("INVALID (no yes/no/maybe could be read) is counted wrong and kept in every denominator.",),
    ),
    _spec(
        "pubmedqa_lm_eval_builtin",
        "PubMedQA, lm-eval's built-in task definition on the official test set",
        "pubmedqa",
        "official-test-500",
        SUBSET_SIZES["full"],
        _score_choice_sample("official-test-500"),
        (_CHOICE_NOTE, "lm-eval's own pubmedqa prompt: every context section joined by newlines, no 300-word cut."),
    ),
)
