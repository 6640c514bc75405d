"""Paper checks (slow): the seeds' published results through the whole stack, with stated tolerances."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import cli, write_config
from pipeline import criterion_scores, failure_rate, open_cube, select_k, sqrt_n_scaled, summarise

pytestmark = pytest.mark.slow


def run(tmp_path, config: dict):
    path = write_config(tmp_path / f"{config['name']}.yaml", **config)
    result = cli("run", str(path), "--out", str(tmp_path / "cube.zarr"), "--no-progress", timeout=900)
    assert result.returncode == 0, result.stderr
    return open_cube(tmp_path / "cube.zarr")


def test_lange2002_table1_stability_rows_for_kmeans(tmp_path):
    """Seed 000, Table 1: 3 Gaussians -> k̂ = 3; 3 rings with k-means -> k̂ = 7.

    The rings' geometry (radii, noise, counts) of Fig. 1(e) is not published: for the rings we accept
    6 <= k̂ <= 9 at n = 400 and 800: the curve is flat from k = 6 to 9 (1 in 8 seeds tried gave 9), and
    at n = 100 from k = 4 to 8 and require that k-means does not find the true k = 3 and that its best stability on the
    rings is clearly worse than on the Gaussians (the paper's remark on model mismatch).
    """
    cube = run(tmp_path, {
        "name": "table1", "seed": 2002, "k": {"from": 2, "to": 10}, "resamples": 40,
        "datasets": [{"name": "gaussians3", "kind": "lange_gaussians3", "n": [100, 400]},
                     {"name": "rings3", "kind": "rings3", "n": [400, 800]}],
        "methods": [{"name": "kmeans", "algorithm": "kmeans", "params": {"n_init": 10},
                     "predictor": "nearest_centroid", "criteria": ["lange"]}],
    })
    scores = criterion_scores(cube)
    k_hat = select_k(scores)["lange"].sel(model="kmeans")
    assert (k_hat.sel(dataset="gaussians3", n=[100, 400]) == 3).all()
    rings = k_hat.sel(dataset="rings3", n=[400, 800])
    assert ((rings >= 6) & (rings <= 9)).all(), rings.values
    best = summarise(scores)["lange_mean"].min("k")
    assert float(best.sel(dataset="rings3", n=[400, 800]).min()) > 10 * float(best.sel(dataset="gaussians3", n=[100, 400]).max())


def test_shamir_tishby2007_figure1_trends(tmp_path):
    """Seed 001, Fig. 1 and Theorem 3 on the 1-D mixture of Lemma 1 (pairwise instability theta_k).

    The estimator exactly: a fresh sample of 4m points per trial, optimal k-means solutions (exact 1-D).
    Claims checked, with m = n/2 from 32 to 2048 and 200 trials (the paper: 1000 trials, m to 2^22):
    theta_3 is the smallest mean at every mu and m; the failure rate (theta_3 not the smallest of a
    trial) does not increase with m and is near zero for well-separated mu = 8 (<= 0.02 at every m);
    theta_4 shrinks like 1/sqrt(m), so sqrt(m) * theta_4 stays within a factor of 2.
    Not checked: theta_2, which does not shrink here: the mixture is symmetric, so k = 2 has two
    mirror-image optimal solutions and each sample picks one of them.
    """
    cube = run(tmp_path, {
        "name": "fig1", "seed": 2007, "n": [64, 256, 1024, 4096], "k": [2, 3, 4], "resamples": 200,
        "datasets": [{"name": "mu5", "kind": "shamir_mixture1d", "params": {"mu": 5.0}},
                     {"name": "mu8", "kind": "shamir_mixture1d", "params": {"mu": 8.0}}],
        "methods": [{"name": "kmeans", "algorithm": "kmeans_1d_exact", "predictor": "nearest_centroid",
                     "criteria": ["pairwise"]}],
    })
    scores = criterion_scores(cube)
    summary = summarise(scores)
    assert (select_k(scores)["pairwise"] == 3).all()
    failures = failure_rate(scores)["pairwise"].sel(model="kmeans")
    assert (failures.sel(dataset="mu8") <= 0.02).all()
    for mu in ("mu5", "mu8"):
        rate = failures.sel(dataset=mu).values
        assert rate[-1] <= rate[0] + 0.02, (mu, rate)  # 0.02: about two binomial SEs at 200 trials
    scaled = sqrt_n_scaled(summary)["pairwise"].sel(k=4, model="kmeans")
    ratio = scaled.max("n") / scaled.min("n")
    assert (ratio < 2.0).all(), ratio.values
    theta4 = summary["pairwise_mean"].sel(k=4, model="kmeans")
    assert (theta4.diff("n") < 0).all()  # but the raw values do shrink with m
    assert np.isfinite(summary["pairwise_mean"]).all()
