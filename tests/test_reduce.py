"""Reducers on small cubes built in memory, with answers worked out by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

from ordercube.pipeline.reduce.select import (
    choice_per_trial, criterion_scores, failure_rate, select_k, selection_frequency, sqrt_n_scaled, summarise,
)
from ordercube.pipeline.report.write import selection_table

NAN = np.nan


def tiny_cube(lange: list[list[float]], status: list[list[int]] | None = None, ks=(2, 3, 4), n=100) -> xr.Dataset:
    """One dataset, one n, one model; ``lange[k_index][trial]``."""
    values = np.array(lange, dtype=float)[None, None, None]
    status_values = np.ones_like(values, dtype=np.int8) if status is None else np.array(status, np.int8)[None, None, None]
    dims = ("dataset", "n", "model", "k", "trial")
    coords = {"dataset": ["a"], "n": [n], "model": ["m"], "k": list(ks), "trial": list(range(values.shape[-1]))}
    baseline = np.array([[0.5, 0.6, 0.8][: len(ks)]])
    return xr.Dataset(
        {"lange": (dims, values), "pairwise": (dims, values / 10), "status": (dims, status_values),
         "lange_random": (("n", "k"), baseline)},
        coords=coords, attrs={"ordercube_true_k": json.dumps({"a": 3})},
    )


def test_lange_is_normalised_by_the_random_baseline_and_pairwise_is_raw():
    cube = tiny_cube([[0.1, 0.2, 0.3], [0.06, 0.0, 0.12], [0.4, 0.4, 0.4]])
    scores = criterion_scores(cube)
    np.testing.assert_allclose(scores["lange"].sel(k=2).values.ravel(), [0.2, 0.4, 0.6])
    np.testing.assert_allclose(scores["lange"].sel(k=3).values.ravel(), [0.1, 0.0, 0.2])
    np.testing.assert_allclose(scores["pairwise"].sel(k=4).values.ravel(), [0.04, 0.04, 0.04])


def test_selection_summary_choices_frequency_and_failure_rate_by_hand():
    # normalised lange per trial: k=2 -> [0.2, 0.4, 0.6]; k=3 -> [0.1, 0.0, 0.7]; k=4 -> [0.5, 0.5, 0.5]
    cube = tiny_cube([[0.1, 0.2, 0.3], [0.06, 0.0, 0.42], [0.4, 0.4, 0.4]])
    scores = criterion_scores(cube)
    summary = summarise(scores)
    assert float(summary["lange_mean"].sel(k=3).squeeze()) == pytest.approx(0.8 / 3)
    assert float(summary["lange_std"].sel(k=2).squeeze()) == pytest.approx(0.2)
    assert int(summary["lange_trials"].sel(k=2).squeeze()) == 3
    # means: k=2 0.4, k=3 0.2667, k=4 0.5 -> 3
    assert int(select_k(scores)["lange"].squeeze()) == 3
    choices = choice_per_trial(scores)
    assert choices["lange"].values.ravel().tolist() == [3, 3, 4]
    frequency = selection_frequency(choices, scores["k"])["lange"].squeeze()
    np.testing.assert_allclose(frequency.values, [0.0, 2 / 3, 1 / 3])
    assert float(failure_rate(scores)["lange"].squeeze()) == pytest.approx(1 / 3)
    scaled = sqrt_n_scaled(summary)["lange"].sel(k=4).squeeze()
    assert float(scaled) == pytest.approx(0.5 * 10)


def test_exact_ties_go_to_the_smallest_k_unless_told_otherwise():
    # normalised: k=2 [0, 0], k=3 [0, 0.5], k=4 [0, 0.25]: per trial ties at 0 -> smallest k among them
    cube = tiny_cube([[0.0, 0.0], [0.0, 0.3], [0.0, 0.2]])
    scores = criterion_scores(cube)
    assert choice_per_trial(scores)["lange"].values.ravel().tolist() == [2, 2]
    assert choice_per_trial(scores, {"lange": {"ties": "largest"}})["lange"].values.ravel().tolist() == [4, 2]
    assert int(select_k(scores)["lange"].squeeze()) == 2  # means 0, 0.25, 0.125
    # the true k = 3 ties for the smallest in trial 0 (no failure) and is beaten in trial 1 (failure)
    assert float(failure_rate(scores)["lange"].squeeze()) == pytest.approx(1 / 2)


def test_cells_that_are_not_ok_are_left_out_not_counted_as_values():
    # the failed cell (k=3, trial 0) holds a stale value that must be ignored
    cube = tiny_cube([[0.2, 0.2], [0.0, 0.3], [0.4, 0.4]], status=[[1, 1], [2, 1], [1, 1]])
    scores = criterion_scores(cube)
    assert np.isnan(scores["lange"].sel(k=3, trial=0)).all()
    assert int(summarise(scores)["lange_trials"].sel(k=3).squeeze()) == 1
    # trial 0 chooses among k=2 (0.4) and k=4 (0.5): 2; trial 1 among 0.4, 0.5, 0.5: 2
    assert choice_per_trial(scores)["lange"].values.ravel().tolist() == [2, 2]


def test_a_trial_without_any_value_has_no_choice_and_unknown_truth_has_no_failure_rate():
    cube = tiny_cube([[0.2, NAN], [0.0, NAN], [0.4, NAN]], status=[[1, 3], [1, 3], [1, 3]])
    cube.attrs["ordercube_true_k"] = json.dumps({"a": -1})
    scores = criterion_scores(cube)
    assert choice_per_trial(scores)["lange"].values.ravel().tolist() == [3, -1]
    assert np.isnan(failure_rate(scores)["lange"]).all()
    table = selection_table(cube)
    row = table[table.criterion == "lange"].iloc[0]
    assert (row.k_hat, row.trials, row.true_k) == (3, 1, -1)
    assert np.isnan(row.failure_rate) and row.k_hat_frequency == 1.0


def test_unsorted_coordinates_from_an_extension_are_sorted():
    cube = tiny_cube([[0.4, 0.4], [0.1, 0.1], [0.2, 0.2]], ks=(4, 2, 3))
    cube["lange_random"] = (("n", "k"), np.array([[0.8, 0.5, 0.6]]))
    scores = criterion_scores(cube)
    assert scores["k"].values.tolist() == [2, 3, 4]
    # normalised means: k=4 0.5, k=2 0.2, k=3 0.333 -> 2
    assert int(select_k(scores)["lange"].squeeze()) == 2


def ps_cube(ps: list[list[float]], ks=(1, 2, 3, 4)) -> xr.Dataset:
    """One dataset (true k = 3), one n, one model; ``ps[k_index][trial]`` as prediction strength."""
    values = np.array(ps, dtype=float)[None, None, None]
    dims = ("dataset", "n", "model", "k", "trial")
    coords = {"dataset": ["a"], "n": [100], "model": ["m"], "k": list(ks), "trial": list(range(values.shape[-1]))}
    return xr.Dataset({"prediction_strength": (dims, values), "status": (dims, np.ones_like(values, dtype=np.int8))},
                      coords=coords, attrs={"ordercube_true_k": json.dumps({"a": 3})})


def test_prediction_strength_is_decided_by_the_largest_k_above_the_threshold_and_can_be_re_decided():
    # per trial:      t0    t1    t2
    cube = ps_cube([[1.0, 1.0, 1.0],     # k = 1
                    [0.95, 0.9, 0.97],   # k = 2
                    [0.92, 0.85, 0.88],  # k = 3: mean 0.8833
                    [0.5, 0.82, 0.6]])   # k = 4: mean 0.64
    scores = criterion_scores(cube)
    assert int(select_k(scores)["prediction_strength"].squeeze()) == 2  # 0.9: k = 3's mean 0.883 misses it
    assert int(select_k(scores, {"prediction_strength": {"threshold": 0.8}})["prediction_strength"].squeeze()) == 3
    assert int(select_k(scores, {"prediction_strength": {"threshold": 0.5}})["prediction_strength"].squeeze()) == 4
    assert int(select_k(scores, {"prediction_strength": {"threshold": 1.0}})["prediction_strength"].squeeze()) == 1
    with pytest.raises(ValueError, match=r"prediction_strength.threshold = 1.01: expected a number \(finite, in \[0, 1\]\)"):
        select_k(scores, {"prediction_strength": {"threshold": 1.01}})  # a share never reaches it: refused
    assert choice_per_trial(scores)["prediction_strength"].values.ravel().tolist() == [3, 2, 2]
    lowered = {"prediction_strength": {"threshold": 0.8}}
    assert choice_per_trial(scores, lowered)["prediction_strength"].values.ravel().tolist() == [3, 4, 3]
    assert float(failure_rate(scores)["prediction_strength"].squeeze()) == pytest.approx(2 / 3)
    assert float(failure_rate(scores, lowered)["prediction_strength"].squeeze()) == pytest.approx(1 / 3)


def test_a_threshold_for_a_criterion_without_one_or_absent_from_the_cube_is_refused():
    scores = criterion_scores(tiny_cube([[0.1, 0.2], [0.05, 0.0], [0.4, 0.4]]))
    with pytest.raises(ValueError,
                       match=r"lange.threshold: the decision rule of lange \(smallest\) has the fields \['ties', 'aggregate'\]"):
        select_k(scores, {"lange": {"threshold": 0.3}})
    with pytest.raises(ValueError, match="'prediction_strength': no such criterion"):
        select_k(scores, {"prediction_strength": {"threshold": 0.8}})
    scores = criterion_scores(ps_cube([[1.0], [0.95], [0.9], [0.5]]))
    with pytest.raises(ValueError, match=r"prediction_strength.threshold = 'high': expected a number"):
        select_k(scores, {"prediction_strength": {"threshold": "high"}})
