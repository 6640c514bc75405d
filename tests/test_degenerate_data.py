"""Data without spread are refused before anything is computed: rows that are all the same point (as given, or
made so by a preprocess step, which is named), a distance matrix of zeros. Near-constant data keep their own
message. Each exits 2 with one line naming the key; nothing is written; an existing cube stays byte-identical."""

from __future__ import annotations

from pathlib import Path

import re
import numpy as np
import pandas as pd
import pytest

from conftest import cli_in_process, small_config, write_config
from ordercube.pipeline.config.study import parse_config
from ordercube.pipeline.errors import InputError
from ordercube.tasks.datasets.bounds import rows_identical

KMEANS = [{"name": "m", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["lange"]}]
AVERAGE = [{"name": "m", "algorithm": "agglomerative", "params": {"linkage": "average"},
            "predictor": "nearest_object", "criteria": ["lange"]}]
ROWS = 30


@pytest.mark.parametrize("X, identical", [
    (np.ones((5, 3)) * 3, True),
    (np.array([[1.0, np.nan], [1.0, 2.0], [np.nan, 2.0]]), True),  # missing values are not a difference
    (np.array([[1.0, 1e-300], [1.0, 2e-300]]), False),  # a difference, however small, is one
    (np.array([[0.0], [-0.0]]), True),
    (np.ones((1, 3)), False),  # one row: nothing to compare
    (np.ones((4, 0)), False),  # no columns: refused as such elsewhere
])
def test_rows_identical_by_hand(X, identical):
    assert rows_identical(X) is identical


def _table(folder: Path, values: np.ndarray, name: str = "x.csv") -> str:
    frame = pd.DataFrame(values, columns=[f"c{j}" for j in range(values.shape[1])])
    frame.insert(0, "id", [f"r{i}" for i in range(values.shape[0])])
    frame.to_csv(folder / name, index=False)
    return name


def _spread(folder: Path) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(ROWS, 3))


CASES = {
    "constant file": (lambda f: {"kind": "file", "path": _table(f, np.full((ROWS, 2), 3.0))},
                      ["datasets[0].path", "30 rows are all the same point (3, 3)", "nothing to cluster"]),
    "clip above every value": (lambda f: {"kind": "file", "path": _table(f, _spread(f)),
                                          "preprocess": [{"standardize": {}}, {"clip": {"floor": 100, "ceiling": 200}}]},
                               ["datasets[0].preprocess[1]", "the clip step", "makes all 30 rows the same point",
                                "they differ before it", "floor and ceiling"]),
    "standardize by rows of one column": (lambda f: {"kind": "file", "path": _table(f, _spread(f)[:, :1]),
                                                     "preprocess": [{"standardize": {"axis": "rows"}}]},
                                          ["datasets[0].preprocess[0]", "the standardize step (axis: rows)",
                                           "makes all 30 rows the same point"]),
    "distance matrix of zeros": (lambda f: {"kind": "distances", "path": _table(f, np.zeros((ROWS, ROWS)))},
                                 ["datasets[0].path", "every dissimilarity in", "is 0", "30 objects"]),
    "near-constant distances say rescale, not preprocess": (
        lambda f: {"kind": "distances", "path": _table(f, (1 - np.eye(ROWS)) * 1e-200)},
        ["datasets[0].path", "differ by at most 1e-200", "rescale the file"]),
    "near-constant data keep their message": (
        lambda f: {"kind": "file", "path": _table(f, np.arange(ROWS)[:, None] * np.array([[1e-159, 0.0]]))},
        ["datasets[0].path", "differ by at most", "add a preprocess step '- standardize: {axis: columns}'"]),
    "data too near-constant to standardize say rescale, by how much": (  # its variance (1e-400) underflows
        lambda f: {"kind": "file", "path": _table(f, np.arange(ROWS)[:, None] * np.array([[1e-200, 0.0]]))},
        ["datasets[0].path", "differ by at most 2.9e-199", "e.g. 1e199", "a standardize step cannot"]),
}


@pytest.mark.parametrize("case", CASES)
def test_degenerate_data_exit_2_naming_the_key_and_leave_the_cube_as_it_was(tmp_path, case):
    build, words = CASES[case]
    dataset = build(tmp_path)
    methods = AVERAGE if dataset["kind"] == "distances" else KMEANS
    good = dict(dataset, path=_table(tmp_path, _spread(tmp_path) if dataset["kind"] == "file" else
                                     np.abs(np.subtract.outer(np.arange(ROWS), np.arange(ROWS))).astype(float),
                                     "good.csv"))
    good.pop("preprocess", None)
    cube = tmp_path / "cube.zarr"
    raw = small_config(n=[20], k=[2, 3], resamples=2, methods=methods, datasets=[{"name": "d", **good}])
    ran = cli_in_process("run", str(write_config(tmp_path / "good.yaml", **raw)), "--out", str(cube),
                         "--workers", "0", "--no-progress")
    assert ran.returncode == 0, ran.stderr
    before = {str(p.relative_to(cube)): p.read_bytes() for p in sorted(cube.rglob("*")) if p.is_file()}
    bad = write_config(tmp_path / "bad.yaml", **{**raw, "datasets": [{"name": "d", **dataset}]})
    for command in (["validate", str(bad)], ["run", str(bad), "--out", str(cube), "--workers", "0", "--no-progress"],
                    ["run", str(bad), "--out", str(tmp_path / "new.zarr"), "--workers", "0", "--no-progress"]):
        result = cli_in_process(*command)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert all(word in lines[0] for word in words), lines[0]
    assert not (tmp_path / "new.zarr").exists()
    assert {str(p.relative_to(cube)): p.read_bytes() for p in sorted(cube.rglob("*")) if p.is_file()} == before


