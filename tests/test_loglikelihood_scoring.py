"""The one reading of a log-likelihood item (samples.choose_by_loglikelihood) in every log-likelihood protocol.

A model whose log-likelihoods are NaN or +inf (an fp16 overflow) has no answer: each benchmark's
``process_results`` and its report spec must both say so, from the same function.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lm_eval_tasks.utils.medexqa import report_spec as medexqa_spec
from lm_eval_tasks.utils.medexqa import tasks as medexqa_tasks
from lm_eval_tasks.utils.millerqa import report_spec as millerqa_spec
from lm_eval_tasks.utils.millerqa import tasks as millerqa_tasks
from lm_eval_tasks.utils.pubmedqa_atlas import report_spec as pubmedqa_spec
from lm_eval_tasks.utils.pubmedqa_atlas import tasks as pubmedqa_tasks
from lm_eval_tasks.utils.samples import choose_by_loglikelihood
from lm_eval_tasks.utils.scoring import INVALID

NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(
    "values, index, reason",
    [
        ([-1.0, -2.0, -0.5], 2, None),
        ([-1.0, -1.0, -3.0], 0, None),  # an exact tie goes to the earliest
        ([-INF, -2.0, -INF], 1, None),  # -inf choices cannot win; the item is still answered
        ([NAN, NAN, NAN], None, "NaN log-likelihood for choice(s) [0, 1, 2]"),
        ([-1.0, NAN, -3.0], None, "NaN log-likelihood for choice(s) [1]"),
        ([INF, INF, INF], None, "+inf log-likelihood for choice(s) [0, 1, 2]"),
        ([-1.0, -2.0, INF], None, "+inf log-likelihood for choice(s) [2]"),
        ([-INF, -INF, -INF], None, "no finite log-likelihood (every choice is -inf)"),
        (["-1.5", "nan", "-2"], None, "NaN log-likelihood for choice(s) [1]"),  # strings, as samples files log them
        (["-1.5", "-0.25", "-inf"], 1, None),
    ],
)
def test_choose_by_loglikelihood_hand_worked(values, index, reason):
    choice = choose_by_loglikelihood(values, 3)
    assert (choice.index, choice.invalid_reason) == (index, reason)


def test_a_count_other_than_the_choices_is_an_error():
    with pytest.raises(ValueError, match="expected 3 log-likelihoods"):
        choose_by_loglikelihood([-1.0, -2.0], 3)


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=6))
def test_choose_by_loglikelihood_properties(values):
    choice = choose_by_loglikelihood(values, len(values))
    valid = not any(math.isnan(v) or v == INF for v in values) and any(math.isfinite(v) for v in values)
    assert (choice.index is not None) == valid
    assert (choice.invalid_reason is None) == valid
    if valid:
        best = max(values)
        assert choice.index == values.index(best)  # the first of the largest
        assert choice.tied == (values.count(best) > 1)
    else:
        assert not choice.tied


def _logged(doc, values):
    return {"doc_id": 0, "doc_hash": "h", "doc": doc, "filtered_resps": [[str(v), "False"] for v in values]}


MEDEXQA_DOC = {"answer": "A", "specialty": "BE", "split": "test", "shuffle_seed": -1}
MILLERQA_DOC = {
    "benchmark": "triage",
    "release": "curated",
    "id": "q1",
    "model_label": "m",
    "permutation": [0, 1, 2],
    "correct_letter": "A",
    "target": 0,
}
PUBMEDQA_DOC = {"final_decision": "yes"}
HOSTILE = [[NAN] * 4, [INF] * 4, [-INF] * 4, [-1.0, NAN, -3.0, -4.0], [-1.0, -2.0, INF, -4.0]]


@pytest.mark.parametrize("values", HOSTILE, ids=["nan", "+inf", "all -inf", "one nan", "one +inf"])
def test_medexqa_logit_non_finite_is_invalid_in_the_run_and_the_report(values):
    # The gold is A: the old first-argmax gave A (correct) for every all-NaN or all-inf item.
    run = medexqa_tasks.process_logit_results(MEDEXQA_DOC, [(v, False) for v in values])
    assert run == {"acc": 0.0, "acc_micro": 0.0}
    item = medexqa_spec.score_logit_sample("medexqa_logit_be", _logged(MEDEXQA_DOC, values))
    assert (item.pred, item.correct) == (INVALID, 0.0)


@pytest.mark.parametrize("values", [v[:3] for v in HOSTILE], ids=["nan", "+inf", "all -inf", "one nan", "one +inf"])
def test_millerqa_loglikelihood_non_finite_is_invalid_with_its_reason(values):
    run = millerqa_tasks.process_results_loglikelihood(MILLERQA_DOC, [(v, False) for v in values])
    assert run == {"acc": 0.0, "acc_micro": 0.0}
    item = millerqa_spec.score_sample_loglikelihood("millerqa_ll_triage", _logged(MILLERQA_DOC, values))
    assert (item.pred, item.correct) == (INVALID, 0.0)
    assert item.invalid_reason == choose_by_loglikelihood(values, 3).invalid_reason
    assert item.details["selected_letter"] is None


def test_millerqa_minus_inf_choices_cannot_win_but_the_item_is_answered():
    item = millerqa_spec.score_sample_loglikelihood("millerqa_ll_triage", _logged(MILLERQA_DOC, [-INF, -2.0, -INF]))
    assert (item.pred, item.details["selected_letter"], item.invalid_reason) == ("1", "B", None)


def test_millerqa_fewer_loglikelihoods_than_options_is_an_error():
    with pytest.raises(ValueError, match="expected 3 log-likelihoods"):
        millerqa_tasks.process_results_loglikelihood(MILLERQA_DOC, [(-1.0, True), (-2.0, False)])
    with pytest.raises(ValueError, match="expected 3 log-likelihoods"):
        millerqa_spec.score_sample_loglikelihood("millerqa_ll_triage", _logged(MILLERQA_DOC, [-1.0, -2.0]))


@pytest.mark.parametrize("values", [v[:3] for v in HOSTILE], ids=["nan", "+inf", "all -inf", "one nan", "one +inf"])
def test_pubmedqa_choice_tasks_and_the_builtin_agree_on_non_finite(values):
    results = [(v, False) for v in values]
    assert pubmedqa_tasks.process_results(PUBMEDQA_DOC, results) == {"acc": 0.0, "macro_f1": ("yes", INVALID)}
    assert pubmedqa_tasks.process_builtin_results(PUBMEDQA_DOC, results) == {"acc": 0.0}
    for spec in pubmedqa_spec.REPORT_SPECS:
        if spec.name in ("pubmedqa_atlas_gen", "pubmedqa_atlas_gen_rotated"):  # generative: no log-likelihoods
            continue
        (task,) = spec.task_names
        item = spec.score_sample(task, _logged(PUBMEDQA_DOC, values))
        assert (item.pred, item.correct, item.extras["tied_top_choice"]) == (INVALID, 0.0, 0.0)


def test_the_builtin_pubmedqa_task_uses_the_shared_scoring():
    import yaml

    from tests.conftest import REPO

    text = (REPO / "lm_eval_tasks/pubmedqa_atlas/_pubmedqa_atlas_builtin.yaml").read_text()
    loaded = yaml.load(text.replace("!function", ""), Loader=yaml.SafeLoader)
    assert (
        loaded["task"][0]["process_results"].strip()
        == "lm_eval_tasks.utils.pubmedqa_atlas.tasks.process_builtin_results"
    )
