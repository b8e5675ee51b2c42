"""Calibration measures (utils/calibration.py) against hand-worked examples and independent implementations."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lm_eval_tasks.utils import calibration, stats
from lm_eval_tasks.utils.calibration import Forecast
from sklearn.metrics import brier_score_loss

from tests.by_definition import hand_binned_ece
from tests.conftest import examples


def stated(confidences, correct):
    return [Forecast(c, bool(k)) for c, k in zip(confidences, correct, strict=True)]


def test_bin_edges_are_tenths_with_the_last_bin_closed():
    assert calibration.BIN_EDGES == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    assert calibration.BIN_LABELS[0] == "[0.0, 0.1)" and calibration.BIN_LABELS[-1] == "[0.9, 1.0]"
    # 0.3 is in [0.3, 0.4) (np.linspace's 0.30000000000000004 edge would put it in the bin below)
    values = [0.0, 0.0999, 0.1, 0.3, 0.7, 0.8999999, 0.9, 1.0]
    assert calibration.bin_of(values).tolist() == [0, 0, 1, 3, 7, 8, 9, 9]


def test_hand_worked_ece():
    # bin 9: 0.95, 0.9 -> accuracy 1/2, confidence 0.925: 2/5 x 0.425 = 0.170
    # bin 6: 0.65, 0.62 -> accuracy 1, confidence 0.635: 2/5 x 0.365 = 0.146
    # bin 3: 0.3 -> accuracy 0, confidence 0.3: 1/5 x 0.3 = 0.060
    forecasts = stated([0.95, 0.9, 0.65, 0.62, 0.3], [1, 0, 1, 1, 0])
    assert calibration.ece_of(forecasts)(np.ones((1, 5)))[0] == pytest.approx(0.376)
    bins = {b["bin"]: b for b in calibration.reliability(forecasts) if b["n"]}
    assert set(bins) == {"[0.3, 0.4)", "[0.6, 0.7)", "[0.9, 1.0]"}
    assert bins["[0.9, 1.0]"]["n"] == 2 and bins["[0.9, 1.0]"]["accuracy"] == 0.5
    assert bins["[0.9, 1.0]"]["mean_confidence"] == pytest.approx(0.925)


def test_a_perfectly_calibrated_set_has_ece_0():
    forecasts = stated([0.75] * 4 + [0.25] * 4, [1, 1, 1, 0, 1, 0, 0, 0])
    assert calibration.ece_of(forecasts)(np.ones((1, 8)))[0] == pytest.approx(0.0)


def test_binary_brier_equals_scikit_learn():
    rng = np.random.default_rng(3)
    confidences = rng.random(200).round(2)
    correct = (rng.random(200) < confidences).astype(int)
    values = calibration.brier_values(stated(confidences, correct))
    assert values.mean() == pytest.approx(brier_score_loss(correct, confidences))


def test_hand_worked_multiclass_brier_and_softmax():
    # p = (0.5, 0.3, 0.2), gold the second: (0.5)^2 + (0.3 - 1)^2 + (0.2)^2 = 0.25 + 0.49 + 0.04 = 0.78
    forecast = calibration.from_loglikelihoods([math.log(0.5) - 7, math.log(0.3) - 7, math.log(0.2) - 7], 1)
    assert forecast.probabilities == pytest.approx((0.5, 0.3, 0.2))
    assert forecast.confidence == pytest.approx(0.5) and forecast.correct is False
    assert calibration.brier_values([forecast])[0] == pytest.approx(0.78)
    # a right answer with all mass on it scores 0; all mass on a wrong choice scores 2
    sure_right = calibration.from_loglikelihoods([0.0, -math.inf, -math.inf], 0)
    sure_wrong = calibration.from_loglikelihoods([-math.inf, 0.0], 0)
    assert calibration.brier_values([sure_right, sure_wrong]).tolist() == [0.0, 2.0]


def test_multiclass_brier_against_one_hot_numpy():
    rng = np.random.default_rng(5)
    loglikelihoods = rng.normal(-20, 4, size=(50, 4))
    gold = rng.integers(0, 4, 50)
    forecasts = [calibration.from_loglikelihoods(row, g) for row, g in zip(loglikelihoods, gold, strict=True)]
    probabilities = np.exp(loglikelihoods - loglikelihoods.max(axis=1, keepdims=True))
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    expected = ((probabilities - np.eye(4)[gold]) ** 2).sum(axis=1).mean()
    assert calibration.brier_values(forecasts).mean() == pytest.approx(expected)
    assert [f.confidence for f in forecasts] == pytest.approx(probabilities.max(axis=1))


def test_the_predicted_choice_is_the_earliest_on_a_tie():
    forecast = calibration.from_loglikelihoods([-1.0, -1.0, -3.0], 1)
    assert forecast.correct is False and forecast.confidence == pytest.approx(forecast.probabilities[0])


@pytest.mark.parametrize(
    "loglikelihoods",
    [[math.nan, -1.0], [math.inf, -1.0], [-math.inf, -math.inf], []],
)
def test_items_without_an_answer_have_no_forecast(loglikelihoods):
    assert calibration.from_loglikelihoods(loglikelihoods, 0) is None


@pytest.mark.parametrize("value", [None, True, -1, 101, math.nan, math.inf])
def test_a_missing_or_impossible_stated_confidence_gives_no_forecast(value):
    assert calibration.from_stated(value, True) is None


def test_a_stated_confidence_is_read_in_percent():
    assert calibration.from_stated(85, True) == Forecast(0.85, True)
    assert calibration.from_stated(0, False) == Forecast(0.0, False)


def test_brier_kinds_are_never_mixed():
    mixed = [Forecast(0.5, True), calibration.from_loglikelihoods([0.0, -1.0], 0)]
    with pytest.raises(ValueError, match="mixes"):
        calibration.brier_kind(mixed)


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 100), st.booleans(), st.integers(0, 3)),
        min_size=1,
        max_size=25,
    )
)
def test_the_vectorised_ece_equals_hand_binning_on_every_resample(rows):
    """A bootstrap evaluates ECE from draw counts; each count vector must give the ECE of the items repeated."""
    confidences = [c / 100 for c, _, _ in rows]
    correct = [int(y) for _, y, _ in rows]
    draws = np.asarray([[w for _, _, w in rows], [1] * len(rows)], dtype=float)
    if draws[0].sum() == 0:
        draws[0, 0] = 1
    values = calibration.ece_of(stated(confidences, correct))(draws)
    for row, value in zip(draws, values, strict=True):
        repeat = np.repeat(np.arange(len(rows)), row.astype(int))
        assert value == pytest.approx(hand_binned_ece([confidences[i] for i in repeat], [correct[i] for i in repeat]))


def test_the_ece_bootstrap_matches_the_per_resample_loop():
    rng = np.random.default_rng(11)
    confidences, correct = rng.random(60), rng.random(60) < 0.6
    forecasts = stated(confidences, correct)
    strata = ["a"] * 20 + ["b"] * 40
    vectorised = stats.bootstrap(calibration.ece_of(forecasts), 60, strata=strata)
    looped = stats.bootstrap(
        stats.per_resample(lambda index: hand_binned_ece(confidences[index], correct[index])), 60, strata=strata
    )
    assert (vectorised.value, vectorised.low, vectorised.high) == pytest.approx((looped.value, looped.low, looped.high))
