"""One pass over a spec's logged samples of a run (:func:`walk_samples`): each scored by its benchmark's parser
and masked of the run's credentials (and anything shaped like one) before anything else reads it, with the settings,
caveats, replies and token budgets a section's numbers need (:mod:`.section`).

A section's numbers never read an item's prompt or reply, the largest texts by far: those are masked meanwhile
(:func:`texts_masked`), in another process where the machine has the cores."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from .data import DataError
from .machine import MapMeanwhile
from .redaction import MASK, mask, mask_strings, secret_values
from .runs import Run
from .samples import logged_generation_kwargs, logged_reply
from .scoring import BenchmarkSpec, ScoredItem

# The item's own fields that hold text, in the order ``redacted`` names them (then details.<key>, in details order):
# its prompt and reply (masked by :func:`texts_masked`), then the others (masked by :func:`walk_samples`).
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
    but their prompts and replies, :func:`texts_masked`), the distinct settings and caveats (unmasked), and each reply
    with its token budget (in file order)."""

    items: list[ScoredItem] = field(default_factory=list)
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    caveats: dict[str, None] = field(default_factory=dict)
    replies: list[str] = field(default_factory=list)
    budgets: list[int | None] = field(default_factory=list)


def _secrets(run: Run) -> set[str]:
    config = run.results.get("config")
    return secret_values(config.get("model_args")) if isinstance(config, Mapping) else set()


def _scored(spec: BenchmarkSpec, task: str, sample: Mapping[str, Any]) -> ScoredItem:
    """A logged sample scored by ``spec``."""
    return replace(spec.score_sample(task, sample), item_id=spec.item_id_of(sample))


def walk_samples(run: Run, spec: BenchmarkSpec, score: bool = True) -> Walk:
    """One pass over the spec's samples of ``run``: each scored (``score``) from its logged reply, its texts but its
    prompt and reply masked of the run's credentials and anything shaped like a credential; its settings, caveat,
    reply and token budget."""
    walk = Walk()
    for task in sorted(t for t in run.samples if spec.owns(t)):
        for number, sample in enumerate(run.samples[task], start=1):
            if score:
                try:
                    item = _scored(spec, task, sample)
                except (KeyError, TypeError, ValueError, IndexError) as exc:
                    raise DataError(
                        f"{run.sample_files[task]}, line {number}: cannot score this sample ({exc!r})"
                    ) from exc
                walk.items.append(item)
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
    masker = _Masker(_secrets(run))
    walk.items = [_redacted(item, masker, _LABELS, details=True) for item in walk.items]
    walk.items.sort(key=lambda item: (item.task, item.doc_id))
    return walk


def texts_masked(run: Run, items: list[ScoredItem]) -> MapMeanwhile[ScoredItem]:
    """``items`` (of :func:`walk_samples`) with their prompts and replies masked too, begun at once in another process
    where the machine has the cores (:class:`.machine.MapMeanwhile`: its ``result()``, in the items' order)."""
    return MapMeanwhile(partial(_redacted, masker=_Masker(_secrets(run)), fields=_TEXTS, details=False), items)


def masked(run: Run, value: Any) -> Any:
    """``value`` (a string, or strings at any depth) masked of the run's credentials and anything shaped like one."""
    return mask_strings(value, _secrets(run))
