"""One pass over a spec's logged samples of a run (:func:`walk_samples`): each scored by its benchmark's parser
and masked of the run's credentials (and anything shaped like one) before anything else reads it, with the settings,
caveats, replies and token budgets a section's numbers need (:mod:`.section`).

A section's numbers never read an item's prompt or reply, the largest texts by far: those are masked meanwhile
(:class:`TextsMasking`), in another process where the machine has the cores."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .data import DataError
from .machine import ChangesMeanwhile
from .redaction import MASK, mask, mask_strings, secret_values
from .runs import Run
from .samples import logged_generation_kwargs, logged_reply
from .scoring import BenchmarkSpec, ScoredItem

# The item's own fields that hold text, in the order ``redacted`` names them (then details.<key>, in details order):
# its prompt and reply (masked by :class:`TextsMasking`), then the others (masked by :func:`walk_samples`).
_TEXTS = ("prompt", "reply")
_LABELS = ("choices", "gold", "pred", "parse_step", "invalid_reason", "item_id")


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


def _redacted(item: ScoredItem, masker: _Masker, fields: tuple[str, ...], details: bool) -> ScoredItem:
    """``item`` with the texts of ``fields`` (and any string in its ``details``) masked of the run's credentials and
    anything shaped like one; ``item`` itself when nothing was masked. ``redacted`` names the fields a credential was
    masked in: these, before those named already (the prompt and reply are masked last and named first)."""
    changed = {}
    for name in fields:
        value = getattr(item, name)
        masked = _masked_texts(value, masker)
        if masked is not value:
            changed[name] = masked
    masked_details = {}
    for key, value in item.details.items() if details else ():
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
    """What one pass over a spec's samples gathers: the scored items (sorted by task and doc_id; every text masked
    but their prompts and replies, :class:`TextsMasking`) with each one's place in the pass (``order``), the distinct
    settings and caveats (unmasked), and each reply with its token budget (in file order)."""

    items: list[ScoredItem] = field(default_factory=list)
    order: list[int] = field(default_factory=list)  # each item's place among the samples as walked (tasks sorted)
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    caveats: dict[str, None] = field(default_factory=dict)
    replies: list[str] = field(default_factory=list)
    budgets: list[int | None] = field(default_factory=list)


def _secrets(run: Run) -> set[str]:
    config = run.results.get("config")
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


def walk_samples(run: Run, spec: BenchmarkSpec, score: bool = True) -> Walk:
    """One pass over the spec's samples of ``run``: each scored (``score``) from its logged reply, its texts but its
    prompt and reply masked of the run's credentials and anything shaped like a credential; its settings, caveat,
    reply and token budget."""
    walk = Walk()
    masker = _Masker(_secrets(run))
    for task, number, sample in _owned(run, spec):
        if score:
            try:
                item = _scored(spec, task, sample)
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                raise DataError(f"{run.sample_files[task]}, line {number}: cannot score this sample ({exc!r})") from exc
            walk.items.append(_labels_masked(item, masker))
        if spec.settings_of is not None:
            values = dict(spec.settings_of(sample))
            walk.settings.setdefault(json.dumps(values, sort_keys=True, default=str), values)
        if spec.protocol.caveat_of is not None and isinstance(sample.get("doc"), Mapping):
            caveat = spec.protocol.caveat_of(sample["doc"])
            if caveat:
                walk.caveats.setdefault(caveat)
        reply = logged_reply(sample) if "filtered_resps" in sample else None
        walk.replies.append(reply if isinstance(reply, str) else "")
        budget = (logged_generation_kwargs(sample) or {}).get("max_gen_toks")
        walk.budgets.append(budget if isinstance(budget, int) and not isinstance(budget, bool) else None)
    walk.order = sorted(range(len(walk.items)), key=lambda place: (walk.items[place].task, walk.items[place].doc_id))
    walk.items = [walk.items[place] for place in walk.order]
    return walk


def _labels_masked(item: ScoredItem, masker: _Masker) -> ScoredItem:
    """``item`` as the walk holds it: every text masked but its prompt and reply (both processes of
    :class:`TextsMasking` start from it)."""
    return _redacted(item, masker, _LABELS, details=True)


def _texts_change(item: ScoredItem, masker: _Masker) -> ScoredItem | None:
    """``item`` with its prompt and reply masked too; None when neither held anything to mask."""
    masked = _redacted(item, masker, _TEXTS, details=False)
    return None if masked is item else masked


class TextsMasking:
    """The prompts and replies of the items the ``specs`` score in ``run``, masked (the items' other texts are masked
    as they are walked, :func:`walk_samples`): begun at once by another process where the machine has the cores,
    which scores and masks the samples itself from the last one walked, while this one walks them and computes the
    sections' numbers, which never read a prompt or reply; :meth:`items` masks the rest here, from the first
    (:class:`.machine.ChangesMeanwhile`)."""

    def __init__(self, run: Run, specs: Sequence[BenchmarkSpec]) -> None:
        self._masker = masker = _Masker(_secrets(run))
        owned = [(spec, task, sample) for spec in specs for task, _, sample in _owned(run, spec)]
        self._n = len(owned)

        def there(place: int) -> ScoredItem | None:  # holds no reference to self: no cycle keeps the samples
            spec, task, sample = owned[place]
            return _texts_change(_labels_masked(_scored(spec, task, sample), masker), masker)

        self._changes = ChangesMeanwhile(len(owned), there)

    def items(self, walks: Sequence[Walk]) -> list[list[ScoredItem]]:
        """Each walk's items (the walks of the ``specs``, in their order) with their prompts and replies masked."""
        walked: list[ScoredItem] = []  # every item in the order the samples were walked, all specs
        places: list[list[int]] = []  # each walk's items' places in ``walked``
        for walk in walks:
            start = len(walked)
            walked += walk.items  # then each at its place
            for place, item in zip(walk.order, walk.items):
                walked[start + place] = item
            places.append([start + place for place in walk.order])
        if len(walked) != self._n:
            raise ValueError(f"{len(walked)} items walked, but the specs own {self._n} samples")
        changes = self._changes.result(lambda place: _texts_change(walked[place], self._masker))
        return [
            [changes.get(place, item) for place, item in zip(walk_places, walk.items)]
            for walk_places, walk in zip(places, walks)
        ]

    def __enter__(self) -> TextsMasking:
        return self

    def __exit__(self, *exc: object) -> None:
        self._changes.__exit__(*exc)


def masked(run: Run, value: Any) -> Any:
    """``value`` (a string, or strings at any depth) masked of the run's credentials and anything shaped like one."""
    return mask_strings(value, _secrets(run))
