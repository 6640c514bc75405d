"""Labels are matched to the data's rows: by row name when both files name their rows, by position only when the
labels file names none; a labels path that is not a regular file is refused before a byte is read. Every refusal
exits 2 with one line naming the key, writes nothing, and leaves an existing cube byte for byte as it was."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import pdist, squareform
from sklearn.datasets import load_iris

from conftest import cli_in_process, small_config, write_config
from ordercube.pipeline.config.study import parse_config
from ordercube.pipeline.errors import ConfigError

IRIS = load_iris()
NAMES = [f"s{i}" for i in range(150)]
SPECIES = IRIS.target_names[IRIS.target]
KMEANS = [{"name": "m", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["lange"]}]
AVERAGE = [{"name": "m", "algorithm": "agglomerative", "params": {"linkage": "average"},
            "predictor": "nearest_object", "criteria": ["lange"]}]


def _files(folder: Path) -> None:
    """Iris with row names s0..s149 as points and as dissimilarities, and labels files of every kind."""
    points = pd.DataFrame(IRIS.data, columns=["a", "b", "c", "d"])
    points.insert(0, "id", NAMES)
    points.to_csv(folder / "iris.csv", index=False)
    distances = pd.DataFrame(squareform(pdist(IRIS.data)), columns=NAMES)
    distances.insert(0, "id", NAMES)
    distances.to_csv(folder / "dist.csv", index=False)
    pd.DataFrame(IRIS.data).to_csv(folder / "unnamed.csv", index=False)
    labels = pd.DataFrame({"id": NAMES, "species": SPECIES})
    labels.to_csv(folder / "ordered.csv", index=False)
    labels.sample(frac=1, random_state=0).to_csv(folder / "shuffled.csv", index=False)
    labels.assign(id=[f"{name}x" for name in NAMES]).to_csv(folder / "renamed.csv", index=False)
    labels.iloc[:149].to_csv(folder / "partial.csv", index=False)
    pd.concat([labels, pd.DataFrame({"id": ["s150"], "species": ["setosa"]})]).to_csv(folder / "extra.csv", index=False)
    labels.assign(id=NAMES[:149] + ["s0"]).to_csv(folder / "twice.csv", index=False)
    labels[["species"]].to_csv(folder / "plain.csv", index=False)
    labels.rename(columns={"id": ""}).sample(frac=1, random_state=1).to_csv(folder / "r_style.csv", index=False)


def _dataset(kind: str, labels: str, data: str = "") -> dict:
    path = data or ("iris.csv" if kind == "file" else "dist.csv")
    entry = {"name": "d", "kind": kind, "path": path, "labels": {"path": labels}}
    if data == "unnamed.csv":
        entry["header"] = True
    return entry


@pytest.mark.parametrize("data_names, ids, code, words", [
    ("r", range(1, 151), 0, "matched by row name (column 'id')"),  # R's write.csv: row numbers under an empty cell
    ("r", "shuffled 1..150", 0, "reordered to the data's rows by row name (column 'id'"),
    ("none", range(150), 0, "by position (neither file names its rows)"),  # row numbers in order: nothing to match
    ("none", "shuffled 1..150", 2, "error: datasets[0].labels.path: "),
    ("none", "shuffled 0..149", 2, "column 'id' numbers its 150 rows out of order"),
])
def test_labels_with_row_numbers_are_matched_to_r_row_names_or_refused_when_shuffled(tmp_path, data_names, ids, code,
                                                                                       words):
    points = pd.DataFrame(IRIS.data, columns=["a", "b", "c", "d"])
    if data_names == "r":
        points.index = range(1, 151)
        points.to_csv(tmp_path / "iris.csv")  # an empty header cell over 1..150
    else:
        points.to_csv(tmp_path / "iris.csv", index=False)
    order = np.random.default_rng(0).permutation(150)
    species = SPECIES
    if isinstance(ids, str):
        ids, species = [(1 if "1..150" in ids else 0) + i for i in order], SPECIES[order]
    pd.DataFrame({"id": list(ids), "species": species}).to_csv(tmp_path / "labels.csv", index=False)
    config = _config(tmp_path, _dataset("file", "labels.csv"))
    result = cli_in_process("validate", str(config))
    assert result.returncode == code and words in (result.stdout if code == 0 else result.stderr), result.stderr
    if code == 0:
        dataset = parse_config(__import__("yaml").safe_load(config.read_text()), base=tmp_path).datasets[0]
        assert [dataset.classes[code] for code in dataset.labels] == SPECIES.tolist()
    else:
        assert len(result.stderr.strip().splitlines()) == 1


def _config(folder: Path, dataset: dict) -> Path:
    methods = KMEANS if dataset["kind"] == "file" else AVERAGE
    raw = small_config(n=[40], k=[2, 3], resamples=2, methods=methods, datasets=[dataset])
    return write_config(folder / "c.yaml", **raw)


@pytest.mark.parametrize("kind", ["file", "distances"])
@pytest.mark.parametrize("labels, data, how", [
    ("ordered.csv", "", "matched by row name (column 'id')"),
    ("shuffled.csv", "", "reordered to the data's rows by row name (column 'id': 148 of 150 rows"),
    ("r_style.csv", "", "reordered to the data's rows by row name (column 1 (no name in the header row)"),
    ("plain.csv", "", "by position (the labels file names no rows)"),
    ("plain.csv", "unnamed.csv", "by position (neither file names its rows)"),
])
def test_labels_are_matched_by_row_name_and_the_data_line_says_how(tmp_path, kind, labels, data, how):
    if kind == "distances" and data:
        pytest.skip("a distance matrix without row names is the same case as points without them")
    _files(tmp_path)
    config = _config(tmp_path, _dataset(kind, labels, data))
    result = cli_in_process("validate", str(config))
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("data d: "))
    assert how in line and "3 classes setosa 50, versicolor 50, virginica 50" in line, line
    dataset = parse_config(__import__("yaml").safe_load(config.read_text()), base=tmp_path).datasets[0]
    # whatever order the file lists them in, row i carries iris' species of row i
    assert [dataset.classes[code] for code in dataset.labels] == SPECIES.tolist()
    assert ("labels_matched" in dataset.identity) == ("reordered" in how)


@pytest.mark.parametrize("kind", ["file", "distances"])
@pytest.mark.parametrize("labels, data, words", [
    ("renamed.csv", "", ["datasets[0].labels.path", "no label for 150 of the 150 data rows ('s0', 's1', 's2', ...)",
                         "labels 150 rows the data does not have ('s0x', 's100x', 's101x', ...)"]),
    ("partial.csv", "", ["datasets[0].labels.path", "no label for 1 of the 150 data rows ('s149')"]),
    ("extra.csv", "", ["datasets[0].labels.path", "labels 1 row the data does not have ('s150')"]),
    ("twice.csv", "", ["datasets[0].labels.path", "names the row 's0' twice"]),
    ("shuffled.csv", "unnamed.csv", ["datasets[0].labels.path", "names its rows (column 'id')",
                                     "unnamed.csv have no names", "row_names: COLUMN"]),
    ("fifo.csv", "", ["datasets[0].labels.path", "named pipe (FIFO)"]),
    ("folder.csv", "", ["datasets[0].labels.path", "is a folder"]),
    ("zero.csv", "", ["datasets[0].labels.path", "is a device"]),
    ("loop.csv", "", ["datasets[0].labels.path", "loop of symbolic links"]),
    ("missing.csv", "", ["datasets[0].labels.path", "does not exist"]),
])
@pytest.mark.timeout(60)
def test_labels_that_cannot_be_matched_exit_2_and_leave_the_cube_as_it_was(tmp_path, kind, labels, data, words):
    if kind == "distances" and data:
        pytest.skip("a distance matrix without row names is the same case as points without them")
    _files(tmp_path)
    os.mkfifo(tmp_path / "fifo.csv")
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "zero.csv").symlink_to("/dev/zero")
    (tmp_path / "loop.csv").symlink_to(tmp_path / "loop2.csv")
    (tmp_path / "loop2.csv").symlink_to(tmp_path / "loop.csv")
    cube = tmp_path / "cube.zarr"
    good = _config(tmp_path, _dataset(kind, "ordered.csv"))
    assert cli_in_process("run", str(good), "--out", str(cube), "--workers", "0", "--no-progress").returncode == 0
    before = _tree_bytes(cube)
    bad = _config(tmp_path, _dataset(kind, labels, data))
    for command in (["validate", str(bad)], ["run", str(bad), "--out", str(cube), "--workers", "0", "--no-progress"]):
        result = cli_in_process(*command)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        assert all(word in lines[0] for word in words), lines[0]
    assert _tree_bytes(cube) == before


def _tree_bytes(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def _memory(data, labels) -> dict:
    return small_config(n=[40], k=[2, 3], resamples=2, methods=KMEANS,
                        datasets=[{"name": "d", "data": data, "labels": labels}])


FRAME = pd.DataFrame(IRIS.data, index=NAMES)
SERIES = pd.Series(SPECIES, index=NAMES)


@pytest.mark.parametrize("data, labels, how", [
    (FRAME, SERIES, "labels given from Python, matched by index: 3 classes"),
    (FRAME, SERIES.sample(frac=1, random_state=0), "labels given from Python, reordered to the DataFrame's rows by "
                                                   "index: 3 classes"),
    (FRAME, pd.Series(SPECIES), "labels given from Python: 3 classes"),
    (IRIS.data, pd.Series(SPECIES, index=np.arange(0, 300, 2)), "labels given from Python, by position (the "
                                                                "Series' index numbers its rows in increasing order)"),
    (IRIS.data, SPECIES, "labels given from Python: 3 classes"),
    (np.ma.masked_array(IRIS.data), SPECIES.tolist(), "labels given from Python: 3 classes"),  # nothing masked
])
def test_labels_from_python_are_matched_by_index_when_both_have_one(data, labels, how):
    dataset = parse_config(_memory(data, labels)).datasets[0]
    assert how in dataset.read, dataset.read
    assert [dataset.classes[code] for code in dataset.labels] == SPECIES.tolist()


@pytest.mark.parametrize("data, labels, words", [
    (FRAME, SERIES.rename(lambda name: f"{name}x"), ["datasets[0].labels", "different index values"]),
    (FRAME.reset_index(drop=True), SERIES, ["datasets[0].labels", "indexed by names or by numbers out of order",
                                            "the data's rows have no names"]),
    (IRIS.data, pd.Series(SPECIES, index=np.arange(300, 0, -2)), ["datasets[0].labels", "numbers out of order"]),
    (IRIS.data, IRIS.target[:, None], ["datasets[0].labels", "a 1-D array", "shape (150, 1)"]),
    (IRIS.data, [[code] for code in IRIS.target], ["datasets[0].labels", "a list holding sequences"]),
    (IRIS.data, pd.DataFrame({"species": SPECIES}), ["datasets[0].labels", "a DataFrame of shape (150, 1)"]),
    (np.ma.masked_array(IRIS.data, mask=IRIS.data > 7.5), IRIS.target, ["datasets[0].data", "6 masked values"]),
    (IRIS.data, np.ma.masked_array(IRIS.target, mask=IRIS.target == 2), ["datasets[0].labels", "50 masked values"]),
])
def test_labels_and_arrays_from_python_that_would_be_read_wrongly_are_refused(data, labels, words):
    with pytest.raises(ConfigError) as caught:
        parse_config(_memory(data, labels))
    message = str(caught.value)
    assert "\n" not in message and all(word in message for word in words), message


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["file", "distances"])
@pytest.mark.parametrize("make, words", [
    (lambda path: os.mkfifo(path), "named pipe (FIFO)"),
    (lambda path: path.mkdir(), "is a folder"),
    (lambda path: path.symlink_to("/dev/zero"), "is a device"),
    (lambda path: (path.symlink_to(path.with_name("b.csv")), path.with_name("b.csv").symlink_to(path)),
     "loop of symbolic links"),
])
def test_a_data_path_that_is_not_a_regular_file_exits_2_before_a_byte_is_read(tmp_path, kind, make, words):
    make(tmp_path / "data.csv")
    result = cli_in_process("validate", str(_config(tmp_path, {"name": "d", "kind": kind, "path": "data.csv"})))
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0].startswith("error: datasets[0].path: ") and words in lines[0], lines[0]


@pytest.mark.parametrize("header, accepted", [
    (NAMES, True),
    ([f"V{i + 1}" for i in range(150)], True),  # another kind of name: no order to compare
    ([NAMES[1], NAMES[0], *NAMES[2:]], False),
    ([*NAMES[:149], "other"], False),
])
def test_a_distance_matrix_names_its_rows_and_columns_in_the_same_order(tmp_path, header, accepted):
    distances = pd.DataFrame(squareform(pdist(IRIS.data)), columns=header)
    distances.insert(0, "id", NAMES)
    distances.to_csv(tmp_path / "dist.csv", index=False)
    result = cli_in_process("validate", str(_config(tmp_path, {"name": "d", "kind": "distances", "path": "dist.csv"})))
    assert result.returncode == (0 if accepted else 2), result.stderr
    if not accepted:
        assert "datasets[0].path: " in result.stderr and "names its rows and its columns differently" in result.stderr


@pytest.mark.parametrize("make", [pd.Categorical, lambda y: pd.array(y, dtype="string"), pd.Index],
                         ids=["Categorical", "StringArray", "Index"])
def test_labels_as_a_categorical_a_pandas_array_or_an_index_are_read_by_position(make):
    """Label containers without row names of their own are taken in the data's row order, as an array is."""
    iris = load_iris()
    species = np.asarray(iris.target_names)[iris.target]
    spec = parse_config(_memory(iris.data, make(species))).datasets[0]
    np.testing.assert_array_equal(spec.labels, iris.target)
    assert spec.classes == tuple(iris.target_names)


