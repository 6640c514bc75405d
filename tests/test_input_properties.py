"""Property: whatever a data file, a labels file, their paths and the preprocess steps hold, ``ordercube validate``
exits 0 or 2 (one ``error:`` line), never a traceback or a wait; and when it exits 0 with labels read by row name,
row i carries the label the labels file gives row i's name."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from conftest import cli_in_process
from ordercube.pipeline.config.study import parse_config

CELLS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
    st.integers(-10**20, 10**20).map(str),
    st.sampled_from(["", "nan", "inf", "-inf", "1e400", "1e-320", "abc", "0", "0", "0", "1", "1"]),
)
STEPS = st.lists(st.sampled_from([
    {"standardize": {}}, {"standardize": {"axis": "rows"}}, {"clip": {"floor": -1.0, "ceiling": 1.0}},
    {"clip": {"floor": 100.0, "ceiling": 200.0}}, {"log": {"base": 10.0, "offset": 1.0}},
    {"impute": {"strategy": "column_mean"}}, {"drop_missing": {}}, {"top_variance": {"features": 1}},
    {"pca": {"components": 1}}, {"transpose": {}},
]), max_size=3)
LABELS = st.sampled_from(["none", "ordered", "shuffled", "renamed", "partial", "plain", "twice", "npy", "fifo",
                          "folder", "device"])


@st.composite
def tables(draw):
    rows, columns = draw(st.integers(1, 12)), draw(st.integers(1, 4))
    clean = st.floats(-100, 100, allow_nan=False).map(repr)  # half the tables: numbers a user would give
    cell = draw(st.sampled_from([clean, CELLS]))
    cells = [[draw(cell) for _ in range(columns)] for _ in range(rows)]
    names = draw(st.sampled_from(["distinct", "none", "duplicated"]))
    header = draw(st.sampled_from([True, True, False]))
    return rows, columns, cells, names, header


def _write_data(folder: Path, table) -> list[str]:
    rows, columns, cells, names, header = table
    row_names = [f"r{i}" for i in range(rows)] if names == "distinct" else ["r"] * rows if names == "duplicated" else []
    lines = [",".join((["id"] if row_names else []) + [f"c{j}" for j in range(columns)])] if header else []
    for i, row in enumerate(cells):
        lines.append(",".join(([row_names[i]] if row_names else []) + row))
    (folder / "data.csv").write_text("\n".join(lines) + "\n")
    return row_names


def _write_labels(folder: Path, how: str, names: list[str], rows: int, order: list[int]) -> dict | None:
    classes = [f"c{i % 3}" for i in range(rows)]
    names = names or [f"r{i}" for i in range(rows)]
    path = folder / "labels.csv"
    if how == "none":
        return None
    if how in ("fifo", "folder", "device"):
        {"fifo": lambda: os.mkfifo(path), "folder": path.mkdir, "device": lambda: path.symlink_to("/dev/zero")}[how]()
    elif how == "npy":
        path = folder / "labels.npy"
        np.save(path, np.array(classes))
    else:
        pairs = [(names[i], classes[i]) for i in (order if how == "shuffled" else range(rows))]
        if how == "renamed":
            pairs = [(f"{name}x", label) for name, label in pairs]
        if how == "partial":
            pairs = pairs[:-1]
        if how == "twice" and pairs:
            pairs[-1] = (pairs[0][0], pairs[-1][1])
        header, body = ("label", [label for _, label in pairs]) if how == "plain" else \
            ("id,label", [f"{name},{label}" for name, label in pairs])
        path.write_text("\n".join([header, *body]) + "\n")
    return {"path": path.name}


@pytest.mark.timeout(600)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=tables(), labels=LABELS, steps=STEPS, kind=st.sampled_from(["file", "file", "distances"]),
       data=st.data())
def test_validate_exits_0_or_2_with_one_line_on_any_data_and_labels_file(table, labels, steps, kind, data):
    folder = Path(tempfile.mkdtemp())
    try:
        names = _write_data(folder, table)
        order = data.draw(st.permutations(range(table[0])))
        dataset = {"name": "d", "kind": kind, "path": "data.csv", "header": table[4]}
        labels_entry = _write_labels(folder, labels, names, table[0], order)
        if labels_entry is not None:
            dataset["labels"] = labels_entry
        if steps and kind == "file":
            dataset["preprocess"] = steps
        method = {"name": "m", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["lange"]} \
            if kind == "file" else {"name": "m", "algorithm": "agglomerative", "predictor": "nearest_object",
                                    "criteria": ["lange"]}
        raw = {"name": "p", "seed": 1, "n": ["all"], "k": [2], "resamples": 2, "methods": [method],
               "datasets": [dataset]}
        config = folder / "c.yaml"
        config.write_text(yaml.safe_dump(raw))
        result = cli_in_process("validate", str(config), cwd=folder)
        assert result.returncode in (0, 2), (result.returncode, result.stderr)
        event(f"exit {result.returncode}" + (f": {result.stderr.split(':')[1]}" if result.returncode else ""))
        if result.returncode == 2:
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
            return
        if labels in ("ordered", "shuffled") and names and "transpose" not in str(steps):
            spec = parse_config(raw, base=folder).datasets[0]
            if "drop_missing" not in str(steps):  # rows dropped: the labels are those of the rows kept
                assert [spec.classes[code] for code in spec.labels] == [f"c{i % 3}" for i in range(table[0])]
    finally:
        shutil.rmtree(folder)


@st.composite
def arrays_from_python(draw):
    """What a notebook might pass as data: arrays of any shape and dtype, masked or not, DataFrames."""
    rows = draw(st.one_of(st.integers(10, 14), st.integers(0, 10)))  # half the draws: enough rows for k = 2
    columns = draw(st.one_of(st.integers(1, 3), st.integers(0, 3)))
    values = np.asarray(draw(st.lists(st.floats(-1e6, 1e6), min_size=rows * columns, max_size=rows * columns)),
                        dtype=float).reshape(rows, columns)
    if values.size and draw(st.integers(0, 3)) == 3:  # a quarter of the tables miss a value
        values[draw(st.integers(0, rows - 1)), draw(st.integers(0, columns - 1))] = np.nan
    form = draw(st.sampled_from(["float", "float", "int", "bool", "complex", "str", "1-D", "3-D", "masked", "frame",
                                 "named frame", "named frame"]))
    if form == "masked":
        return np.ma.masked_array(values, mask=draw(st.lists(st.booleans(), min_size=values.size,
                                                             max_size=values.size)) if values.size else False)
    if form in ("frame", "named frame"):
        frame = pd.DataFrame(values, columns=[f"c{j}" for j in range(columns)])
        return frame.set_axis([f"r{i}" for i in range(rows)]) if form == "named frame" else frame
    converted = {"float": values, "int": np.nan_to_num(values).astype(np.int64), "bool": values > 0,
                 "complex": values.astype(complex), "str": values.astype(str), "1-D": values.ravel(),
                 "3-D": values[..., None]}
    return converted[form]


@st.composite
def labels_from_python(draw, rows: int):
    size = draw(st.sampled_from([rows, rows, rows, max(rows - 1, 0), rows + 1]))
    codes = draw(st.lists(st.integers(0, 3), min_size=size, max_size=size))
    form = draw(st.sampled_from(["none", "list", "array", "2-D", "nested", "masked", "series", "named series",
                                 "shuffled series", "shuffled series", "frame"]))
    names = [f"r{i}" for i in range(size)]
    return {"none": None, "list": codes, "array": np.array(codes, dtype=np.int64),
            "2-D": np.array(codes, dtype=np.int64)[:, None], "nested": [[code] for code in codes],
            "masked": np.ma.masked_array(codes, mask=[code == 0 for code in codes]),
            "series": pd.Series(codes, dtype=np.int64), "named series": pd.Series(codes, index=names, dtype=np.int64),
            "shuffled series": pd.Series(codes, index=names, dtype=np.int64).iloc[::-1],
            "frame": pd.DataFrame({"y": codes})}[form]


@settings(max_examples=300, deadline=None)
@given(data=arrays_from_python(), draw=st.data())
def test_arrays_and_labels_from_python_are_read_or_refused_in_one_line(data, draw):
    from ordercube.pipeline.errors import InputError

    labels = draw.draw(labels_from_python(len(data)))
    entry = {"name": "d", "data": data} if labels is None else {"name": "d", "data": data, "labels": labels}
    raw = {"name": "p", "seed": 1, "n": ["all"], "k": [2], "resamples": 2, "datasets": [entry],
           "methods": [{"name": "m", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["lange"]}]}
    try:
        dataset = parse_config(raw).datasets[0]
    except InputError as error:
        assert "\n" not in str(error) and str(error).startswith(("datasets", "k", "n")), str(error)
        event(f"refused: {str(error).split(':')[0]}")
        return
    event("read")
    if isinstance(labels, pd.Series) and isinstance(data, pd.DataFrame) and labels.index[0] != 0:
        event("read, matched by index")
        expected = labels.reindex(data.index).to_numpy()  # matched by row name
        assert [dataset.classes[code] for code in dataset.labels] == [str(value) for value in expected]
