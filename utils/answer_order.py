"""Answer order, from every run: does a multiple-choice section's choice depend on where an option was shown?

For every section whose spec says where each item's options were shown (:attr:`.BeyondAccuracy.answer_position`:
the gold answer's position and the chosen one, as indices in the order the model saw the options), from the
scored items, once:

- accuracy by the gold answer's position (over the items the section's accuracy counts), each with its exact
  (Clopper-Pearson) interval;
- the distribution of the chosen positions and of the gold positions (counts and shares, each share with its
  Clopper-Pearson interval), over the answered items;
- a goodness-of-fit test of the chosen positions against the gold positions' distribution on the same answered
  items ("the choice does not depend on position": a model that picks each answer, wherever it is shown, chooses
  positions as the gold answers lie): Pearson's chi-square when every expected count is at least 5, else the exact
  multinomial test (outcomes ordered by their probability) where the outcomes can be enumerated, else the same
  test by Monte-Carlo draws. A test the data cannot carry says why, with no p-value.

A test that rejects at :data:`ALPHA` sets ``position_bias``, which every page shows as a flag.

For a section whose prompt shows no options (:attr:`.BeyondAccuracy.answer_labels`: PubMedQA's log-likelihood
prompt), position means nothing: its answer distribution (:func:`answer_distribution`) gives the chosen answers'
distribution against the gold answers' over the answered items, with the same test of chosen against gold counts;
a rejection sets ``answer_bias``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import stats
from .scoring import INVALID, AccuracyOver, BenchmarkSpec, ScoredItem

ALPHA = 0.05
MIN_EXPECTED = 5  # the usual validity rule of the chi-square approximation
MAX_ENUMERATED = 200_000  # outcomes the exact test enumerates; beyond, Monte-Carlo
MONTE_CARLO_DRAWS = 20_000

CHI_SQUARE = "chi-square goodness of fit"
EXACT = "exact multinomial"
MONTE_CARLO = "Monte-Carlo multinomial"

NULL = "the chosen positions follow the gold positions' distribution (the choice does not depend on position)"
ANSWER_NULL = "the chosen answers follow the gold answers' distribution"

# What the test compares ("position" or "answer"): its null and why it may not be computable, in words.
_WORDS = {
    "position": {
        "null": NULL,
        "known": " with a known position",
        "one_gold": "every gold answer lies at one position: a choice by position and a choice by answer look the same",
        "no_gold": "a position was chosen where no gold answer lies: the gold distribution gives it no expected count",
    },
    "answer": {
        "null": ANSWER_NULL,
        "known": "",
        "one_gold": "every gold answer is the same answer: a distribution of one answer leaves nothing to test",
        "no_gold": "an answer was chosen that no gold answer is: the gold distribution gives it no expected count",
    },
}


def position_name(position: int, names: Sequence[str] = ()) -> str:
    """A position as pages show it: the spec's name for it, else its letter (A, B, ...)."""
    return names[position] if position < len(names) else chr(ord("A") + position)


def _share(count: int, n: int) -> dict[str, Any]:
    return {"count": count, "share": stats.exact_proportion(count, n).as_dict()}


def _outcomes(n: int, k: int) -> np.ndarray:
    """Every way to put ``n`` items in ``k`` positions, one row each, in ascending order of the rows (the first
    position's count first): built a position at a time from the ways to put fewer items in fewer positions."""

    def put(m: int, ways: list[np.ndarray]) -> np.ndarray:
        # m items in one more position ahead of those of ``ways`` (ways[i]: every way to put i items in them)
        return np.concatenate(
            [
                np.column_stack([np.full(len(ways[m - first]), first, dtype=np.int64), ways[m - first]])
                for first in range(m + 1)
            ]
        )

    ways = [np.array([[m]], dtype=np.int64) for m in range(n + 1)]  # the last position alone
    for _ in range(k - 2):
        ways = [put(m, ways) for m in range(n + 1)]
    return put(n, ways) if k > 1 else ways[n]


