"""One pass over a spec's logged samples of a run (:func:`walk_samples`, every spec's at once: :func:`walk_run`):
each scored by its benchmark's parser and masked of the run's credentials (and anything shaped like one) before
anything else reads it, with the settings, caveats, replies and token budgets a section's numbers need
(:mod:`.section`)."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .data import DataError
from .redaction import MASK, mask, mask_strings, secret_values
from .runs import Run, load_run
from .samples import logged_generation_kwargs, logged_reply
from .scoring import BenchmarkSpec, ScoredItem

# The item's own fields that hold text, in the order ``redacted`` names them (then details.<key>, in details order).
_TEXTS = ("prompt", "reply", "choices", "gold", "pred", "parse_step", "invalid_reason", "item_id")


class _Masker:
    """:func:`.redaction.mask` with the run's credentials, remembering its verdict on short texts: labels, parse
    steps and choice texts recur in every item."""

    SHORT = 256  # characters; longer texts (prompts, replies) are rarely repeated

    def __init__(self, secrets: set[str]):
        self.secrets = secrets
        self.seen: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        if len(text) > self.SHORT:
            return mask(text, self.secrets)
        found = self.seen.get(text)
        if found is None:
            found = self.seen[text] = mask(text, self.secrets)
        return found


def _redacted(item: ScoredItem, masker: _Masker) -> ScoredItem:
    """``item`` with every text (and any string in its ``details``) masked of the run's credentials and anything
    shaped like one; ``item`` itself when nothing was masked. ``redacted`` names the fields a credential was masked
    in, before any named already."""
    changed = {}
    for name in _TEXTS:
        value = getattr(item, name)
        masked = _masked_texts(value, masker)
        if masked is not value:
            changed[name] = masked
    masked_details = {}
    for key, value in item.details.items():
        masked = _masked_texts(value, masker)
        if masked is not value:
            masked_details[key] = masked
    if not changed and not masked_details:
        return item
    names = (*changed, *(f"details.{key}" for key in masked_details), *item.redacted)
    if masked_details:
        changed["details"] = {key: masked_details.get(key, value) for key, value in item.details.items()}
    return replace(item, **changed, redacted=names)


def _masked_texts(value: Any, masker: _Masker) -> Any:
    """``value`` with each string in it (at any depth of dicts, lists and tuples; keys kept) masked; ``value``
    itself when none changed. A structure nested deeper than Python can walk is masked whole."""
    try:
        return _mask_strings(value, masker)
    except RecursionError:
        return MASK


def _mask_strings(value: Any, masker: _Masker) -> Any:
    if isinstance(value, str):
        masked = masker(value)
        return value if masked == value else masked
    if isinstance(value, Mapping):
        pairs = [(key, _mask_strings(item, masker)) for key, item in value.items()]
        if all(after is before for (_, after), before in zip(pairs, value.values())):
            return value
        return dict(pairs)
    if isinstance(value, (list, tuple)):
        items = [_mask_strings(item, masker) for item in value]
        if all(after is before for after, before in zip(items, value)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value


@dataclass
class Walk:
    """What one pass over a spec's samples gathers: the scored items (sorted by task and doc_id; every text masked),
    the distinct settings and caveats (unmasked), and each reply with its token budget (in file order)."""

    items: list[ScoredItem] = field(default_factory=list)
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    caveats: dict[str, None] = field(default_factory=dict)
    replies: list[str] = field(default_factory=list)
    budgets: list[int | None] = field(default_factory=list)


def _secrets(results: Mapping[str, Any]) -> set[str]:
    """The credentials in a run's model arguments (its results file's)."""
    config = results.get("config")
    return secret_values(config.get("model_args")) if isinstance(config, Mapping) else set()


def _owned(run: Run, spec: BenchmarkSpec) -> Iterator[tuple[str, int, Mapping[str, Any]]]:
    """The spec's samples of ``run`` in the order they are walked (tasks sorted, then file order): task, line number
    and sample."""
    for task in sorted(t for t in run.samples if spec.owns(t)):
        for number, sample in enumerate(run.samples[task], start=1):
            yield task, number, sample


def _scored(spec: BenchmarkSpec, task: str, sample: Mapping[str, Any]) -> ScoredItem:
    """A logged sample scored by ``spec``."""
    return replace(spec.score_sample(task, sample), item_id=spec.item_id_of(sample))


@dataclass(frozen=True)
class _Walked:
    """What the walk gathers from one sample (:class:`Walk`)."""

    item: ScoredItem | None  # every text masked; None when not scored
    settings: tuple[str, dict[str, Any]] | None  # the settings' key and values (unmasked)
    caveat: str | None
    reply: str  # unmasked, as logged
    budget: int | None


def _walked(
    path: Path, spec: BenchmarkSpec, task: str, number: int, sample: Mapping[str, Any], masker: _Masker, score: bool
) -> _Walked:
    """What the walk gathers from a spec's sample number ``number`` of ``task`` (read from the samples file
    ``path``)."""
    item = None
    if score:
        try:
            scored = _scored(spec, task, sample)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise DataError(f"{path}, line {number}: cannot score this sample ({exc!r})") from exc
        item = _redacted(scored, masker)
    settings = None
    if spec.settings_of is not None:
        values = dict(spec.settings_of(sample))
        settings = (json.dumps(values, sort_keys=True, default=str), values)
    caveat = None
    if spec.protocol.caveat_of is not None and isinstance(sample.get("doc"), Mapping):
        caveat = spec.protocol.caveat_of(sample["doc"]) or None
    reply = logged_reply(sample) if "filtered_resps" in sample else None
    budget = (logged_generation_kwargs(sample) or {}).get("max_gen_toks")
    return _Walked(
        item,
        settings,
        caveat,
        reply if isinstance(reply, str) else "",
        budget if isinstance(budget, int) and not isinstance(budget, bool) else None,
    )


def _gathered(walked: Sequence[_Walked]) -> Walk:
    walk = Walk()
    for one in walked:
        if one.item is not None:
            walk.items.append(one.item)
        if one.settings is not None:
            walk.settings.setdefault(*one.settings)
        if one.caveat is not None:
            walk.caveats.setdefault(one.caveat)
        walk.replies.append(one.reply)
        walk.budgets.append(one.budget)
    walk.items.sort(key=lambda item: (item.task, item.doc_id))
    return walk


def walk_run(run: Run, specs: Sequence[BenchmarkSpec], score: bool = True) -> list[Walk]:
    """Each spec's pass over its samples of ``run``, in the specs' order: each sample scored (``score``) from its
    logged reply, every text of its item masked of the run's credentials and anything shaped like a credential; its
    settings, caveat, reply and token budget."""
    masker = _Masker(_secrets(run.results))
    return [
        _gathered(
            [
                _walked(run.sample_files[task], spec, task, number, sample, masker, score)
                for task, number, sample in _owned(run, spec)
            ]
        )
        for spec in specs
    ]


def walk_samples(run: Run, spec: BenchmarkSpec, score: bool = True) -> Walk:
    """One spec's pass over its samples of ``run`` (:func:`walk_run`)."""
    return walk_run(run, [spec], score)[0]


