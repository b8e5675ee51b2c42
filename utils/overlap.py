"""Items counted once: which items of one benchmark component are also items of another.

Each benchmark that asks questions declares how to read its items for this check (``Benchmark.overlap_items``):
each as an :class:`Item` (benchmark, component, item id, question text, the ids it shares with other datasets,
such as a PubMed id). Two items match when they share such an id, or when their questions are equal once
normalised (:func:`normalise`; exact equality of the whole normalised text, never a prefix or a fuzzy score).
:func:`find_overlaps` counts, for every ordered pair of components, the items of the first that match an item of
the second; :func:`check` runs it over a data directory. A report names the items two sections of one run share
(:func:`run_overlaps`, by the ids each benchmark's scored items carry: ``Benchmark.shared_ids``). The counts over the shipped data are stated in
lm_eval_tasks/millerqa/README.md and lm_eval_tasks/pubmedqa_atlas/README.md ("Overlap with ...").
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PMID = "pmid"  # the namespace of a PubMed id among an item's shared ids


@dataclass(frozen=True)
class Item:
    benchmark: str  # its benchmark's name, e.g. "millerqa"
    component: str  # its file or split within the benchmark, e.g. "pubmedqa" or "test"
    item_id: str
    question: str  # as the benchmark gives it; compared after normalise()
    shared_ids: tuple[tuple[str, str], ...] = ()  # (namespace, id), e.g. (PMID, "21645374")

    @property
    def source(self) -> tuple[str, str]:
        return self.benchmark, self.component


def normalise(text: str) -> str:
    """Unicode NFKC, casefolded, punctuation (Unicode category P*) deleted, whitespace runs made one space, stripped.

    One pass over the characters: linear in the length, and a verdict (a string) for any string.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join("".join(c for c in folded if not unicodedata.category(c).startswith("P")).split())


def keys(item: Item) -> tuple[tuple[str, str], ...]:
    """What an item matches on: its shared ids and its normalised question (none when that is empty)."""
    text = normalise(item.question)
    return tuple(item.shared_ids) + ((("text", text),) if text else ())


def match_kinds(left: Item, right: Item) -> frozenset[str]:
    """How two items match: ``"id"`` (a shared id in common), ``"text"`` (equal normalised questions), both or none."""
    common = set(keys(left)) & set(keys(right))
    return frozenset("text" if namespace == "text" else "id" for namespace, _ in common)


@dataclass(frozen=True)
class Overlap:
    """The items of ``source`` that match at least one item of ``other`` (both (benchmark, component))."""

    source: tuple[str, str]
    other: tuple[str, str]
    by_id: int  # items sharing an id with an item of ``other``
    by_text: int  # items whose normalised question is one of ``other``'s
    matched: int  # items matching either way
    total: int  # items of ``source``
    item_ids: tuple[str, ...]  # the matched items' ids, in ``source``'s order


def find_overlaps(items: Iterable[Item]) -> tuple[Overlap, ...]:
    """Every ordered pair of distinct components with at least one match, sorted by (source, other).

    Items are indexed by key once, so the work is linear in the items and their keys, plus the matches found.
    """
    keyed = [(item, keys(item)) for item in items]
    sources_of: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    for item, item_keys in keyed:
        for key in item_keys:
            sources_of[key].add(item.source)
    totals: dict[tuple[str, str], int] = defaultdict(int)
    found: dict[tuple[tuple[str, str], tuple[str, str]], dict[str, list[str]]] = defaultdict(
        lambda: {"id": [], "text": [], "matched": []}
    )
    for item, item_keys in keyed:
        totals[item.source] += 1
        kinds_by_other: dict[tuple[str, str], set[str]] = defaultdict(set)
        for key in item_keys:
            for other in sources_of[key] - {item.source}:
                kinds_by_other[other].add("text" if key[0] == "text" else "id")
        for other, kinds in kinds_by_other.items():
            lists = found[item.source, other]
            for kind in kinds:
                lists[kind].append(item.item_id)
            lists["matched"].append(item.item_id)
    return tuple(
        Overlap(
            source,
            other,
            len(lists["id"]),
            len(lists["text"]),
            len(lists["matched"]),
            totals[source],
            tuple(lists["matched"]),
        )
        for (source, other), lists in sorted(found.items())
    )


@dataclass(frozen=True)
class Check:
    """The check over one data directory: the items read per component, the overlaps, and what was not read."""

    counts: dict[tuple[str, str], int]
    overlaps: tuple[Overlap, ...]
    left_out: tuple[str, ...]  # "<benchmark>: why", for each benchmark or component not read

    def between(self, source: tuple[str, str], other: tuple[str, str]) -> Overlap | None:
        return next((o for o in self.overlaps if o.source == source and o.other == other), None)


def check(data_dir: str | Path, names: Sequence[str] | None = None) -> Check:
    """Read every declared benchmark's items from ``data_dir`` (never downloaded) and find the overlaps.

    ``names`` restricts the check to those benchmarks. A benchmark without ``overlap_items``, or without its folder
    in ``data_dir``, is listed in ``left_out``, as is anything its reader could not read.
    """
    from .benchmarks import discover

    data_dir = Path(data_dir)
    items: list[Item] = []
    left_out: list[str] = []
    for benchmark in discover():
        if names is not None and benchmark.name not in names:
            continue
        if benchmark.overlap_items is None:
            left_out.append(f"{benchmark.name}: declares no question items to compare")
        elif not (data_dir / benchmark.data_folder).is_dir():
            left_out.append(f"{benchmark.name}: no folder {benchmark.data_folder} in {data_dir}")
        else:
            read, missing = benchmark.overlap_items(data_dir)
            items.extend(read)
            left_out.extend(f"{benchmark.name}: {why}" for why in missing)
    counts: dict[tuple[str, str], int] = defaultdict(int)
    for item in items:
        counts[item.source] += 1
    return Check(dict(counts), find_overlaps(items), tuple(left_out))


def run_overlaps(sections: Mapping[str, tuple[str, Sequence[Sequence[tuple[str, str]]]]]) -> list[dict[str, Any]]:
    """The items two sections of one run share, for every pair of sections of different benchmarks that share any.

    ``sections``: name -> (its benchmark, each item's shared ids). Per pair (names in sorted order): the namespaces
    of the ids in common (``by``), and per section how many of its items share one (``items``) of how many (``of``).
    """
    names = sorted(sections)
    ids = {name: {key for item in sections[name][1] for key in item} for name in names}
    found = []
    for index, a in enumerate(names):
        for b in names[index + 1 :]:
            common = ids[a] & ids[b]
            if sections[a][0] == sections[b][0] or not common:
                continue
            found.append(
                {
                    "sections": [a, b],
                    "by": sorted({namespace for namespace, _ in common}),
                    "items": {
                        name: sum(bool(common.intersection(item)) for item in sections[name][1]) for name in (a, b)
                    },
                    "of": {name: len(sections[name][1]) for name in (a, b)},
                }
            )
    return found