@pytest.mark.parametrize("labels", [3, 2.5, True])
def test_a_scalar_as_labels_names_the_key_and_what_labels_can_be(labels):
    with pytest.raises(ConfigError, match=r"^datasets\[0\]\.labels: expected labels, got .*; give \{path: FILE"):
        parse_config(_memory(load_iris().data, labels))


@pytest.mark.parametrize("start", [0, 1])
def test_a_labels_file_numbered_in_order_as_pandas_or_r_write_it_is_read_by_position(tmp_path, start):
    """pd.Series(y).to_csv() writes its index 0..n-1 as an unnamed first column (R's write.csv 1..n): in order,
    those are positions, not names; shuffled, they could only be names the data lacks, and are refused."""
    iris = load_iris()
    species = pd.Series(np.asarray(iris.target_names)[iris.target], name="species")
    pd.DataFrame(iris.data, columns=["a", "b", "c", "d"]).to_csv(tmp_path / "x.csv", index=False)
    species.set_axis(np.arange(start, start + 150)).to_csv(tmp_path / "y.csv")
    dataset = {"name": "d", "kind": "file", "path": str(tmp_path / "x.csv"),
               "labels": {"path": str(tmp_path / "y.csv"), "column": "species"}}
    spec = parse_config(small_config(n=[40], k=[2, 3], resamples=2, methods=KMEANS, datasets=[dataset])).datasets[0]
    np.testing.assert_array_equal(spec.labels, iris.target)
    assert f"by position (the labels file numbers its rows {start}..{149 + start} in order" in spec.read
    species.set_axis(np.random.default_rng(1).permutation(150) + start).to_csv(tmp_path / "y.csv")
    with pytest.raises(ConfigError, match=r"^datasets\[0\]\.labels\.path: .* names its rows .* have no names"):
        parse_config(small_config(n=[40], k=[2, 3], resamples=2, methods=KMEANS, datasets=[dataset]))