def read_walked(path: str | os.PathLike, specs: Sequence[BenchmarkSpec]) -> tuple[Run, list[Walk], dict[str, int]]:
    """The run at ``path`` (:func:`.runs.load_run`) and each spec's pass over its samples (:func:`walk_run`), in one
    pass: each sample is walked as it is read, then let go, so that a run's samples are never all held. The run holds
    the samples only of the tasks a spec's extra section reads; the counts are every task's number of samples."""

    @functools.cache
    def owners(task: str) -> tuple[BenchmarkSpec, ...]:
        return tuple(spec for spec in specs if spec.owns(task))

    def held(task: str) -> bool:
        return any(spec.extra_section is not None for spec in owners(task))

    def reader(results: Mapping[str, Any]) -> Callable[[str, Path, int, dict[str, Any]], _Taken]:
        masker = _Masker(_secrets(results))

        def take(task: str, samples_file: Path, number: int, sample: dict[str, Any]) -> _Taken:
            walked: dict[str, _Walked | DataError] = {}
            for spec in owners(task):
                try:
                    walked[spec.name] = _walked(samples_file, spec, task, number, sample, masker, True)
                except DataError as exc:  # raised where the sample is one the run holds (its filter the one read)
                    walked[spec.name] = exc
            return _Taken(walked, sample if held(task) else None)

        return take

    run = load_run(path, reader)
    walks = []
    for spec in specs:
        found = []
        for task in sorted(t for t in run.samples if spec.owns(t)):
            for taken in run.samples[task]:
                walked = taken.walked[spec.name]
                if isinstance(walked, DataError):
                    raise walked
                found.append(walked)
        walks.append(_gathered(found))
    counts = {task: len(taken) for task, taken in run.samples.items()}
    samples = {task: [taken.sample for taken in taken_all] for task, taken_all in run.samples.items() if held(task)}
    return replace(run, samples=samples), walks, counts


@dataclass(frozen=True)
class _Taken:
    """What :func:`read_walked` keeps of a sample as it is read."""

    walked: dict[str, _Walked | DataError]  # by the name of each spec that owns its task
    sample: dict[str, Any] | None  # where a spec's extra section reads the run's samples


def masked(run: Run, value: Any) -> Any:
    """``value`` (a string, or strings at any depth) masked of the run's credentials and anything shaped like one."""
    return mask_strings(value, _secrets(run.results))
