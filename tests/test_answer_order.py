"""Answer order (utils/answer_order.py): the test of "the choice does not depend on position" on hand-worked counts,
its properties, and scripted runs through lm-eval's evaluator (a model that always answers A; one that chooses by the
option's text, wherever it is shown)."""

from __future__ import annotations

import hashlib
import itertools
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils import answer_order, scorecard
from lm_eval_tasks.utils.benchmarks import report_specs
from lm_eval_tasks.utils.report import to_markdown
from lm_eval_tasks.utils.results import score_path
from lm_eval_tasks.utils.scoring import INVALID, ScoredItem
from lm_eval_tasks.utils.text import md
from markupsafe import escape
from scipy import stats as scipy_stats

from tests.conftest import examples
from tests.runs import evaluated_run
from tests.scripted_lm import ScriptedLM

MEDEXQA = [f"medexqa_{code}" for code in ("be", "cls", "cp", "ot", "slp")]
MILLERQA_STEMS = ("mmlupro_med", "global_mmlu", "triage", "metamedqa", "medethicsqa")


def test_chi_square_hand_worked():
    # 60 answered items, gold 15 at each of A-D; chosen 30, 10, 10, 10: expected 15 each (>= 5), so chi-square:
    # (15^2 + 3 * 5^2) / 15 = 20 on 3 degrees of freedom.
    test = answer_order.goodness_of_fit([30, 10, 10, 10], [15, 15, 15, 15])
    assert test["method"] == answer_order.CHI_SQUARE
    assert test["statistic"] == pytest.approx(20.0)
    assert test["df"] == 3
    assert test["p_value"] == pytest.approx(scipy_stats.chisquare([30, 10, 10, 10]).pvalue)
    assert test["p_value"] == pytest.approx(1.7e-4, rel=0.01)
    assert test["rejects"] is True


def test_exact_multinomial_hand_worked():
    # 4 items, gold 2 at A, 1 at B, 1 at C (expected counts 2, 1, 1: below 5, so the exact test); all 4 chosen at A.
    # P(4, 0, 0) = (1/2)^4 = 1/16. Outcomes no more likely: (4,0,0) 1/16, (0,4,0) and (0,0,4) 1/256 each,
    # (0,3,1), (0,1,3) 4/256 each, (1,3,0), (1,0,3) 4 * 2 / 256 = 8/256 each (= 1/32 < 1/16),
    # (0,2,2) 6/256 (< 16/256); (3,1,0) 4 * 8 / 256 = 32/256 > 16/256 is not. Sum = (16 + 2 + 8 + 16 + 6) / 256.
    test = answer_order.goodness_of_fit([4, 0, 0], [2, 1, 1])
    assert test["method"] == answer_order.EXACT
    assert test["p_value"] == pytest.approx(48 / 256)
    # The same sum from scipy's multinomial pmf over every outcome.
    pmf = scipy_stats.multinomial(4, [0.5, 0.25, 0.25]).pmf
    outcomes = [(a, b, 4 - a - b) for a in range(5) for b in range(5 - a)]
    observed = pmf([4, 0, 0])
    assert test["p_value"] == pytest.approx(sum(pmf(x) for x in outcomes if pmf(x) <= observed * (1 + 1e-9)))
    assert test["rejects"] is False


def test_monte_carlo_beyond_enumeration():
    # 10 positions with 300 items (C(309, 9) outcomes: too many to enumerate), a few expected counts below 5.
    gold = [100, 100, 40, 30, 20, 4, 3, 1, 1, 1]
    chosen = [150, 50, 40, 30, 20, 4, 3, 1, 1, 1]
    test = answer_order.goodness_of_fit(chosen, gold)
    assert test["method"] == answer_order.MONTE_CARLO
    assert test["draws"] == answer_order.MONTE_CARLO_DRAWS
    # 50 items moved from B to A against expected 100 each: far beyond chance (chi-square alone gives ~1e-12).
    assert test["p_value"] == pytest.approx(1 / (1 + answer_order.MONTE_CARLO_DRAWS))
    assert test["rejects"] is True


@pytest.mark.parametrize(
    ("chosen", "gold", "reason"),
    [
        ([0, 0], [0, 0], "0 answered items"),
        ([1, 0], [0, 1], "1 answered item with"),
        ([5, 0], [5, 0], "every gold answer lies at one position"),
        ([2, 1, 1], [2, 2, 0], "no gold answer lies"),
    ],
)
def test_not_computable(chosen, gold, reason):
    test = answer_order.goodness_of_fit(chosen, gold)
    assert test["p_value"] is None and test["method"] is None
    assert reason in test["reason"]
    assert "rejects" not in test


