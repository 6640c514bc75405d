"""Reading a user's data explicitly: header rows, columns, row names, labels from the same file, true k,
arrays and DataFrames from Python, Dudoit & Fridlyand's gene filter. Each bad input exits 2 naming its key."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_iris

from conftest import cli_in_process, small_config, write_config
from ordercube.pipeline.config.study import parse_config
from ordercube.pipeline.errors import ConfigError
from ordercube.tasks.preprocess import apply_steps, gene_filter

IRIS = load_iris()
ONE_METHOD = [{"name": "m", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["lange"]}]


def _iris_csv(folder: Path, *, header: bool, names: bool = True) -> Path:
    """Iris with its species in the fifth column, as names (setosa, ...) or as codes 0, 1, 2."""
    frame = pd.DataFrame(IRIS.data, columns=["sepal_length", "sepal_width", "petal_length", "petal_width"])
    frame["species"] = IRIS.target_names[IRIS.target] if names else IRIS.target
    path = folder / "iris.csv"
    frame.to_csv(path, header=header, index=False)
    return path


def _config(tmp_path: Path, dataset: dict, **overrides) -> Path:
    config = small_config(n=[40], k=[2, 3, 4], methods=ONE_METHOD, datasets=[{"name": "d", "kind": "file", **dataset}])
    config.update(overrides)
    return write_config(tmp_path / "c.yaml", **config)


def _refused(tmp_path: Path, dataset: dict, fragments: list[str], **overrides) -> str:
    result = cli_in_process("validate", str(_config(tmp_path, dataset, **overrides)))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), (result.stdout, result.stderr)
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def _data_line(stdout: str, name: str = "d") -> str:
    lines = [line for line in stdout.splitlines() if line.startswith(f"data {name}: ")]
    assert len(lines) == 1, stdout
    return lines[0]


def test_headerless_iris_reads_150_rows_4_features_3_classes_when_declared(tmp_path):
    _iris_csv(tmp_path, header=False)
    path = _config(tmp_path, {"path": "iris.csv", "header": False, "labels": {"column": 5}})
    result = cli_in_process("validate", str(path))
    assert result.returncode == 0, result.stderr
    line = _data_line(result.stdout)
    assert line.startswith("data d: 150 rows x 4 features from ") and "no header row (columns named 1, 2, ..." in line
    assert "labels 5 from the same table: 3 classes setosa 50, versicolor 50, virginica 50" in line and "true k 3" in line
    from ordercube.pipeline.config.study import load_config
    dataset = load_config(path).datasets[0]
    np.testing.assert_array_equal(dataset.data, IRIS.data)  # the first row is data, not lost as a header
    assert dataset.true_k == 3 and np.bincount(dataset.labels).tolist() == [50, 50, 50]
    assert dataset.identity["reading"] == {"header": False, "labels_from_data": "5"}


def test_headerless_iris_is_refused_when_its_first_row_would_be_a_header(tmp_path):
    _iris_csv(tmp_path, header=False)
    _refused(tmp_path, {"path": "iris.csv", "labels": {"column": 5}},
             ["datasets[0].header", "(5.1, 3.5, 1.4, 0.2)", "looks like data", "set header: false"])
    _iris_csv(tmp_path, header=False, names=False)  # species as 0, 1, 2: every cell of the first row is a number
    _refused(tmp_path, {"path": "iris.csv"}, ["datasets[0].header", "5.1, 3.5, 1.4, 0.2, 0", "header: false"])


def test_a_label_column_is_never_a_feature(tmp_path):
    _iris_csv(tmp_path, header=True)
    # undeclared, a text label column is refused with the ways out (it was silently taken as row names or features)
    _refused(tmp_path, {"path": "iris.csv"}, ["datasets[0].path", "'setosa'", "column 'species'", "data row 1",
                                              "labels: {column: 'species'}", "exclude: ['species']"])
    _iris_csv(tmp_path, header=True, names=False)  # a numeric label column is a feature only if not named as labels
    config = parse_config(yaml_of(_config(tmp_path, {"path": "iris.csv", "labels": {"column": "species"}})), base=tmp_path)
    assert config.datasets[0].data.shape == (150, 4) and config.datasets[0].true_k == 3
    # named as the column of a separate labels file, a data column of that name is dropped too
    pd.DataFrame({"species": IRIS.target}).to_csv(tmp_path / "labels.csv", index=False)
    config = parse_config(yaml_of(_config(tmp_path, {"path": "iris.csv", "labels": {"path": "labels.csv",
                                                                                   "column": "species"}})), base=tmp_path)
    assert config.datasets[0].data.shape == (150, 4)
    assert "column 'species' of the data is the labels column: not a feature" in config.datasets[0].read


def yaml_of(path: Path) -> dict:
    import yaml
    return yaml.safe_load(path.read_text())


def test_header_false_over_a_header_row_is_refused(tmp_path):
    _iris_csv(tmp_path, header=True)
    _refused(tmp_path, {"path": "iris.csv", "header": False, "labels": {"column": 5}},
             ["datasets[0].header", "'sepal_length' in column 1", "looks like a header row", "set header: true"])


def test_columns_and_exclude_choose_the_features_by_name_or_position(tmp_path):
    _iris_csv(tmp_path, header=True)
    keep = {"path": "iris.csv", "columns": ["petal_length", "petal_width"], "labels": {"column": "species"}}
    config = parse_config(yaml_of(_config(tmp_path, keep)), base=tmp_path)
    np.testing.assert_array_equal(config.datasets[0].data, IRIS.data[:, 2:])
    drop = {"path": "iris.csv", "exclude": ["sepal_width"], "labels": {"column": "species"}}
    np.testing.assert_array_equal(parse_config(yaml_of(_config(tmp_path, drop)), base=tmp_path).datasets[0].data,
                                  IRIS.data[:, [0, 2, 3]])
    _iris_csv(tmp_path, header=False)
    by_position = {"path": "iris.csv", "header": False, "columns": [4, 1], "labels": {"column": 5}}
    np.testing.assert_array_equal(parse_config(yaml_of(_config(tmp_path, by_position)), base=tmp_path).datasets[0].data,
                                  IRIS.data[:, [3, 0]])


@pytest.mark.parametrize("dataset, fragments", [
    ({"columns": ["petal_lenght"]}, ["datasets[0].columns[0]", "'petal_lenght'", "named by the names in its header row",
                                     "'petal_length'"]),
    ({"exclude": ["nope"], "labels": {"column": "species"}}, ["datasets[0].exclude[0]", "'nope'", "'sepal_width'"]),
    ({"columns": ["sepal_length"], "exclude": ["sepal_width"]}, ["datasets[0].exclude", "not both"]),
    ({"columns": ["species", "sepal_length"], "labels": {"column": "species"}},
     ["datasets[0].columns[0]", "column 'species' is the labels column"]),
    ({"columns": []}, ["datasets[0].columns", "non-empty list"]),
    ({"labels": {"column": ["species", "sepal_length"]}}, ["datasets[0].labels.column", "one label set",
                                                           "list the dataset once per label column"]),
    ({"labels": [{"column": "species"}, {"column": "sepal_length"}]}, ["datasets[0].labels", "a list of 2",
                                                                       "list the dataset once per label column"]),
    ({"labels": {"column": "kind"}}, ["datasets[0].labels.column", "no column 'kind'", "'species'"]),
    ({"row_names": "id"}, ["datasets[0].row_names", "no column 'id'"]),
    ({"header": "yes"}, ["datasets[0].header", "'yes'", "true or false"]),
    ({"labels": {"column": "species"}, "true_k": 0}, ["datasets[0].true_k", "got 0", ">= 1"]),
    ({"labels": {"column": "species"}, "true_k": 2.5}, ["datasets[0].true_k", "2.5"]),
    ({"labels": {"column": "species"}, "true_k": "3"}, ["datasets[0].true_k", "'3'"]),
])
def test_bad_reading_options_exit_2_naming_the_key(tmp_path, dataset, fragments):
    _iris_csv(tmp_path, header=True)
    _refused(tmp_path, {"path": "iris.csv", **dataset}, fragments)


def test_header_on_an_npy_file_and_synthetic_reading_keys_are_refused(tmp_path):
    np.save(tmp_path / "x.npy", IRIS.data)
    _refused(tmp_path, {"path": "x.npy", "header": True}, ["datasets[0].header", "only .csv files"])
    config = small_config(datasets=[{"name": "g", "kind": "lange_gaussians3", "columns": [1]}])
    result = cli_in_process("validate", str(write_config(tmp_path / "s.yaml", **config)))
    assert result.returncode == 2 and "datasets[0].columns: only file datasets" in result.stderr


def test_row_names_explicit_inferred_from_an_empty_header_cell_or_refused_when_ambiguous(tmp_path):
    frame = pd.DataFrame({"a": np.arange(8.0), "b": np.arange(8.0) % 3}, index=[f"s{i}" for i in range(8)])
    frame.to_csv(tmp_path / "named.csv")  # pandas' (and R's) row names: the first header cell is empty
    config = parse_config(yaml_of(_config(tmp_path, {"path": "named.csv"}, n=[8], k=[2])), base=tmp_path)
    np.testing.assert_array_equal(config.datasets[0].data, frame.to_numpy())
    assert "row names from column 1 (no name in the header row), inferred from its empty header cell" in \
        config.datasets[0].read
    pd.DataFrame({"group": list("xxyyzzww"), "a": np.arange(8.0)}).to_csv(tmp_path / "g.csv", index=False)
    _refused(tmp_path, {"path": "g.csv"}, ["datasets[0].path", "'x'", "column 'group'", "row_names: 'group'"], n=[8], k=[2])
    explicit = parse_config(yaml_of(_config(tmp_path, {"path": "g.csv", "row_names": "group"}, n=[8], k=[2])),
                            base=tmp_path).datasets[0]
    assert explicit.data.shape == (8, 1) and "row names from column 'group'" in explicit.read


def test_true_k_overrides_the_classes_and_is_printed(tmp_path):
    _iris_csv(tmp_path, header=True)
    path = _config(tmp_path, {"path": "iris.csv", "labels": {"column": "species"}, "true_k": 2})
    result = cli_in_process("validate", str(path))
    assert result.returncode == 0, result.stderr
    assert _data_line(result.stdout).endswith("3 classes setosa 50, versicolor 50, virginica 50); true k 2 (given)")
    no_labels = _config(tmp_path, {"path": "iris.csv", "exclude": ["species"], "true_k": 3})
    assert _data_line(cli_in_process("validate", str(no_labels)).stdout).endswith("true k 3 (given)")
    with pytest.warns(UserWarning, match=r"datasets\[0\].true_k: 7 is not among the k computed \(\[2, 3, 4\]\)"):
        parse_config(yaml_of(_config(tmp_path, {"path": "iris.csv", "exclude": ["species"], "true_k": 7})), base=tmp_path)


def test_run_prints_the_data_line_of_every_dataset(tmp_path):
    _iris_csv(tmp_path, header=False)
    config = small_config(n=[40], k=[2, 3], resamples=2, methods=ONE_METHOD, datasets=[
        {"name": "iris", "kind": "file", "path": "iris.csv", "header": False, "labels": {"column": 5}},
        {"name": "gauss", "kind": "lange_gaussians3"}])
    result = cli_in_process("run", str(write_config(tmp_path / "c.yaml", **config)), "--out", str(tmp_path / "c.zarr"),
                            "--workers", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    assert _data_line(result.stdout, "iris").startswith("data iris: 150 rows x 4 features from ")
    assert _data_line(result.stdout, "gauss") == "data gauss: synthetic lange_gaussians3, 2 features, n fresh points " \
        "per trial; true k 3"


# In-memory datasets (the Python API's contract): parse_config with arrays and DataFrames

def _memory(dataset: dict, **overrides) -> dict:
    config = small_config(n=[40], k=[2, 3, 4], methods=ONE_METHOD, datasets=[{"name": "mem", **dataset}])
    config.update(overrides)
    return config


def test_a_numpy_array_with_labels_reads_like_a_file():
    config = parse_config(_memory({"data": IRIS.data, "labels": IRIS.target_names[IRIS.target].tolist()}))
    dataset = config.datasets[0]
    assert dataset.kind == "memory" and dataset.true_k == 3 and dataset.n_features == 4
    np.testing.assert_array_equal(dataset.data, IRIS.data)
    assert dataset.read.startswith("150 rows x 4 features from the array datasets[0].data")
    assert "labels given from Python: 3 classes setosa 50, versicolor 50, virginica 50" in dataset.read
    assert config.raw["datasets"][0]["data"] == "<ndarray of shape (150, 4) given from Python>"
    json.dumps(config.raw)  # what the cube stores as its config attribute
    changed = IRIS.data.copy()
    changed[0, 0] += 0.1
    again = parse_config(_memory({"data": changed, "labels": IRIS.target}))
    assert again.fingerprint != config.fingerprint  # changed data is noticed on resume
    assert parse_config(_memory({"data": IRIS.data.copy(), "labels": IRIS.target_names[IRIS.target].tolist()})
                        ).fingerprint == config.fingerprint


def test_a_dataframe_with_a_label_column_and_exclusions():
    frame = pd.DataFrame(IRIS.data, columns=IRIS.feature_names)
    frame["species"] = pd.Categorical(IRIS.target_names[IRIS.target])
    dataset = parse_config(_memory({"data": frame, "labels": {"column": "species"},
                                    "exclude": ["sepal width (cm)"], "preprocess": [{"standardize": {}}]})).datasets[0]
    assert dataset.data.shape == (150, 3) and dataset.true_k == 3
    np.testing.assert_allclose(dataset.data.std(axis=0), 1.0)
    with pytest.raises(ConfigError, match=r"datasets\[0\].data: the DataFrame datasets\[0\].data has a non-numeric "
                                          r"cell 'setosa' in column 'species', row index 0"):
        parse_config(_memory({"data": frame}))


@pytest.mark.parametrize("dataset, pattern", [
    ({"data": np.array([[1.0, np.inf]] * 10)}, r"datasets\[0\].data: the array datasets\[0\].data has the non-finite "
                                               r"value inf at row index 0, column 1"),
    ({"data": np.array([[1.0, np.nan]] + [[2.0, 1.0]] * 9)}, r"datasets\[0\].data: .*1 missing or NaN.*impute"),
    ({"data": np.full((10, 2), 1e200)}, r"datasets\[0\].data: .*standardize"),
    ({"data": [[1.0, 2.0]] * 10}, r"datasets\[0\].data: expected a NumPy 2-D array or a pandas DataFrame, got list"),
    ({"data": np.zeros((2, 2, 2))}, r"datasets\[0\].data: expected a 1-D or 2-D array"),
    ({"data": np.ones((10, 2)), "labels": [0, 1]}, r"datasets\[0\].labels: 2 labels for the 10 rows"),
    ({"data": np.ones((10, 2)), "labels": [0] * 9 + [None]}, r"datasets\[0\].labels: .*missing label at row index 9"),
    ({"data": np.ones((10, 2)), "path": "x.csv"}, r"datasets\[0\].path: both 'path' and 'data'"),
    ({"data": np.ones((10, 2)), "kind": "rings3"}, r"datasets\[0\].data: only file datasets take 'data'"),
    ({"data": np.ones((10, 2)), "columns": [5]}, r"datasets\[0\].columns\[0\]: no column 5 .*by index from 0"),
])
def test_bad_arrays_are_refused_naming_the_key(dataset, pattern):
    with pytest.raises(ConfigError, match=pattern):
        parse_config(_memory(dataset, n=[8], k=[2]))


# Dudoit & Fridlyand's gene filter

def test_gene_filter_by_hand():
    X = np.array([[50.0, 100.0, 20000.0, 1000.0],
                  [700.0, 650.0, 15000.0, 5200.0],
                  [90.0, 3000.0, 17000.0, 1100.0]])
    # after floor 100 / ceiling 16000: gene 0 = 100..700 (fold 7, diff 600: kept); gene 1 = 100..3000 (kept);
    # gene 2 = 15000..16000 (fold 1.07: dropped); gene 3 = 1000..5200 (fold 5.2, diff 4200: kept)
    out = gene_filter(X)
    np.testing.assert_array_equal(out, [[100.0, 100.0, 1000.0], [700.0, 650.0, 5200.0], [100.0, 3000.0, 1100.0]])
    # the paper excludes at max/min <= 5 and max - min <= 500: exactly 5 or 500 is dropped
    edge = np.array([[100.0, 100.0], [500.0, 600.0]])  # gene 0: fold 5 exactly; gene 1: fold 6, difference 500
    assert gene_filter(edge).shape == (2, 0)
    assert gene_filter(edge, min_difference=400).tolist() == [[100.0], [600.0]]
    logged, _ = apply_steps(X, [("gene_filter", {}), ("log", {"base": 10})])
    np.testing.assert_allclose(logged[:, 0], [2.0, np.log10(700.0), 2.0])


def test_gene_filter_on_alon_colon_keeps_1224_of_2000_genes(shared):
    path = shared / "datasets" / "alon_colon" / "expression_2000genes.csv"
    config = parse_config(_memory({}, n=[40], datasets=[{
        "name": "colon", "kind": "file", "path": str(path),
        "preprocess": [{"gene_filter": {}}, {"log": {"base": 10}}]}]))
    assert config.datasets[0].data.shape == (62, 1224)
    assert "62 rows x 2000 features" in config.datasets[0].read and "-> 62 x 1224 after gene_filter, log" in \
        config.datasets[0].read


def test_gene_filter_parameters_are_checked(tmp_path):
    np.savetxt(tmp_path / "x.csv", np.arange(40.0).reshape(10, 4) * 100 + 1, delimiter=",", header="a,b,c,d", comments="")
    _refused(tmp_path, {"path": "x.csv", "preprocess": [{"gene_filter": {"floor": 20000}}]},
             ["datasets[0].preprocess[0].gene_filter.floor", "above ceiling = 16000"], n=[8], k=[2])
    _refused(tmp_path, {"path": "x.csv", "preprocess": [{"gene_filter": {"floor": 0}}]},
             ["datasets[0].preprocess[0].gene_filter.floor", "0"], n=[8], k=[2])
    _refused(tmp_path, {"path": "x.csv", "preprocess": [{"gene_filter": {"fold": 3}}]},
             ["datasets[0].preprocess[0].gene_filter", "'fold'", "min_fold"], n=[8], k=[2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _refused(tmp_path, {"path": "x.csv", "preprocess": [{"gene_filter": {"min_fold": 1000}}]},
                 ["datasets[0].path", "0 columns left after preprocessing"], n=[8], k=[2])


def test_an_in_memory_dataset_runs_and_changed_data_is_refused_on_resume(tmp_path):
    """The contract the Python API builds on: parse_config with a DataFrame, run_sweep on a real LocalCluster."""
    from ordercube.pipeline.errors import InputError
    from ordercube.pipeline.run.sweep import run_sweep
    from ordercube.pipeline.cube.owner import open_cube

    frame = load_iris(as_frame=True).frame  # four features and the integer 'target'
    raw = small_config(n=[40], k=[2, 3], resamples=2, datasets=[{"name": "iris", "data": frame,
                                                                  "labels": {"column": "target"}}],
                       methods=[{**ONE_METHOD[0], "criteria": ["lange", "agreement"]}])
    out = str(tmp_path / "mem.zarr")
    summary = run_sweep(parse_config(raw, out=out), workers=1, show_progress=False)
    assert summary.computed == 4 and summary.failed == 0
    cube = open_cube(out)
    assert int((cube["status"] == 1).sum()) == 4 and cube["true_k"].sel(dataset="iris").item() == 3
    assert "<DataFrame of shape (150, 5) given from Python>" in cube.attrs["ordercube_config"]
    changed = frame.copy()
    changed.iloc[0, 0] += 1.0
    with pytest.raises(InputError, match=r"dataset 'iris' differs .* \['sha256'\]"):
        run_sweep(parse_config({**raw, "datasets": [{**raw["datasets"][0], "data": changed}]}, out=out),
                  workers=1, show_progress=False)


@settings(max_examples=60, deadline=None)
@given(cells=st.lists(st.lists(st.one_of(st.none(), st.sampled_from(["1", "-2", "3.25", "1e3", "1e400", "-0", "0x1F",
                                                                      "nan", "abc", " 4 ", "7.", ".5", "1,5", "inf",
                                                                      "9007199254740993", "2.5e-310"]),
                                         st.floats(allow_nan=False).map(repr), st.integers(-10**6, 10**6).map(str)),
                               min_size=3, max_size=3), min_size=1, max_size=6))
def test_a_tables_numbers_in_one_conversion_are_each_columns_own(cells):
    """text_numbers (the whole table at once) gives, cell for cell, the bits of as_numbers on each column."""
    from ordercube.pipeline.data.tables import as_numbers, text_numbers

    frame = pd.DataFrame(cells, dtype=object)
    together = text_numbers(frame)
    if together is None:  # a conversion that needs a column at a time: nothing to compare
        return
    for j in range(frame.shape[1]):
        one = as_numbers(frame[j]).to_numpy(dtype=np.float64)
        np.testing.assert_array_equal(together[:, j].view(np.int64), one.view(np.int64), err_msg=f"column {j}")


@pytest.mark.parametrize("typo", ["0.64O42", "5,1", "n/a?"])
def test_a_first_column_of_numbers_with_a_mistyped_cell_is_refused_not_read_as_row_names(tmp_path, typo):
    """One mistyped number in the first column made the whole column row names "inferred from its distinct text
    values": a feature dropped, silently. A column of numbers but for a few cells is refused, naming the cell;
    declared as the row names it is read as such, and a column of names (text in most cells) is still inferred."""
    values = np.random.default_rng(3).normal(size=(40, 4)).round(4)
    values[:, 0] = 4.0 + 0.025 * np.arange(40)  # distinct, as the defect needed (else it was refused already)
    cells = pd.DataFrame(values, columns=["sepal_length", "sepal_width", "petal_length", "petal_width"]).astype(str)
    cells.loc[6, "sepal_length"] = typo
    cells.to_csv(tmp_path / "typo.csv", index=False)
    _refused(tmp_path, {"path": "typo.csv"}, ["datasets[0].row_names", "column 'sepal_length' of",
                                              f"{typo!r} in data row 7", "set row_names: 'sepal_length'"])
    declared = cli_in_process("validate", str(_config(tmp_path, {"path": "typo.csv", "row_names": "sepal_length"})))
    assert declared.returncode == 0 and "40 rows x 3 features" in _data_line(declared.stdout), declared.stderr
    named = cells.assign(sepal_length=[f"plant{i}" if i != 6 else "7" for i in range(40)])
    named.to_csv(tmp_path / "named.csv", index=False)
    inferred = cli_in_process("validate", str(_config(tmp_path, {"path": "named.csv"})))
    line = _data_line(inferred.stdout)
    assert inferred.returncode == 0 and "40 rows x 3 features" in line and "inferred from its distinct text" in line
