"""Property: whatever a data file, a labels file, their paths and the preprocess steps hold, ``ordercube validate``
exits 0 or 2 (one ``error:`` line), never a traceback or a wait; and when it exits 0 with labels read by row name,
row i carries the label the labels file gives row i's name."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from conftest import cli_in_process
from pipeline.config import parse_config

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