@pytest.mark.parametrize("k", [1, 2, 3, 5])
@pytest.mark.parametrize("n", [0, 1, 4, 9])
def test_the_exact_test_enumerates_every_outcome_once_in_order(n, k):
    # Stars and bars: each choice of k - 1 bar places among n + k - 1 is one outcome, in the same order.
    expected = [
        [right - left - 1 for left, right in itertools.pairwise((-1, *bars, n + k - 1))]
        for bars in itertools.combinations(range(n + k - 1), k - 1)
    ]
    assert answer_order._outcomes(n, k).tolist() == expected
    assert len(expected) == len({tuple(row) for row in expected}) and all(sum(row) == n for row in expected)


@st.composite
def _counts(draw):
    k = draw(st.integers(2, 5))
    gold = draw(st.lists(st.integers(0, 12), min_size=k, max_size=k).filter(lambda g: sum(x > 0 for x in g) >= 2))
    kept = [p for p in range(k) if gold[p]]
    chosen = [0] * k
    for _ in range(sum(gold)):
        chosen[draw(st.sampled_from(kept))] += 1
    return chosen, gold


@settings(max_examples=examples(60), deadline=None)
@given(_counts(), st.randoms(use_true_random=False))
def test_properties(counts, random):
    chosen, gold = counts
    test = answer_order.goodness_of_fit(chosen, gold)
    assert 0.0 <= test["p_value"] <= 1.0
    assert test["rejects"] == (test["p_value"] < answer_order.ALPHA)
    # The positions' names do not matter: relabelling both sides alike gives the same test.
    order = list(range(len(gold)))
    random.shuffle(order)
    relabelled = answer_order.goodness_of_fit([chosen[p] for p in order], [gold[p] for p in order])
    assert relabelled["p_value"] == pytest.approx(test["p_value"], rel=1e-9, abs=1e-12)
    # A choice that lands exactly as the gold answers do is no evidence of a position bias.
    same = answer_order.goodness_of_fit(gold, gold)
    assert same["statistic"] == 0.0 and same["p_value"] == pytest.approx(1.0)


def _always_a(prompt: str) -> str:
    if "yes, no or maybe" in prompt:
        return "yes"  # PubMedQA's first named answer
    return json.dumps({"selected_answer": "A", "confidence": 90}) + "\nThe answer is A."


def _likes_a(context: str, continuation: str) -> float:
    return 0.0 if continuation.strip() == "A" else -5.0


_OPTION = re.compile(r"^([A-Z])\. (.*)$", re.MULTILINE)


def _by_option_text(prompt: str) -> str:
    """The option whose text has the largest digest, wherever it is shown."""
    options = _OPTION.findall(prompt)
    letter = max(options, key=lambda option: hashlib.sha256(option[1].encode()).hexdigest())[0]
    return json.dumps({"selected_answer": letter, "confidence": 90}) + f"\nThe answer is {letter}."


def _report(folder, demo_data_dir, tasks, model, limit=12):
    evaluated_run(folder, demo_data_dir, tasks, limit=limit, model=model)
    return score_path(folder).report()


def test_always_a_shows_a_position_bias(tmp_path, demo_data_dir):
    model = ScriptedLM(reply=_always_a, loglikelihood=_likes_a)
    tasks = [*MEDEXQA, *(f"medexqa_logit_{code}" for code in ("be", "cls", "cp", "ot", "slp"))]
    tasks += [f"millerqa_{stem}" for stem in MILLERQA_STEMS] + [f"millerqa_ll_{stem}" for stem in MILLERQA_STEMS]
    tasks += ["pubmedqa_atlas_gen", "pubmedqa_atlas"]
    report = _report(tmp_path / "run", demo_data_dir, tasks, model, limit=40)
    benchmarks = report["benchmarks"]
    for name, first in (
        ("medexqa", "A"),
        ("medexqa_logit", "A"),
        ("millerqa", "A"),
        ("millerqa_ll", "A"),
        ("pubmedqa_atlas_gen", "yes"),
    ):
        order = benchmarks[name]["answer_order"]
        assert order["n_answered"] >= 40, name
        # Every answer at A: A's chosen share is 1, and every gold answer there is right, every other one wrong.
        assert order["chosen_positions"][first]["count"] == order["n_answered"]
        assert order["accuracy_by_gold_position"][first]["accuracy"]["value"] == 1.0
        assert all(
            entry["accuracy"]["value"] == 0.0
            for position, entry in order["accuracy_by_gold_position"].items()
            if position != first and entry["n"]
        )
        assert order["test"]["p_value"] < 0.001, name
        assert order["position_bias"] is True
        assert answer_order.format_flag(order).startswith("position bias")
    # The log-likelihood PubMedQA prompt shows no options: no answer order.
    assert "answer_order" not in benchmarks["pubmedqa_atlas"]
    # Both pages show the numbers and the flag, as computed.
    markdown, page = to_markdown(report), scorecard.render_html(report).decode()
    flag = answer_order.format_flag(benchmarks["medexqa"]["answer_order"])
    assert markdown.count("Answer order (position:") == 5 and f"**{md(flag)}**" in markdown
    assert md(answer_order.format_test(benchmarks["medexqa"]["answer_order"]["test"])) in markdown
    assert page.count('class="caveat position-bias"') == 5
    assert str(escape(flag)) in page


