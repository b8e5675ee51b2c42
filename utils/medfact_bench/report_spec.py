"""What the report needs from MedFact-Bench: a logged sample re-scored by the tasks' own scoring function."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..scoring import BenchmarkSpec, Headline, ScoredItem, Stratum, logged_reply, scored_item
from .constants import BENCHMARK, LABELS, PUBLISHED_COUNTS, PUBLISHED_NUMBERS
from .parsing import score_reply


def score_sample(task: str, sample: Mapping[str, Any]) -> ScoredItem:
    """A logged lm-eval sample re-scored from its raw reply."""
    scored = score_reply(logged_reply(sample))
    doc = sample["doc"]
    return scored_item(
        task, sample, component=doc["dataset"], gold=doc["label"], pred=scored.label, extras=scored.rates()
    )


REPORT_SPECS = (
    BenchmarkSpec(
        name=BENCHMARK,
        title="MedFact-Bench",
        task_prefix=BENCHMARK,
        score_sample=score_sample,
        expected_counts=PUBLISHED_COUNTS,
        labels=LABELS,
        stratify_by=Stratum.COMPONENT,
        headline=Headline.ACCURACY_MACRO,
        reference=PUBLISHED_NUMBERS,
        notes=(
            "accuracy_macro is the paper's primary metric: the unweighted mean of the five component accuracies.",
            "INVALID (no valid <score>) is counted wrong and kept in every denominator.",
        ),
    ),
)
