"""Dissimilarity input: a distance-matrix file as a dataset, halves taken as
sub-matrices, clustered by the algorithms that take dissimilarities; on Euclidean distances every kernel, the
predictor and a whole cube equal the same methods on the points themselves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cdist

from conftest import cli_in_process, write_config
from ordercube.pipeline.cube.owner import open_cube
from ordercube.tasks.algorithms import dissimilarity, hierarchical, spectral
from ordercube.tasks.datasets.sources import node_halves
from ordercube.tasks.predictors import nearest_neighbor, nearest_object


def _points(seed=3, per=30):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(center, 0.5, size=(per, 2)) for center in ((0, 0), (4, 0), (0, 4))])


@pytest.mark.parametrize("method", ["average", "complete", "single", "path_based", "spectral"])
def test_each_kernel_on_euclidean_distances_is_the_same_method_on_the_points(method):
    X = _points()
    order = np.random.default_rng(1).permutation(X.shape[0])
    first, _ = node_halves(cdist(X, X), order)
    points = X[order[:45]]
    ks = [2, 3, 4, 5]
    if method == "path_based":
        on_points, on_distances = hierarchical.path_based_many(points, ks, None), dissimilarity.path_based_many(first, ks, None)
    elif method == "spectral":
        on_points = spectral.spectral_many(points, ks, np.random.default_rng(2))
        on_distances = dissimilarity.spectral_many(first, ks, np.random.default_rng(2))
    else:
        on_points = hierarchical.agglomerative_many(points, ks, None, linkage=method)
        on_distances = dissimilarity.agglomerative_many(first, ks, None, linkage=method)
    for k in ks:
        assert np.array_equal(on_points[k], on_distances[k]), k


def test_halves_are_sub_matrices_and_nearest_object_is_nearest_neighbor():
    X = _points(per=10)
    D = cdist(X, X)
    order = np.random.default_rng(0).permutation(30)[:20]
    first, second = node_halves(D, order)
    np.testing.assert_array_equal(first[:, :10], D[np.ix_(order[:10], order[:10])])
    np.testing.assert_array_equal(second[:, 10:], D[np.ix_(order[10:], order[:10])])
    labels = np.random.default_rng(1).integers(0, 3, size=10)
    assert np.array_equal(nearest_object(first, labels, 3, second), nearest_neighbor(X[order[:10]], labels, 3, X[order[10:]]))


def _files(folder):
    X = _points()
    names = [f"o{i}" for i in range(X.shape[0])]
    pd.DataFrame({"id": names, "x": X[:, 0], "y": X[:, 1]}).to_csv(folder / "points.csv", index=False)
    matrix = pd.DataFrame(cdist(X, X), columns=names)
    matrix.insert(0, "id", names)
    matrix.to_csv(folder / "distances.csv", index=False)
    pd.DataFrame({"id": names, "group": np.repeat(list("abc"), 30)}).to_csv(folder / "labels.csv", index=False)
    return matrix


def _config(kind, path, predictor, methods=None, **dataset):
    return {"name": "d", "seed": 4, "n": [60, "all"], "k": [2, 3, 4], "resamples": 5,
            "datasets": [{"name": "d", "kind": kind, "path": path, "labels": {"path": "labels.csv", "column": "group"},
                          **dataset}],
            "methods": methods or [
                {"name": "avg", "algorithm": "agglomerative", "params": {"linkage": "average"}, "predictor": predictor,
                 "criteria": ["lange", "agreement"]},
                {"name": "pb", "algorithm": "path_based", "predictor": predictor, "criteria": ["lange"]},
                {"name": "sp", "algorithm": "spectral", "predictor": predictor, "criteria": ["lange"]}]}


def test_a_distances_cube_equals_the_points_cube_bit_for_bit(tmp_path):
    _files(tmp_path)
    cubes = {}
    for kind, path, predictor in (("file", "points.csv", "nearest_neighbor"), ("distances", "distances.csv", "nearest_object")):
        config = write_config(tmp_path / f"{kind}.yaml", **_config(kind, path, predictor))
        result = cli_in_process("run", str(config), "--out", str(tmp_path / f"{kind}.zarr"), "--workers", "0", "--no-progress")
        assert result.returncode == 0, result.stderr
        cubes[kind] = open_cube(tmp_path / f"{kind}.zarr").load()
    assert "data d: 90 x 90 dissimilarities from" in result.stdout and "3 classes a 30, b 30, c 30" in result.stdout
    for variable in ("lange", "agreement", "status"):
        np.testing.assert_array_equal(cubes["file"][variable].values, cubes["distances"][variable].values)
    report = cli_in_process("report", str(tmp_path / "distances.zarr"), "--out", str(tmp_path / "r"))
    assert report.returncode == 0, report.stderr
    table = pd.read_csv(tmp_path / "r" / "selection.csv")
    assert set(table[(table.method == "avg") & (table.n == 90)]["k_hat"]) == {3}


def _bad_matrix(matrix, change):
    values = matrix.drop(columns="id").to_numpy().copy()
    change(values)
    bad = pd.DataFrame(values, columns=matrix.columns[1:])
    bad.insert(0, "id", matrix["id"])
    return bad


@pytest.mark.parametrize("change, words", [
    (lambda D: D.__setitem__((2, 5), -1.0), ["negative dissimilarity -1", "row 3, column 6", "distances, not similarities"]),
    (lambda D: D.__setitem__((4, 4), 0.5), ["0.5 on its diagonal at row 5", "set the diagonal to 0"]),
    (lambda D: D.__setitem__((1, 7), D[1, 7] + 1), ["not symmetric", "row 2, column 8", "(D + D.T) / 2"]),
])
def test_a_matrix_that_is_not_a_dissimilarity_is_refused(tmp_path, change, words):
    matrix = _files(tmp_path)
    _bad_matrix(matrix, change).to_csv(tmp_path / "distances.csv", index=False)
    config = write_config(tmp_path / "c.yaml", **_config("distances", "distances.csv", "nearest_object"))
    result = cli_in_process("run", str(config), "--out", str(tmp_path / "c.zarr"), "--no-progress")
    assert result.returncode == 2 and "datasets[0].path" in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, (word, result.stderr)
    assert not (tmp_path / "c.zarr").exists()


AVERAGE = {"name": "avg", "algorithm": "agglomerative", "params": {"linkage": "average"}, "predictor": "nearest_object",
           "criteria": ["lange"]}


@pytest.mark.parametrize("methods, dataset, words", [
    ([{**AVERAGE, "params": {}}], {}, ["methods[0].params.linkage", "'ward'", "average"]),
    ([{**AVERAGE, "algorithm": "kmeans", "params": {}}], {}, ["methods[0].algorithm", "'kmeans'", "agglomerative"]),
    ([{**AVERAGE, "predictor": "nearest_neighbor"}], {}, ["methods[0].predictor", "nearest_object"]),
    ([{**AVERAGE, "criteria": ["lange", "prediction_strength"]}], {}, ["methods[0].criteria[1]", "prediction_strength"]),
    ([{**AVERAGE, "criteria": ["pairwise"]}], {"n": [20]}, ["methods[0].criteria[0]", "pairwise"]),
    ([{**AVERAGE, "criteria": ["silhouette"]}], {}, ["methods[0].criteria[0]", "silhouette"]),
    ([AVERAGE], {"preprocess": [{"standardize": {"axis": "rows"}}]}, ["datasets[0].preprocess", "no 'preprocess'"]),
])
def test_methods_that_do_not_read_dissimilarities_are_refused(tmp_path, methods, dataset, words):
    _files(tmp_path)
    config = write_config(tmp_path / "c.yaml", **_config("distances", "distances.csv", "nearest_object", methods, **dataset))
    result = cli_in_process("validate", str(config))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, (word, result.stderr)


def test_points_with_the_dissimilarity_predictor_and_a_mixed_config_are_refused(tmp_path):
    _files(tmp_path)
    config = write_config(tmp_path / "p.yaml", **_config("file", "points.csv", "nearest_object"))
    result = cli_in_process("validate", str(config))
    assert result.returncode == 2 and "methods[0].predictor" in result.stderr and "kind: distances" in result.stderr
    mixed = _config("distances", "distances.csv", "nearest_object", [AVERAGE])
    mixed["datasets"].append({"name": "p", "kind": "file", "path": "points.csv"})
    result = cli_in_process("validate", str(write_config(tmp_path / "m.yaml", **mixed)))
    assert result.returncode == 2 and "separate configs" in result.stderr, result.stderr
