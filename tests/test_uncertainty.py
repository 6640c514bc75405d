"""How sure each k̂ is: the score's SE, the runner-up and the paired difference's
interval, the bootstrap interval of k̂'s share, and the flags, against values worked out independently
(scipy.stats' t interval, a bootstrap drawn by hand over the trials of a stored cube)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from conftest import cli_in_process, small_config, write_config
from ordercube.pipeline.reduce.select import choice_per_trial, criterion_scores, select_k
from ordercube.pipeline.reduce.uncertainty import FEW_TRIALS, bootstrap_share_interval, decision_uncertainty, group_uncertainty
from ordercube.pipeline.cube.owner import open_cube
from ordercube.tasks.criteria import Decision


def cube_of(name: str, values: np.ndarray, ks: tuple[int, ...], **extra: np.ndarray) -> xr.Dataset:
    """One dataset (true k = 3), one n, one model; ``values[k_index, trial]`` stored as criterion ``name``."""
    dims = ("dataset", "n", "model", "k", "trial")
    coords = {"dataset": ["a"], "n": [100], "model": ["m"], "k": list(ks), "trial": list(range(values.shape[-1]))}
    variables = {key: (dims, array[None, None, None]) for key, array in {name: values, **extra}.items()}
    variables["status"] = (dims, np.ones(values.shape, np.int8)[None, None, None])
    return xr.Dataset(variables, coords=coords, attrs={"ordercube_true_k": json.dumps({"a": 3})})


def field(uncertainty: xr.Dataset, name: str) -> float:
    return float(uncertainty[name].squeeze())


def test_score_runner_up_and_paired_difference_against_scipy():
    rng = np.random.default_rng(11)
    shared = rng.normal(0.0, 0.1, size=12)  # a trial's sample moves every k together: pairing pays
    means = np.array([0.60, 0.30, 0.36, 0.70])
    values = means[:, None] + shared[None, :] + rng.normal(0.0, 0.01, size=(4, 12))
    uncertainty = decision_uncertainty(criterion_scores(cube_of("pairwise", values, (2, 3, 4, 5))))
    # k̂ = 3 (smallest mean), runner-up 4
    assert field(uncertainty, "pairwise_runner_up") == 4
    score = values[1]
    assert field(uncertainty, "pairwise_score") == pytest.approx(score.mean())
    assert field(uncertainty, "pairwise_score_se") == pytest.approx(score.std(ddof=1) / np.sqrt(12))
    difference = values[2] - values[1]
    low, high = stats.t.interval(0.95, df=11, loc=difference.mean(), scale=stats.sem(difference))
    assert field(uncertainty, "pairwise_difference") == pytest.approx(difference.mean())
    assert field(uncertainty, "pairwise_difference_low") == pytest.approx(low)
    assert field(uncertainty, "pairwise_difference_high") == pytest.approx(high)
    # the means' own intervals overlap, the paired difference's does not contain 0
    se = values[1:3].std(axis=1, ddof=1) / np.sqrt(12)
    assert values[1].mean() + 2 * se[0] > values[2].mean() - 2 * se[1]
    assert low > 0 and not bool(uncertainty["pairwise_not_separated"].squeeze())
    assert not bool(uncertainty["pairwise_at_grid_edge"].squeeze())
    assert bool(uncertainty["pairwise_few_trials"].squeeze()) == (12 < FEW_TRIALS)


def test_flags_grid_edge_not_separated_and_few_trials():
    # the smallest mean at the largest k, the runner-up within noise of it, 4 trials
    values = np.array([[0.5, 0.6, 0.4, 0.5], [0.30, 0.20, 0.25, 0.31], [0.29, 0.22, 0.26, 0.27]])
    uncertainty = decision_uncertainty(criterion_scores(cube_of("pairwise", values, (2, 3, 4))))
    assert int(select_k(criterion_scores(cube_of("pairwise", values, (2, 3, 4))))["pairwise"].squeeze()) == 4
    assert field(uncertainty, "pairwise_runner_up") == 3
    assert bool(uncertainty["pairwise_at_grid_edge"].squeeze())
    assert bool(uncertainty["pairwise_not_separated"].squeeze())
    assert bool(uncertainty["pairwise_few_trials"].squeeze())
    # at the grid's lowest k, an edge only where the criterion is defined below it (pairwise: k >= 2)
    lowest = decision_uncertainty(criterion_scores(cube_of("pairwise", values[::-1].copy(), (2, 3, 4))))
    assert not bool(lowest["pairwise_at_grid_edge"].squeeze())
    from_three = decision_uncertainty(criterion_scores(cube_of("pairwise", values[::-1].copy(), (3, 4, 5))))
    assert bool(from_three["pairwise_at_grid_edge"].squeeze())


def test_prediction_strength_margins_to_the_threshold():
    # per trial (5): k = 2 clear, k = 3 just above 0.9 on average, k = 4 below, k = 5 close below
    values = np.array([[0.99, 0.98, 0.97, 0.99, 0.98],
                       [0.93, 0.88, 0.95, 0.91, 0.90],
                       [0.60, 0.70, 0.65, 0.62, 0.66],
                       [0.85, 0.89, 0.80, 0.91, 0.86]])
    uncertainty = decision_uncertainty(criterion_scores(cube_of("prediction_strength", values, (2, 3, 4, 5))))
    assert field(uncertainty, "prediction_strength_runner_up") == 5  # above k̂ = 3, the nearest to 0.9
    above = values[1] - 0.9  # k̂'s margin: mean 0.014
    below = 0.9 - values[3]  # the runner-up's: mean 0.038
    assert field(uncertainty, "prediction_strength_difference") == pytest.approx(above.mean())
    low, high = stats.t.interval(0.95, df=4, loc=above.mean(), scale=stats.sem(above))
    assert field(uncertainty, "prediction_strength_difference_low") == pytest.approx(low)
    assert field(uncertainty, "prediction_strength_difference_high") == pytest.approx(high)
    assert bool(uncertainty["prediction_strength_not_separated"].squeeze())  # 0.014 ± 0.03
    assert below.mean() > above.mean()


def test_clest_compares_d_k_against_the_mean_reference():
    observed = np.array([[0.95, 0.96, 0.94], [0.90, 0.92, 0.91], [0.70, 0.75, 0.72]])
    null = np.array([[0.80, 0.82, 0.81], [0.60, 0.62, 0.61], [0.65, 0.66, 0.64]])
    scores = criterion_scores(cube_of("clest", observed, (2, 3, 4), clest_null=null))
    uncertainty = decision_uncertainty(scores)
    d = observed - null.mean(axis=1, keepdims=True)  # d_k per trial: k = 3 has the largest (0.30)
    assert int(select_k(scores)["clest"].squeeze()) == 3
    assert field(uncertainty, "clest_score") == pytest.approx(d[1].mean())
    assert field(uncertainty, "clest_runner_up") == 2
    assert field(uncertainty, "clest_difference") == pytest.approx((d[1] - d[0]).mean())


def test_a_rule_that_does_not_take_the_best_score_says_so():
    # the Gap statistic's rule takes k = 2 (Gap(2) >= Gap(3) - s_3) although Gap(4) is far larger
    rng = np.random.default_rng(6)
    gap = np.array([0.1, 0.5, 0.55, 0.9])[:, None] + rng.normal(0, 0.01, size=(4, 12))
    scores = criterion_scores(cube_of("gap", gap, (1, 2, 3, 4), gap_sd=np.full((4, 12), 0.1)))
    uncertainty = decision_uncertainty(scores)
    assert int(select_k(scores)["gap"].squeeze()) == 2 and field(uncertainty, "gap_runner_up") == 4
    assert field(uncertainty, "gap_difference") == pytest.approx(-(gap[3] - gap[1]).mean())
    assert bool(uncertainty["gap_runner_up_better"].squeeze()) and not bool(uncertainty["gap_not_separated"].squeeze())


@pytest.mark.parametrize("hits, trials", [(13, 20), (19, 20), (20, 20), (3, 40), (0, 7)])
def test_the_exact_bootstrap_interval_matches_a_bootstrap_drawn_by_hand(hits, trials):
    rng = np.random.default_rng([17, hits, trials])
    indicator = np.zeros(trials)
    indicator[:hits] = 1
    shares = indicator[rng.integers(0, trials, size=(40_000, trials))].mean(axis=1)
    by_hand = np.quantile(shares, [0.025, 0.975], method="inverted_cdf")
    low, high = bootstrap_share_interval(hits, trials)
    # the same support points; a Monte-Carlo quantile can sit one trial off where the CDF is within noise of 2.5%
    assert abs(low - by_hand[0]) <= 1 / trials + 1e-12 and abs(high - by_hand[1]) <= 1 / trials + 1e-12
    assert low <= hits / trials <= high


def test_selection_csv_intervals_against_a_bootstrap_of_the_stored_cube(tmp_path):
    config = write_config(tmp_path / "c.yaml", **small_config(n=[60], resamples=24, seed=3))
    assert cli_in_process("run", str(config), "--out", str(tmp_path / "c.zarr"), "--workers", "0",
                          "--no-progress").returncode == 0
    result = cli_in_process("report", str(tmp_path / "c.zarr"), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    assert "share [95%]" in result.stdout and "difference [95%]" in result.stdout
    table = pd.read_csv(tmp_path / "r" / "selection.csv")
    choices = choice_per_trial(criterion_scores(open_cube(tmp_path / "c.zarr")))
    rng = np.random.default_rng(5)
    for row in table.itertuples():
        picks = choices[row.criterion].sel(dataset=row.dataset, n=row.n, model=row.method).values
        picks = picks[picks >= 0]
        hits = (picks == row.k_hat).astype(float)
        assert row.k_hat_frequency == pytest.approx(hits.mean())
        shares = hits[rng.integers(0, hits.size, size=(20_000, hits.size))].mean(axis=1)
        by_hand = np.quantile(shares, [0.025, 0.975], method="inverted_cdf")
        assert abs(row.k_hat_frequency_low - by_hand[0]) <= 1 / hits.size + 1e-12
        assert abs(row.k_hat_frequency_high - by_hand[1]) <= 1 / hits.size + 1e-12
        flags = {name for name in ("at_grid_edge", "not_separated", "few_trials") if getattr(row, name)}
        if not np.isnan(row.difference_low):
            assert ("not_separated" in flags) == (row.difference_low <= 0 <= row.difference_high)
        assert ("at_grid_edge" in flags) == (row.k_hat == 4)  # k = 2 is pairwise's and Lange's smallest k


def test_a_group_without_values_or_choice_has_no_interval():
    values = np.full((3, 2), np.nan)
    out = group_uncertainty(values, np.array([2, 3]), -1, np.array([-1, -1, -1]), Decision())
    assert np.isnan(out["frequency"]) and np.isnan(out["score"]) and np.isnan(out["difference"])
    assert out["few_trials"] == 1.0 and out["not_separated"] == 0.0
