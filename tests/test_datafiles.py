"""File datasets: reading, preprocessing steps against scikit-learn, the shared real data."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

from ordercube.pipeline.config.study import parse_config
from ordercube.pipeline.data.datafiles import read_matrix
from ordercube.tasks.preprocess import apply_steps, clip, impute, log, pca, standardize, top_variance


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


def test_bounds_find_the_first_non_finite_value_and_the_column_that_overflows():
    from ordercube.tasks.datasets.bounds import first_nonfinite, largest_magnitude, too_large, too_small

    X = np.array([[1.0, 2.0], [np.nan, 3.0], [4.0, -np.inf]])
    assert first_nonfinite(X) == (1, 0) and first_nonfinite(X, nan=False) == (2, 1)
    assert first_nonfinite(np.ones((3, 2))) is None
    # sqrt(1e300 / (4 * 10^2 * 2)) = 1e150 / sqrt(800)
    assert largest_magnitude(10, 2) == pytest.approx(1e150 / np.sqrt(800.0))
    safe = np.full((10, 2), 1e148)
    assert too_large(safe) is None
    unsafe = safe.copy()
    unsafe[3, 1] = -1e149
    column, peak, bound = too_large(unsafe)
    assert (column, peak) == (1, 1e149) and bound == largest_magnitude(10, 2)
    # at the bound every sum of squared distances over all pairs is finite; well above it, it is not
    at_bound = np.array([[bound, bound], [-bound, -bound]] * 5)
    assert np.isfinite(((at_bound[:, None, :] - at_bound[None, :, :]) ** 2).sum())
    with np.errstate(over="ignore"):
        above = at_bound * 1e5
        assert not np.isfinite(((above[:, None, :] - above[None, :, :]) ** 2).sum())
    assert too_small(np.array([[1e-200, 0.0], [3e-200, 0.0]])) == pytest.approx(2e-200)
    assert too_small(np.zeros((3, 2))) is None and too_small(np.array([[0.0], [1e-10]])) is None


def test_inf_in_a_csv_is_refused_with_its_text_row_and_column(tmp_path):
    (tmp_path / "m.csv").write_text("id,a,b\nr1,1,2\nr2,3,1e400\n")
    with pytest.raises(ValueError, match=r"'1e400' at data row 2, column 'b'"):
        read_matrix(tmp_path / "m.csv", "k")
    (tmp_path / "ok.csv").write_text("a,b\n1,nan\n1e300,2\n")  # NaN is missing, 1e300 is finite: both read
    X = read_matrix(tmp_path / "ok.csv", "k")
    assert np.isnan(X[0, 1]) and X[1, 0] == 1e300


def test_npy_header_is_checked_against_the_file_size(tmp_path):
    from ordercube.pipeline.data.tables import npy_header
    from ordercube.pipeline.files.inputfile import read_input

    np.save(tmp_path / "ok.npy", np.arange(6, dtype=np.int32).reshape(3, 2))
    shape, dtype = npy_header(read_input(tmp_path / "ok.npy", "k", expected="a file"), "k")
    assert shape == (3, 2) and dtype == np.int32
    data = (tmp_path / "ok.npy").read_bytes()
    (tmp_path / "short.npy").write_bytes(data[:-4])
    with pytest.raises(ValueError, match=r"claims shape \(3, 2\) of int32 \(24 bytes\) but the file holds 20 bytes"):
        npy_header(read_input(tmp_path / "short.npy", "k", expected="a file"), "k")
    with pytest.raises(ValueError, match="not a readable .npy"):
        (tmp_path / "text.npy").write_text("hello")
        npy_header(read_input(tmp_path / "text.npy", "k", expected="a file"), "k")


def test_labels_from_npy_of_integers_or_strings_and_from_a_csv_column(tmp_path):
    from ordercube.pipeline.data.labelfiles import read_labels_file

    np.save(tmp_path / "ints.npy", np.array([7, 3, 7, 9]))
    assert read_labels_file(tmp_path / "ints.npy", None, "k").labels.codes.tolist() == [1, 0, 1, 2]
    np.save(tmp_path / "names.npy", np.array(["b", "a", "b"]))
    assert read_labels_file(tmp_path / "names.npy", None, "k").labels.codes.tolist() == [1, 0, 1]
    (tmp_path / "l.csv").write_text("id,phase\nx,G1\ny,S\nz,G1\n")
    assert read_labels_file(tmp_path / "l.csv", "phase", "k").labels.codes.tolist() == [0, 1, 0]
    assert read_labels_file(tmp_path / "l.csv", None, "k").labels.codes.tolist() == [0, 1, 0]  # the last column
    with pytest.raises(ValueError, match=r"k.column: expected one column name, got \['id', 'phase'\]"):
        read_labels_file(tmp_path / "l.csv", ["id", "phase"], "k")


def test_preprocessing_that_overflows_names_the_step(tmp_path):
    from ordercube.pipeline.data.datafiles import preprocess

    X = np.array([[1e300, 1.0], [-1e300, 2.0], [5e299, 3.0]])
    with pytest.raises(ValueError, match=r"p\[1\]: the standardize step overflows float64 on values up to \|x\| = 1e\+300"):
        preprocess(X, [("clip", {"floor": -1e301}), ("standardize", {})], "p")
    logged, rows = preprocess(np.abs(X), [("log", {"base": 10.0}), ("standardize", {})], "p")
    assert rows.tolist() == [0, 1, 2] and np.isfinite(logged).all()
    np.testing.assert_allclose(logged.mean(axis=0), 0.0, atol=1e-12)
