"""What the report needs from MedFact-Bench: a logged sample re-scored by the tasks' own scoring function."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..samples import logged_generation_kwargs, logged_reply
from ..scoring import BenchmarkSpec, Headline, Protocol, Report, ScoredItem, scored_item
from .constants import LABELS, MAX_NEW_TOKENS, NAME, PUBLISHED_COUNTS, PUBLISHED_NUMBERS
from .demo_data import demo_label_note
from .parsing import SCORE_BLOCK, score_reply


def score_sample(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    """A logged lm-eval sample re-scored from its raw reply (a reply that is not text is a TypeError)."""
    reply = logged_reply(sample)
    if not isinstance(reply, str):
        raise TypeError(f"the logged reply is {type(reply).__name__}, not text")
    scored = score_reply(reply)
    doc = sample["doc"]
    return scored_item(
        task,
        sample,
        component=doc["dataset"],
        gold=doc["label"],
        pred=scored.label,
        extras=scored.rates(),
        parse_step=SCORE_BLOCK if scored.score is not None else "",
        invalid_reason=scored.invalid_reason,
    )


def generation_settings(sample: Mapping[str, Any]) -> dict[str, Any]:
    """The score-moving generation settings of a logged sample, and whether they are the paper's.

    The paper generates greedily to end of sequence or 1,024 tokens; a stop string (e.g. a CLI
    ``--gen_kwargs until=...``) cuts the reply before it is scored.
    """
    settings = logged_generation_kwargs(sample)
    if settings is None:
        return {"generation": "not logged"}
    until = settings.get("until")
    stop_strings = [until] if isinstance(until, str) else until
    max_gen_toks, do_sample = settings.get("max_gen_toks"), settings.get("do_sample")
    return {
        "stop_strings": stop_strings,
        "max_gen_toks": max_gen_toks,
        "do_sample": do_sample,
        "paper_generation": stop_strings == [] and max_gen_toks == MAX_NEW_TOKENS and do_sample is False,
    }


REPORT_SPECS = (
    BenchmarkSpec(
        name=NAME,
        title="MedFact-Bench",
        task_prefix=NAME,
        score_sample=score_sample,
        expected_counts=PUBLISHED_COUNTS,
        settings_of=generation_settings,
        # The hub file has no id column: an item is its component and its 0-based row in the file (loader.py).
        item_id_fields=("dataset", "row"),
        report=Report(
            headline=Headline.ACCURACY_MACRO,
            labels=LABELS,
            notes=(
                "accuracy_macro is the paper's primary metric: the unweighted mean of the five component accuracies.",
                "INVALID (no valid <score>...</score>) is counted wrong and kept in every denominator.",
                "The whole reply is scored; paper_generation in the run section is false when the logged requests "
                "had a stop string, another token budget or sampling (a stop at </score> makes every reply INVALID: "
                "backends strip the stop string and the closing tag is required).",
            ),
        ),
        protocol=Protocol(
            reference=PUBLISHED_NUMBERS, settings={"paper_generation": True}, caveat_of=lambda doc: demo_label_note(doc)
        ),
    ),
)