def _log_pmf(counts: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    """The multinomial log-probability of each row of counts (every probability > 0)."""
    from scipy.special import gammaln

    n = counts.sum(axis=-1)
    return gammaln(n + 1) - gammaln(counts + 1).sum(axis=-1) + (counts * np.log(probabilities)).sum(axis=-1)


def goodness_of_fit(chosen: Sequence[int], gold: Sequence[int], unit: str = "position") -> dict[str, Any]:
    """The test of chosen counts against the gold counts' distribution (same categories, same total), the
    categories being positions or answers (``unit``). Categories neither side has are left out. Not computable
    (``p_value`` None, with ``reason``): no item, one item, every gold answer in one category (for positions:
    position and answer cannot be told apart), or a chosen category no gold answer is in (the null gives it no
    expected count)."""
    words = _WORDS[unit]
    chosen_counts, gold_counts = np.asarray(chosen, dtype=np.int64), np.asarray(gold, dtype=np.int64)
    n = int(gold_counts.sum())
    out: dict[str, Any] = {"null": words["null"], "alpha": ALPHA, "n": n, "method": None, "p_value": None}
    if int(chosen_counts.sum()) != n:
        raise ValueError(f"{int(chosen_counts.sum())} chosen {unit}s against {n} gold {unit}s")
    reason = None
    if n < 2:
        reason = f"{n} answered item{'s' if n != 1 else ''}{words['known']}: nothing to test"
    elif int(np.count_nonzero(gold_counts)) < 2:
        reason = words["one_gold"]
    elif np.any((gold_counts == 0) & (chosen_counts > 0)):
        reason = words["no_gold"]
    if reason is not None:
        return out | {"reason": reason}
    kept = gold_counts > 0
    observed, probabilities = chosen_counts[kept], gold_counts[kept] / n
    expected = gold_counts[kept].astype(float)  # n times the gold shares, exactly
    k = len(observed)
    statistic = float(np.sum((observed - expected) ** 2 / expected))
    out |= {"statistic": statistic, "df": k - 1}
    if np.all(expected >= MIN_EXPECTED):
        from scipy.stats import chi2

        p_value = float(chi2.sf(statistic, k - 1))
        out["method"] = CHI_SQUARE
    else:
        observed_log = float(_log_pmf(observed, probabilities))
        tolerance = 1e-7 * max(1.0, abs(observed_log))
        if math.comb(n + k - 1, k - 1) <= MAX_ENUMERATED:
            outcomes = _outcomes(n, k)
            logs = _log_pmf(outcomes, probabilities)
            p_value = float(np.exp(logs[logs <= observed_log + tolerance]).sum())
            out["method"] = EXACT
        else:
            # Drawn over the categories in the order of their probabilities, so that their names (which position
            # is A) cannot move the p-value: the observed outcome's probability does not depend on them either.
            ordered = np.sort(probabilities)
            draws = np.random.default_rng(stats.SEED).multinomial(n, ordered, size=MONTE_CARLO_DRAWS)
            extreme = int(np.sum(_log_pmf(draws, ordered) <= observed_log + tolerance))
            p_value = (1 + extreme) / (1 + MONTE_CARLO_DRAWS)
            out |= {"method": MONTE_CARLO, "draws": MONTE_CARLO_DRAWS, "seed": stats.SEED}
        out["ordering"] = (
            "outcomes ordered by their probability under the null (the statistic is Pearson's, for reference)"
        )
    p_value = min(1.0, p_value)
    return out | {"p_value": p_value, "rejects": p_value < ALPHA}


def summary(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """A section's answer order (report.json's ``answer_order``)."""
    position_of = spec.beyond_accuracy.answer_position
    if position_of is None:
        raise ValueError(f"{spec.name} declares no answer positions")
    names = tuple(spec.beyond_accuracy.position_names)
    known = [(item, position_of(item)) for item in items]
    unknown = sum(positions is None for _, positions in known)
    placed = [(item, positions) for item, positions in known if positions is not None]
    answered = [(item, positions) for item, positions in placed if positions[1] is not None]
    answered_only = spec.report.accuracy_over is AccuracyOver.ANSWERED
    counted = [(item, positions) for item, positions in placed if not answered_only or item.pred != INVALID]
    width = max((max(g, -1 if c is None else c) + 1 for _, (g, c) in placed), default=len(names))
    positions = [position_name(p, names) for p in range(width)]
    by_gold: dict[str, Any] = {}
    for p, name in enumerate(positions):
        group = [item for item, (gold, _) in counted if gold == p]
        right = int(sum(item.correct for item in group))
        by_gold[name] = {"n": len(group), "accuracy": _share(right, len(group))["share"] if group else None}
    gold_counts = [sum(g == p for _, (g, _) in answered) for p in range(width)]
    chosen_counts = [sum(c == p for _, (_, c) in answered) for p in range(width)]
    n = len(answered)
    test = goodness_of_fit(chosen_counts, gold_counts)
    return {
        "positions": positions,
        "position": "the option's index in the order the model saw the options",
        "accuracy_over": "answered" if answered_only else "all",
        "n_items": len(items),
        "n_answered": n,
        "unknown_position": unknown,
        "accuracy_by_gold_position": by_gold,
        "gold_positions": {name: _share(gold_counts[p], n) if n else {"count": 0} for p, name in enumerate(positions)},
        "chosen_positions": {
            name: _share(chosen_counts[p], n) if n else {"count": 0} for p, name in enumerate(positions)
        },
        "test": test,
        "position_bias": bool(test.get("rejects")),
    }


def answer_distribution(items: Sequence[ScoredItem], spec: BenchmarkSpec) -> dict[str, Any]:
    """A section's chosen answers against its gold answers, over the answered items (report.json's
    ``answer_distribution``). An answered item whose gold or chosen answer is none of the labels is counted in
    ``other_answer`` and left out of the distributions."""
    labels = tuple(spec.beyond_accuracy.answer_labels)
    if not labels:
        raise ValueError(f"{spec.name} declares no answer labels")
    answered = [item for item in items if item.pred != INVALID]
    known = [item for item in answered if item.gold in labels and item.pred in labels]
    gold_counts = [sum(item.gold == label for item in known) for label in labels]
    chosen_counts = [sum(item.pred == label for item in known) for label in labels]
    n = len(known)
    test = goodness_of_fit(chosen_counts, gold_counts, unit="answer")
    return {
        "labels": list(labels),
        "n_items": len(items),
        "n_answered": n,
        "other_answer": len(answered) - n,
        "gold_answers": {label: _share(gold_counts[i], n) if n else {"count": 0} for i, label in enumerate(labels)},
        "chosen_answers": {label: _share(chosen_counts[i], n) if n else {"count": 0} for i, label in enumerate(labels)},
        "test": test,
        "answer_bias": bool(test.get("rejects")),
    }


def _flag(part: Any, key: str, unit: str) -> str | None:
    if not isinstance(part, dict) or not part.get(key):
        return None
    test = part["test"]
    return (
        f"{key.replace('_', ' ')}: the chosen {unit}s differ from the gold {unit}s' distribution "
        f"({test['method']}, p = {test['p_value']:.2g} < {test['alpha']})"
    )


def format_flag(answer_order: Any) -> str | None:
    """The one line every page shows when the position test rejects; None otherwise."""
    return _flag(answer_order, "position_bias", "position")


def format_answer_flag(answer_distribution: Any) -> str | None:
    """The one line every page shows when the answer test rejects; None otherwise."""
    return _flag(answer_distribution, "answer_bias", "answer")


def format_test(test: Any) -> str:
    """The test in words (every page): its method, statistic and p-value, or why it could not be computed."""
    if not isinstance(test, dict):
        return "n/a"
    if test.get("p_value") is None:
        return f"not computable: {test.get('reason')}"
    method = test["method"]
    if method == MONTE_CARLO:
        method += f" ({test['draws']:,} draws, seed {test['seed']})"
    return (
        f"{method} over {test['n']} answered items: chi-square {test['statistic']:.2f}, df {test['df']}, "
        f"p = {test['p_value']:.3g}"
    )
