"""Answer distribution (utils/answer_order.py): where the prompt shows no options (PubMedQA's log-likelihood
prompt), the chosen answers' distribution against the gold answers', on hand-worked items and a scripted run through
lm-eval's evaluator (a model that always answers yes)."""

from __future__ import annotations

import pytest
from lm_eval_tasks.utils import answer_order, scorecard
from lm_eval_tasks.utils.benchmarks import report_specs
from lm_eval_tasks.utils.report import to_markdown
from lm_eval_tasks.utils.results import score_path
from lm_eval_tasks.utils.scoring import INVALID, ScoredItem
from lm_eval_tasks.utils.text import md
from markupsafe import escape
from scipy import stats as scipy_stats

from tests.runs import evaluated_run
from tests.scripted_lm import ScriptedLM

SPEC = next(spec for spec in report_specs() if spec.name == "pubmedqa_atlas")


def _items(pairs) -> list[ScoredItem]:
    return [
        ScoredItem("pubmedqa_atlas", i, "", "official-test-500", gold, pred, float(gold == pred))
        for i, (gold, pred) in enumerate(pairs)
    ]


def _distribution(gold: dict[str, int], chosen: dict[str, int]) -> dict:
    """Items with these gold and chosen counts (paired in order: which item errs does not matter here)."""
    golds = [label for label, n in gold.items() for _ in range(n)]
    preds = [label for label, n in chosen.items() for _ in range(n)]
    return answer_order.answer_distribution(_items(zip(golds, preds, strict=True)), SPEC)


def test_declared_for_the_log_likelihood_sections_only():
    labels = {spec.name: spec.beyond_accuracy.answer_labels for spec in report_specs() if "pubmedqa" in spec.name}
    assert labels == {
        "pubmedqa_atlas": ("yes", "no", "maybe"),
        "pubmedqa_atlas_n100": ("yes", "no", "maybe"),
        "pubmedqa_lm_eval_builtin": ("yes", "no", "maybe"),
        "pubmedqa_atlas_gen": (),
        "pubmedqa_atlas_gen_rotated": (),
    }


def test_hand_worked():
    """40 answered items, gold 20 yes / 10 no / 10 maybe, chosen 26 / 10 / 4 (expected counts 20, 10, 10, all >= 5:
    chi-square): 6^2/20 + 0 + 6^2/10 = 5.4 on 2 degrees of freedom, p = exp(-5.4 / 2) = 0.0672. One unanswered item
    and one whose gold answer is none of the labels are left out."""
    golds = ["yes"] * 20 + ["no"] * 10 + ["maybe"] * 10
    preds = ["yes"] * 20 + ["no"] * 10 + ["yes"] * 6 + ["maybe"] * 4
    items = _items([*zip(golds, preds), ("no", INVALID), ("unsure", "yes")])
    dist = answer_order.answer_distribution(items, SPEC)
    assert dist["labels"] == ["yes", "no", "maybe"]
    assert (dist["n_items"], dist["n_answered"], dist["other_answer"]) == (42, 40, 1)
    assert [dist["gold_answers"][label]["count"] for label in dist["labels"]] == [20, 10, 10]
    assert [dist["chosen_answers"][label]["count"] for label in dist["labels"]] == [26, 10, 4]
    assert [dist["chosen_answers"][label]["share"]["value"] for label in dist["labels"]] == [0.65, 0.25, 0.1]
    # Clopper-Pearson for 26 of 40: the Beta(26, 15) 2.5% and Beta(27, 14) 97.5% quantiles.
    share = dist["chosen_answers"]["yes"]["share"]
    assert share["low"] == pytest.approx(scipy_stats.beta.ppf(0.025, 26, 15))
    assert share["high"] == pytest.approx(scipy_stats.beta.ppf(0.975, 27, 14))
    assert share["n"] == 40
    test = dist["test"]
    assert test["method"] == answer_order.CHI_SQUARE
    assert test["null"] == answer_order.ANSWER_NULL
    assert test["statistic"] == pytest.approx(5.4)
    assert test["df"] == 2
    assert test["p_value"] == pytest.approx(scipy_stats.chisquare([26, 10, 4], [20, 10, 10]).pvalue)
    assert test["p_value"] == pytest.approx(0.0672, abs=1e-4)
    assert dist["answer_bias"] is False and answer_order.format_answer_flag(dist) is None