@pytest.mark.parametrize("data, words", [
    (np.ones((100, 2)) * 3, ["datasets[0].data", "100 rows are all the same point (3, 3)"]),
    (pd.DataFrame({"a": [2.5] * 50, "b": [0.0] * 50}), ["datasets[0].data", "50 rows are all the same point (2.5, 0)"]),
])
def test_arrays_without_spread_from_python_raise_an_input_error(data, words):
    raw = small_config(n=[20], k=[2, 3], resamples=2, methods=KMEANS, datasets=[{"name": "d", "data": data}])
    with pytest.raises(InputError) as caught:
        parse_config(raw)
    assert all(word in str(caught.value) for word in words), str(caught.value)


@pytest.mark.parametrize("column, words", [
    (pd.date_range("2020", periods=40, tz="UTC"), "holds dates (they would be clustered as nanoseconds since 1970)"),
    (pd.to_timedelta(np.arange(40), unit="s"), "holds durations"),
    (np.arange(40) + 1j, "holds complex numbers"),
])
def test_columns_that_are_not_measurements_are_refused_unless_excluded(column, words):
    """Dates and durations convert to nanosecond counts, which would dominate every distance without a word."""
    frame = pd.DataFrame({"when": column, "a": np.arange(40.0), "b": np.arange(40.0) % 7})
    raw = small_config(n=[20], k=[2, 3], resamples=2, methods=KMEANS, datasets=[{"name": "d", "data": frame}])
    expected = rf"^datasets\[0\]\.data: the DataFrame .* column 'when' {re.escape(words)}.*exclude: \['when'\]"
    with pytest.raises(InputError, match=expected):
        parse_config(raw)
    raw["datasets"][0]["exclude"] = ["when"]
    assert parse_config(raw).datasets[0].n_features == 2


def test_a_k_above_the_distinct_rows_is_said_in_a_warning_and_the_data_line(tmp_path):
    """Two distinct points repeated 30 times: k = 3 and 4 can only split identical points (Prediction Strength
    chose k̂ = 4 with share 1 on such data); a k grid up to 2 says nothing."""
    pd.DataFrame(np.repeat([[0.0, 0.0], [1.0, 1.0]], 30, axis=0), columns=["a", "b"]).to_csv(tmp_path / "two.csv",
                                                                                           index=False)
    dataset = [{"name": "two", "kind": "file", "path": str(tmp_path / "two.csv")}]
    result = cli_in_process("validate", str(write_config(tmp_path / "c.yaml", **small_config(
        n=[40], k=[2, 3, 4], resamples=2, methods=KMEANS, datasets=dataset))))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == ["warning: datasets[0]: two holds 2 distinct rows among 60: a k above 2 (k up "
                                          "to 4 is computed) splits identical ones arbitrarily; keep k <= 2 or check "
                                          "the data"]
    assert "; 2 distinct of 60 rows" in result.stdout
    quiet = cli_in_process("validate", str(write_config(tmp_path / "q.yaml", **small_config(
        n=[40], k=[2], resamples=2, methods=KMEANS, datasets=dataset))))
    assert quiet.returncode == 0 and quiet.stderr == "" and "distinct of" not in quiet.stdout


def _distances_with(cell: str) -> np.ndarray:
    values = np.abs(np.subtract.outer(np.arange(ROWS), np.arange(ROWS))).astype(object)
    values[3, 5] = cell
    return values


@pytest.mark.parametrize("values, words", [
    (_distances_with("abc"), "non-numeric cell 'abc'"),
    (_distances_with(""), "1 missing or NaN values"),
    (_distances_with("inf"), "non-finite value 'inf'"),
    ((1 - np.eye(ROWS)) * 1e200, "reaches |x| = 1e+200"),
    ((1 - np.eye(ROWS)) * 1e-200, "differ by at most 1e-200"),
])
def test_a_distance_matrix_error_never_advises_a_key_the_kind_refuses(tmp_path, values, words):
    dataset = {"name": "d", "kind": "distances", "path": _table(tmp_path, values)}
    raw = small_config(n=[20], k=[2, 3], resamples=2, methods=AVERAGE, datasets=[dataset])
    result = cli_in_process("validate", str(write_config(tmp_path / "c.yaml", **raw)))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and words in lines[0], result.stderr
    refused_keys = ("preprocess", "impute", "drop_missing", "standardize", "exclude", "columns:")
    assert not any(key in lines[0] for key in refused_keys), lines[0]
