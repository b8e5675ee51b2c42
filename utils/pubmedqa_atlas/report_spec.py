"""What the report computes for each PubMedQA task: the logged samples re-scored by :mod:`.parsing`.

The notes and CIs are described in lm_eval_tasks/pubmedqa_atlas/README.md ("Metrics").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import calibration, rotation
from ..calibration import Forecast
from ..samples import logged_loglikelihoods, logged_reply
from ..scoring import (
    BenchmarkSpec,
    BeyondAccuracy,
    ConfidenceSource,
    Headline,
    Protocol,
    Report,
    ScoredItem,
    ScoreSample,
    Stratum,
    scored_item,
)
from .constants import LABELS, PUBLISHED_NUMBERS, SUBSET_SIZES, SUBSETS
from .parsing import Verdict, score_choice, score_generation


def _item(
    task: str,
    sample: Mapping[str, Any],
    component: str,
    verdict: Verdict,
    forecast: Forecast | None = None,
    details: Mapping[str, Any] | None = None,
) -> ScoredItem:
    return scored_item(
        task,
        sample,
        component=component,
        gold=verdict.gold,
        pred=verdict.pred,
        extras=verdict.extras,
        details=details,
        parse_step=verdict.step,
        invalid_reason=verdict.invalid_reason,
        forecast=forecast,
    )


def _choice_scorer(component: str) -> ScoreSample:
    def score(task: str, sample: Mapping[str, Any]) -> ScoredItem:
        gold, loglikelihoods = sample["doc"]["final_decision"], logged_loglikelihoods(sample)
        verdict = score_choice(gold, loglikelihoods)
        return _item(
            task, sample, component, verdict, calibration.from_loglikelihoods(loglikelihoods, LABELS.index(gold))
        )

    return score


def _score_generation_sample(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    doc = sample["doc"]
    verdict = score_generation(doc["final_decision"], logged_reply(sample))
    # A rotated doc's rotation and the order its instruction named the answers in.
    found = rotation.details(doc)
    details = found | {"label_order": list(doc["label_order"])} if found else None
    return _item(task, sample, SUBSETS["full"], verdict, details=details)


def _gold_answer(item: ScoredItem) -> str:
    """PubMedQA's subgroups: the gold answer (accuracy per gold answer is each answer's recall)."""
    return f"gold {item.gold}"


def answer_position(item: ScoredItem) -> tuple[int, int | None] | None:
    """The generative instruction names the answers in LABELS' order ("yes, no or maybe"), or a rotated item's
    ``label_order``: their positions (None for a gold answer that is none of them)."""
    order = item.details.get("label_order", LABELS)
    if not isinstance(order, (list, tuple)) or sorted(order) != sorted(LABELS) or item.gold not in LABELS:
        return None
    return order.index(item.gold), order.index(item.pred) if item.pred in LABELS else None


def rotation_of(item: ScoredItem) -> rotation.Rotated | None:
    """A rotated item's question (its pubid), rotation and chosen answer (a label names itself in every order)."""
    if item.item_id is None:
        return None
    chosen = item.pred if item.pred in LABELS else None
    return rotation.read((item.task, item.item_id), item.details, chosen, bool(item.correct))


def rotated_settings_of(sample: Mapping[str, Any]) -> dict[str, Any]:
    """The rotated task's one setting: that the instruction's answer order was rotated (:mod:`..rotation`)."""
    return {"rotated": rotation.ROTATION in sample["doc"]}


_COMMON_NOTES = (
    "Test set: the authors' 500 official test pubids (test_ground_truth.json); the probe and any few-shot "
    "use only the other 500.",
    "Bootstrap stratified by gold answer, so every resample keeps 276 yes / 169 no / 55 maybe (55/34/11 on n100).",
)
_CHOICE_NOTE = (
    "tied_top_choice: share of items whose best log-likelihood was shared by two answers "
    "(exact ties, common in bf16); the earliest of yes, no, maybe wins."
)


