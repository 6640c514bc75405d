"""Internal validity indices on the halves' own fits: scikit-learn's silhouette,
Calinski-Harabasz and Davies-Bouldin, averaged over the halves, decided by their own rules."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import calinski_harabasz_score, davies_bouldin_score, silhouette_score

from conftest import cli_in_process, small_config, write_config
from ordercube.tasks.criteria import CRITERIA
from ordercube.tasks.criteria.base import TrialFits
from ordercube.tasks.criteria.internal import calinski_harabasz, davies_bouldin, silhouette
from ordercube.tasks.predictors import nearest_centroid

INTERNAL = ["silhouette", "calinski_harabasz", "davies_bouldin"]


def _fits(rng, first_labels=None, second_labels=None):
    first, second = rng.normal(size=(40, 2)), rng.normal(size=(40, 2))
    first[:20] += 5
    second[:20] += 5
    truth = np.repeat([0, 1], 20)
    return TrialFits(first=first, second=second, k=2, predictor=nearest_centroid,
                     labels_first=truth if first_labels is None else first_labels,
                     labels_second=truth if second_labels is None else second_labels)


def test_each_index_is_scikit_learns_on_each_half_averaged():
    fits = _fits(np.random.default_rng(1))
    for ours, theirs in ((silhouette, silhouette_score), (calinski_harabasz, calinski_harabasz_score),
                         (davies_bouldin, davies_bouldin_score)):
        expected = (theirs(fits.first, fits.labels_first) + theirs(fits.second, fits.labels_second)) / 2
        assert ours(fits) == pytest.approx(expected)


def test_a_degenerate_half_is_left_out_and_the_silhouette_reads_at_most_max_points():
    rng = np.random.default_rng(2)
    one_cluster = _fits(rng, second_labels=np.zeros(40, dtype=np.int64))
    assert silhouette(one_cluster) == pytest.approx(silhouette_score(one_cluster.first, one_cluster.labels_first))
    nothing = _fits(rng, np.zeros(40, dtype=np.int64), np.arange(40))  # one cluster; one point per cluster
    assert np.isnan(silhouette(nothing)) and np.isnan(davies_bouldin(nothing))
    fits = _fits(rng)
    first = silhouette_score(fits.first[:10], fits.labels_first[:10]) if np.unique(fits.labels_first[:10]).size > 1 else None
    assert first is None  # the first ten points of a half sorted by cluster: one label, no index
    fits.labels_first = np.tile([0, 1], 20)
    fits.labels_second = np.tile([0, 1], 20)
    expected = (silhouette_score(fits.first[:10], fits.labels_first[:10])
                + silhouette_score(fits.second[:10], fits.labels_second[:10])) / 2
    assert silhouette(fits, max_points=10) == pytest.approx(expected)


def test_the_indices_choose_three_clusters_of_three_gaussians_and_report_beside_stability(tmp_path):
    config = small_config(n=[150], k=[2, 3, 4, 5], resamples=6, seed=9,
                          datasets=[{"name": "gauss", "kind": "lange_gaussians3"}])
    config["methods"][0]["criteria"] = ["lange", *INTERNAL]
    path = write_config(tmp_path / "c.yaml", **config)
    assert cli_in_process("run", str(path), "--out", str(tmp_path / "c.zarr"), "--workers", "0",
                          "--no-progress").returncode == 0
    result = cli_in_process("report", str(tmp_path / "c.zarr"), "--out", str(tmp_path / "r"))
    assert result.returncode == 0, result.stderr
    table = pd.read_csv(tmp_path / "r" / "selection.csv").set_index("criterion")
    assert table.loc[INTERNAL, "k_hat"].tolist() == [3, 3, 3]
    assert table.loc["lange", "k_hat"] == 3
    for name in INTERNAL:
        assert (tmp_path / "r" / f"{name}_vs_k.png").exists()
        assert CRITERIA[name].label.split("\n")[0] in CRITERIA[name].label
    # the silhouette of a k-means solution of these clouds lies in (0, 1]; Davies-Bouldin is positive
    assert 0 < table.loc["silhouette", "score_at_k_hat"] <= 1 and table.loc["davies_bouldin", "score_at_k_hat"] > 0
