"""File datasets: reading, preprocessing steps against scikit-learn, the shared real data."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

from pipeline.config import parse_config
from pipeline.datafiles import read_matrix
from tasks.preprocess import apply_steps, clip, impute, log, pca, standardize, top_variance


def test_standardize_matches_sklearn_on_columns_and_rows():
    X = np.random.default_rng(0).normal(3.0, 2.0, size=(30, 5))
    np.testing.assert_allclose(standardize(X, axis="columns"), StandardScaler().fit_transform(X), atol=1e-12)
    np.testing.assert_allclose(standardize(X, axis="rows"), StandardScaler().fit_transform(X.T).T, atol=1e-12)


def test_pca_matches_sklearn_up_to_the_sign_of_each_axis():
    X = np.random.default_rng(1).standard_normal((40, 8)) @ np.diag([5, 4, 3, 2, 1, 1, 1, 1])
    ours, reference = pca(X, components=3), PCA(n_components=3).fit_transform(X)
    for j in range(3):
        assert np.allclose(ours[:, j], reference[:, j], atol=1e-9) or np.allclose(ours[:, j], -reference[:, j], atol=1e-9)


def test_small_steps_by_hand():
    X = np.array([[1.0, 8.0], [4.0, np.nan], [16.0, 2.0]])
    assert np.array_equal(clip(X, floor=2.0, ceiling=10.0)[:, 0], [2.0, 4.0, 10.0])
    np.testing.assert_allclose(log(X, base=2.0)[:, 0], [0.0, 2.0, 4.0])
    assert impute(X, strategy="column_mean")[1, 1] == 5.0
    assert impute(X, strategy="row_mean")[1, 1] == 4.0
    assert np.array_equal(top_variance(np.array([[0.0, 1.0, 5.0], [0.0, 3.0, -5.0]]), features=2),
                          [[1.0, 5.0], [3.0, -5.0]])
    with pytest.raises(ValueError, match="positive"):
        log(np.array([[0.0]]))


def test_drop_missing_keeps_track_of_rows_and_transpose_forgets_them():
    X = np.array([[1.0, 2.0], [np.nan, 1.0], [3.0, 4.0]])
    out, rows = apply_steps(X, [("drop_missing", {})])
    assert rows.tolist() == [0, 2] and out.shape == (2, 2)
    assert apply_steps(X, [("drop_missing", {"max_missing": 1})])[1].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="drop_missing"):
        impute(np.array([[np.nan, np.nan], [1.0, 2.0]]), strategy="row_mean")
    _, rows = apply_steps(X, [("drop_missing", {}), ("transpose", {})])
    assert rows is None


def test_csv_with_a_row_name_column_and_empty_cells(tmp_path):
    (tmp_path / "m.csv").write_text("id,a,b\nr1,1.5,2\nr2,,3\n")
    X = read_matrix(tmp_path / "m.csv", "datasets[0].path")
    assert X.shape == (2, 2) and X[0, 0] == 1.5 and np.isnan(X[1, 0])


def test_npy_is_read_without_pickle(tmp_path):
    np.save(tmp_path / "ok.npy", np.arange(6.0).reshape(3, 2))
    assert read_matrix(tmp_path / "ok.npy", "k").shape == (3, 2)
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="pickle"):
        read_matrix(tmp_path / "objects.npy", "k")


def yeast_dataset(shared, **extra):
    folder = shared / "datasets" / "spellman_yeast_cdc28"
    return {"name": "yeast", "kind": "file", "path": str(folder / "cdc28_800x17.csv"),
            "labels": {"path": str(folder / "labels.csv"), "column": "peak_phase"},
            "preprocess": [{"drop_missing": {"max_missing": 4}}, {"impute": {"strategy": "row_mean"}},
                           {"standardize": {"axis": "rows"}}], **extra}


def test_yeast_cdc28_loads_with_its_five_phase_classes(shared):
    config = parse_config({"name": "y", "seed": 1, "n": ["all", 200], "k": [2, 5], "resamples": 2,
                           "datasets": [yeast_dataset(shared)],
                           "methods": [{"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid",
                                        "criteria": ["lange"]}]})
    dataset = config.datasets[0]
    # four genes miss more than 4 of 17 time points (one misses all) and are dropped
    assert dataset.n == (796, 200) and dataset.true_k == 5 and dataset.data.shape == (796, 17)
    np.testing.assert_allclose(dataset.data.mean(axis=1), 0.0, atol=1e-12)
    np.testing.assert_allclose(dataset.data.std(axis=1), 1.0, atol=1e-12)


def test_alon_gene_clusters_preprocessing_of_seed_002(shared):
    folder = shared / "datasets" / "alon_colon"
    steps = [{"standardize": {"axis": "columns"}}, {"standardize": {"axis": "rows"}}, "transpose", {"pca": {"components": 15}}]
    config = parse_config({"name": "alon", "seed": 1, "n": [1000], "k": [3, 6], "resamples": 2,
                           "datasets": [{"name": "genes", "kind": "file", "path": str(folder / "expression_2000genes.csv"),
                                         "preprocess": steps}],
                           "methods": [{"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid",
                                        "criteria": ["lange"]}]})
    assert config.datasets[0].data.shape == (2000, 15)  # genes are the objects, 15 principal components