def _spec(
    name: str,
    title: str,
    task: str,
    component: str,
    size: int,
    score: ScoreSample,
    notes: Sequence[str],
    separate_ranking: str | None = None,
    published_items: int | None = None,
    confidence_source: ConfidenceSource | None = ConfidenceSource.CHOICE_PROBABILITIES,
    shows_options: bool = False,
    rotated: bool = False,
) -> BenchmarkSpec:
    return BenchmarkSpec(
        name=name,
        title=title,
        task_names=frozenset({task}),
        score_sample=score,
        expected_counts={component: size * (len(LABELS) if rotated else 1)},
        settings_of=rotated_settings_of if rotated else None,
        item_id_fields=("pubid",),
        report=Report(
            headline=Headline.ACCURACY_MICRO, stratify_by=Stratum.GOLD, labels=LABELS, notes=(*notes, *_COMMON_NOTES)
        ),
        protocol=Protocol(
            reference={model: dict(numbers) for model, numbers in PUBLISHED_NUMBERS.items()},
            published_items=published_items,
            separate_ranking=rotation.NOT_PUBLISHED if rotated else separate_ranking,
        ),
        beyond_accuracy=BeyondAccuracy(
            confidence_source=confidence_source,
            subgroup_of=_gold_answer,
            # Only the generative prompt shows the options (its instruction names them in order).
            answer_position=answer_position if shows_options else None,
            position_names=LABELS if shows_options and not rotated else (),
            rotation_of=rotation_of if rotated else None,
            # The log-likelihood prompt shows no options: the chosen answers against the gold ones instead.
            answer_labels=() if shows_options else LABELS,
        ),
    )


REPORT_SPECS = (
    _spec(
        "pubmedqa_atlas",
        "PubMedQA, zero-shot log-likelihood (official test set)",
        "pubmedqa_atlas",
        SUBSETS["full"],
        SUBSET_SIZES["full"],
        _choice_scorer(SUBSETS["full"]),
        (_CHOICE_NOTE,),
    ),
    _spec(
        "pubmedqa_atlas_n100",
        "PubMedQA, zero-shot log-likelihood (frozen stratified 100)",
        "pubmedqa_atlas_n100",
        SUBSETS["n100"],
        SUBSET_SIZES["n100"],
        _choice_scorer(SUBSETS["n100"]),
        (_CHOICE_NOTE, "atlas-n100-v1 is a separate ranking: never compare it with full-set numbers."),
        separate_ranking="the frozen stratified 100 (atlas-n100-v1) is a ranking of its own, never comparable with "
        "the published full-set numbers",
        published_items=SUBSET_SIZES["full"],  # the published numbers are over the whole official test set
    ),
    _spec(
        "pubmedqa_atlas_gen",
        "PubMedQA, generative (official test set)",
        "pubmedqa_atlas_gen",
        SUBSETS["full"],
        SUBSET_SIZES["full"],
        _score_generation_sample,
        ("INVALID (no yes/no/maybe could be read) is counted wrong and kept in every denominator.",),
        confidence_source=None,
        shows_options=True,
    ),
    _spec(
        "pubmedqa_atlas_gen_rotated",
        "PubMedQA, generative (official test set), rotated answer order",
        "pubmedqa_atlas_gen_rotated",
        SUBSETS["full"],
        SUBSET_SIZES["full"],
        _score_generation_sample,
        (
            "INVALID (no yes/no/maybe could be read) is counted wrong and kept in every denominator.",
            "Rotated answer order: every item is asked three times, the instruction naming yes, no and maybe in "
            "each cyclic rotation of that order (three items per question: coverage counts items); positions are "
            "where the instruction named the gold and the chosen answers.",
        ),
        confidence_source=None,
        shows_options=True,
        rotated=True,
    ),
    _spec(
        "pubmedqa_lm_eval_builtin",
        "PubMedQA, lm-eval's built-in task definition on the official test set",
        "pubmedqa",
        "official-test-500",
        SUBSET_SIZES["full"],
        _choice_scorer("official-test-500"),
        (_CHOICE_NOTE, "lm-eval's own pubmedqa prompt: every context section joined by newlines, no 300-word cut."),
    ),
)
