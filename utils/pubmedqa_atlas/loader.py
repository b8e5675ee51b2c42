"""PubMedQA PQA-L on the authors' official split: reading and checking the files, the frozen n100, doc order.

Data sources and checks are described in lm_eval_tasks/pubmedqa_atlas/README.md (section "Data"), the
n100 and the document order in its sections "The frozen n100" and "Document order".
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from .. import data as data_layer
from .. import overlap
from ..scoring import ScoredItem
from .constants import (
    DATA_FOLDER,
    HUB,
    ITEMS_FILE,
    LABELS,
    LOCAL_LAYOUT,
    N100_SEED,
    N100_SIZE,
    NAME,
    PUBLISHED_COUNTS,
    SUBSETS,
    TEST_IDS_FILE,
    TEST_IDS_SHA256,
    TEST_IDS_URL,
    UPSTREAM_COMMIT,
)
from .prompts import context_of


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


# ----------------------------------------------------------------------------- validation

# Fields no prompt of ours shows, but lm-eval's built-in task receives (bigbio's "source" schema).
_OPTIONAL_TEXT_FIELDS = ("LONG_ANSWER", "YEAR", "reasoning_required_pred", "reasoning_free_pred")
_OPTIONAL_LIST_FIELDS = ("LABELS", "MESHES")


def validate_items(raw: Any, source: str) -> dict[str, Mapping[str, Any]]:
    """ori_pqal.json's object keyed by pubid; every item needs a question, contexts and a gold answer, and no text
    of it a lone surrogate (:func:`.data.refuse_lone_surrogates`)."""
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
                source, row, "QUESTION", f"pubid {pubid}: expected a non-empty string, got {question!r:.80}"
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
                f"pubid {pubid}: {record.get('final_decision')!r:.80} is not one of {', '.join(LABELS)}",
            )
        for name in _OPTIONAL_TEXT_FIELDS:
            if not isinstance(record.get(name), (str, type(None))):
                raise data_layer.row_error(
                    source, row, name, f"pubid {pubid}: expected a string or null, got {record[name]!r:.80}"
                )
        for name in _OPTIONAL_LIST_FIELDS:
            value = record.get(name)
            if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise data_layer.row_error(
                    source, row, name, f"pubid {pubid}: expected a list of strings or null, got {value!r:.80}"
                )
        data_layer.refuse_lone_surrogates(record, f"{source}, row {row} (pubid {pubid})")
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
                f"pubid {pubid}: test label {label!r:.80} differs from "
                f"final_decision {items[pubid]['final_decision']!r} in {items_source}",
            )
    test = tuple(Item(pubid, items[pubid]) for pubid in test_ids)
    train = tuple(Item(pubid, record) for pubid, record in items.items() if pubid not in test_ids)
    data_layer.require_counts(Counter(item.answer for item in test), PUBLISHED_COUNTS, ids_source, "test answer")
    data_layer.require_counts(
        Counter(item.answer for item in train),
        PUBLISHED_COUNTS,
        items_source,
        f"train-pool answer (items not in {TEST_IDS_FILE})",
    )
    return PubMedQA(test, train, f"{items_source} + {ids_source}")


# ----------------------------------------------------------------------------- sources


@data_layer.cached_on_file
def _read_items(path: Path) -> dict[str, Mapping[str, Any]]:
    # read_json: UTF-8 (a leading BOM is dropped), and a pubid given twice is an error, never a replaced item.
    return validate_items(data_layer.read_json(path), str(path))


@data_layer.cached_on_file
def _read_test_ids(path: Path) -> Any:
    return data_layer.read_json(path)


def load_local(folder: Path) -> PubMedQA:
    items_path, ids_path = folder / ITEMS_FILE, folder / TEST_IDS_FILE
    for path in (items_path, ids_path):
        if not path.is_file():
            raise data_layer.DataError(f"{path}: file not found (expected {LOCAL_LAYOUT})")
    return split_items(_read_items(items_path), str(items_path), _read_test_ids(ids_path), str(ids_path))


def records_from_hub(rows: Sequence[Mapping[str, Any]], source: str) -> dict[str, dict[str, Any]]:
    """The hub's ``pqa_labeled`` rows (pubid, question, context{contexts, labels, meshes, ...},
    long_answer, final_decision) in ori_pqal.json's schema; a pubid given twice names both rows."""
    records: dict[str, dict[str, Any]] = {}
    first_row: dict[str, int] = {}
    for row, hub_row in enumerate(rows, start=1):
        pubid = hub_row.get("pubid")
        if isinstance(pubid, bool) or not isinstance(pubid, (int, str)) or not str(pubid).strip():
            raise data_layer.row_error(source, row, "pubid", f"expected a PubMed id, got {pubid!r:.80}")
        pubid = str(pubid)
        if pubid in first_row:
            raise data_layer.row_error(
                source, row, "pubid", f"pubid {pubid} is also row {first_row[pubid]} (it would replace that item)"
            )
        context = hub_row.get("context")
        if not isinstance(context, Mapping) or not isinstance(context.get("contexts"), list):
            raise data_layer.row_error(source, row, "context", "expected an object with the list 'contexts'")
        first_row[pubid] = row
        records[pubid] = {
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
    folder = data_layer.local_benchmark_dir(DATA_FOLDER, data_dir)
    if folder is not None:
        return load_local(folder)
    rows, label = data_layer.load_hub_rows(HUB, DATA_FOLDER, LOCAL_LAYOUT)
    from ..files import cache_dir

    ids_path = data_layer.download_pinned_file(
        TEST_IDS_URL,
        cache_dir() / DATA_FOLDER / UPSTREAM_COMMIT / TEST_IDS_FILE,
        DATA_FOLDER,
        LOCAL_LAYOUT,
        sha256=TEST_IDS_SHA256,
    )
    items = validate_items(records_from_hub(rows, label), label)
    return split_items(items, label, data_layer.read_json(ids_path), TEST_IDS_URL)


# ----------------------------------------------------------------------------- the frozen n100 and the doc order


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


# ----------------------------------------------------------------------------- the overlap check

TEST, TRAIN_POOL = "test", "train_pool"  # the components of the overlap check (utils/overlap.py)


def overlap_items(data_dir: Path) -> tuple[list[overlap.Item], list[str]]:
    """The official test items and the train pool (the other 500 of PQA-L) of ``data_dir``, each with its pubid
    as its PMID."""
    split = load_local(data_layer.local_benchmark_dir(DATA_FOLDER, data_dir))
    return [
        overlap.Item(NAME, component, item.pubid, item.record["QUESTION"], ((overlap.PMID, item.pubid),))
        for component, items in ((TEST, split.test), (TRAIN_POOL, split.train))
        for item in items
    ], []


def shared_ids(item: ScoredItem) -> tuple[tuple[str, str], ...]:
    """A scored item's PMID (its pubid), which MillerQA's pubmedqa items share."""
    return ((overlap.PMID, item.item_id),) if item.item_id else ()