def test_exact_when_expected_counts_are_small():
    # Gold 2 yes / 1 no / 1 maybe, all 4 chosen yes: the exact test, as scipy's multinomial pmf sums it.
    dist = _distribution({"yes": 2, "no": 1, "maybe": 1}, {"yes": 4})
    pmf = scipy_stats.multinomial(4, [0.5, 0.25, 0.25]).pmf
    outcomes = [(a, b, 4 - a - b) for a in range(5) for b in range(5 - a)]
    observed = pmf([4, 0, 0])
    assert dist["test"]["method"] == answer_order.EXACT
    assert dist["test"]["p_value"] == pytest.approx(sum(pmf(x) for x in outcomes if pmf(x) <= observed * (1 + 1e-9)))


def test_always_yes_against_balanced_gold_is_an_answer_bias():
    # 30 of each gold answer, all chosen yes: 60^2/30 + 30 + 30 = 180 on 2 degrees of freedom.
    dist = _distribution({"yes": 30, "no": 30, "maybe": 30}, {"yes": 90})
    assert dist["test"]["statistic"] == pytest.approx(180.0)
    assert dist["test"]["p_value"] == pytest.approx(scipy_stats.chisquare([90, 0, 0]).pvalue)
    assert dist["test"]["p_value"] < 0.001
    assert dist["answer_bias"] is True
    flag = answer_order.format_answer_flag(dist)
    assert flag.startswith("answer bias: the chosen answers differ from the gold answers' distribution")
    # The position flag is another part's: it says nothing of this one.
    assert answer_order.format_flag(dist) is None


def test_chosen_as_gold_is_no_bias():
    # The same counts as the gold, though no item is right: p = 1.
    golds = ["yes"] * 5 + ["no"] * 3 + ["maybe"] * 2
    dist = answer_order.answer_distribution(_items(zip(golds, golds[::-1])), SPEC)
    assert [dist["chosen_answers"][label]["count"] for label in ("yes", "no", "maybe")] == [5, 3, 2]
    assert dist["test"]["statistic"] == 0.0
    assert dist["test"]["p_value"] == pytest.approx(1.0)
    assert dist["answer_bias"] is False and answer_order.format_answer_flag(dist) is None


@pytest.mark.parametrize(
    ("pairs", "reason"),
    [
        ([("yes", INVALID), ("no", INVALID)], "0 answered items: nothing to test"),
        ([("yes", "yes"), ("no", INVALID)], "1 answered item: nothing to test"),
        ([("yes", "yes"), ("yes", "no"), ("yes", "yes")], "every gold answer is the same answer"),
        ([("yes", "yes"), ("no", "maybe"), ("no", "no")], "an answer was chosen that no gold answer is"),
    ],
)
def test_not_computable(pairs, reason):
    dist = answer_order.answer_distribution(_items(pairs), SPEC)
    test = dist["test"]
    assert test["p_value"] is None and test["method"] is None and "rejects" not in test
    assert test["reason"].startswith(reason)
    assert "position" not in test["reason"]
    assert dist["answer_bias"] is False
    assert answer_order.format_test(test) == f"not computable: {test['reason']}"
    if dist["n_answered"] == 0:
        assert dist["chosen_answers"]["yes"] == {"count": 0} and "share" not in dist["gold_answers"]["no"]


def test_always_yes_run(tmp_path, demo_data_dir):
    """A scripted run of the log-likelihood task: every answer yes, flagged in report.json and on both pages."""
    model = ScriptedLM(loglikelihood=lambda context, continuation: 0.0 if continuation.strip() == "yes" else -5.0)
    evaluated_run(tmp_path / "run", demo_data_dir, ["pubmedqa_atlas"], limit=40, model=model)
    report = score_path(tmp_path / "run").report()
    bench = report["benchmarks"]["pubmedqa_atlas"]
    assert "answer_order" not in bench
    dist = bench["answer_distribution"]
    assert dist["n_answered"] == dist["n_items"] == 40
    assert dist["chosen_answers"]["yes"]["count"] == 40
    gold = [dist["gold_answers"][label]["count"] for label in ("yes", "no", "maybe")]
    assert sum(gold) == 40 and gold[0] < 40
    assert dist["test"]["p_value"] < 0.001 and dist["answer_bias"] is True
    flag = answer_order.format_answer_flag(dist)
    markdown, page = to_markdown(report), scorecard.render_html(report).decode()
    assert markdown.count("Answer distribution (") == 1 and f"**{md(flag)}**" in markdown
    assert md(answer_order.format_test(dist["test"])) in markdown
    assert page.count('class="caveat answer-bias"') == 1 and str(escape(flag)) in page