def test_choice_by_option_text_shows_no_bias(tmp_path, demo_data_dir):
    """MillerQA shuffles every item's options: a choice by the text falls at random positions, as the gold does."""
    tasks = [f"millerqa_{stem}" for stem in MILLERQA_STEMS]
    benchmarks = _report(tmp_path / "run", demo_data_dir, tasks, ScriptedLM(reply=_by_option_text))["benchmarks"]
    order = benchmarks["millerqa"]["answer_order"]
    assert order["n_answered"] >= 40
    assert order["test"]["p_value"] > 0.2
    assert order["position_bias"] is False and answer_order.format_flag(order) is None
    # Counts add up: every answered item once among the chosen and once among the gold positions.
    assert sum(entry["count"] for entry in order["chosen_positions"].values()) == order["n_answered"]
    assert sum(entry["count"] for entry in order["gold_positions"].values()) == order["n_answered"]


def _item(gold: str, pred: str) -> ScoredItem:
    return ScoredItem("medexqa_be", 0, "", "BE", gold, pred, float(gold == pred))


def test_summary_hand_worked():
    """MedExQA generative (accuracy over all items): 6 items; an unanswered one counts wrong in accuracy and is left
    out of the positions; a letter that is no option's is an item of unknown position."""
    spec = next(spec for spec in report_specs() if spec.name == "medexqa")
    pairs = [("A", "A"), ("A", "B"), ("B", "B"), ("C", "A"), ("D", INVALID), ("B", "E")]
    order = answer_order.summary([_item(gold, pred) for gold, pred in pairs], spec)
    assert order["positions"] == ["A", "B", "C", "D"]
    assert (order["n_items"], order["n_answered"], order["unknown_position"]) == (6, 4, 1)
    by_gold = order["accuracy_by_gold_position"]
    assert [by_gold[p]["n"] for p in "ABCD"] == [2, 1, 1, 1]
    assert [by_gold[p]["accuracy"]["value"] for p in "ABCD"] == [0.5, 1.0, 0.0, 0.0]
    # Clopper-Pearson for 1 of 2: the Beta(1, 2) 2.5% and Beta(2, 1) 97.5% quantiles, from scipy directly.
    assert by_gold["A"]["accuracy"]["low"] == pytest.approx(scipy_stats.beta.ppf(0.025, 1, 2))
    assert by_gold["A"]["accuracy"]["high"] == pytest.approx(scipy_stats.beta.ppf(0.975, 2, 1))
    assert [order["gold_positions"][p]["count"] for p in "ABCD"] == [2, 1, 1, 0]
    assert [order["chosen_positions"][p]["count"] for p in "ABCD"] == [2, 2, 0, 0]
    assert order["chosen_positions"]["B"]["share"]["value"] == 0.5
    # Gold 2, 1, 1 (expected counts below 5: exact) against chosen 2, 2, 0: P(2,2,0) = 4!/(2!2!) (1/2)^2 (1/4)^2 =
    # 6/64; the outcomes no more likely sum, over all 15, to the p-value scipy's pmf gives.
    pmf = scipy_stats.multinomial(4, [0.5, 0.25, 0.25]).pmf
    observed = pmf([2, 2, 0])
    assert observed == pytest.approx(6 / 64)
    outcomes = [(a, b, 4 - a - b) for a in range(5) for b in range(5 - a)]
    want = sum(pmf(x) for x in outcomes if pmf(x) <= observed * (1 + 1e-9))
    assert order["test"]["method"] == answer_order.EXACT
    assert order["test"]["p_value"] == pytest.approx(want)
    assert order["position_bias"] is False
