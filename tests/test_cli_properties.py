"""Property tests of the CLI's surface (hypothesis): drawn configs (valid and broken), small data files and command
lines end in exit 0 or 2 (1 only where cells failed), one ``error:`` line and never a traceback, within a time
bound; the commands that read a cube never change it.

Examples are derandomized (the same ones on every run and machine) and the example database is off (nothing is
written into the repository). Left out of the strategies, because they belong to other parts of the code and
are tested there: ``--out`` paths inside a cube (the output guard), ``replay --permutations`` beyond 500 (its
bound), ``--workers`` above 0 and ``--scheduler`` (clusters take seconds to start).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import hypothesis.strategies as st
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings

from conftest import cli_in_process, write_config

SECONDS_PER_COMMAND = 20  # a tiny grid runs in about a second here; a wait beyond this is a hang
SETTINGS = dict(deadline=None, database=None, derandomize=True, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# ---- small data files: CSVs with and without a header, NaN, constants, odd shapes

CELL = st.one_of(st.floats(-1e6, 1e6, allow_nan=False).map(lambda v: f"{v:.6g}"), st.integers(-5, 5).map(str),
                 st.sampled_from(["", "NaN", "nan", "inf", "-inf", "1e309", "x", "1,5", '"2"', " 3 "]))


@st.composite
def data_files(draw) -> bytes:
    rows, columns = draw(st.integers(0, 14)), draw(st.integers(0, 4))
    if draw(st.booleans()):  # a constant table, or a constant column
        value = draw(CELL)
        table = [[value] * columns for _ in range(rows)]
    else:
        table = [[draw(CELL) for _ in range(columns)] for _ in range(rows)]
    if table and draw(st.booleans()):  # a ragged row
        table[draw(st.integers(0, len(table) - 1))].append("7")
    lines = [",".join(row) for row in table]
    if draw(st.booleans()):
        lines.insert(0, ",".join(f"c{j}" for j in range(columns)))
    return ("\n".join(lines) + ("\n" if draw(st.booleans()) else "")).encode()


def good_table(rows: int = 60, seed: int = 0) -> pd.DataFrame:
    """Three separated groups of ``rows // 3`` points in 2-D, with their group as a column."""
    rng = np.random.default_rng(seed)
    group = np.repeat(["a", "b", "c"], rows // 3)
    centres = {"a": (0.0, 0.0), "b": (5.0, 0.0), "c": (0.0, 5.0)}
    X = np.array([centres[g] for g in group]) + rng.normal(0, 0.5, size=(group.size, 2))
    return pd.DataFrame({"x": X[:, 0], "y": X[:, 1], "group": group})


# ---- configs: a valid base, then drawn changes (wrong types, out of range, unknown keys, odd paths)

SCALAR_JUNK = st.one_of(st.none(), st.booleans(), st.integers(-3, 60), st.sampled_from([0, -1, 10**12, 2**63]),
                        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6))
JUNK = st.one_of(SCALAR_JUNK, st.lists(st.integers(-2, 40), max_size=3),
                 st.dictionaries(st.sampled_from(["from", "to", "step", "x"]), st.integers(-2, 40), max_size=3))
KEYS = [("name",), ("seed",), ("n",), ("k",), ("resamples",), ("baseline_draws",), ("out",), ("execution",),
        ("execution", "trials_per_chunk"), ("execution", "task_seconds"), ("datasets",), ("datasets", 0, "n"),
        ("datasets", 0, "kind"), ("datasets", 0, "header"), ("datasets", 0, "preprocess"),
        ("datasets", 0, "columns"), ("datasets", 0, "params"), ("methods",), ("methods", 0, "algorithm"),
        ("methods", 0, "params"), ("methods", 0, "predictor"), ("methods", 0, "criteria"), ("methods", 0, "name")]
ODD_PATHS = ["missing.csv", ".", "", "/dev/null", "empty.csv", "binary.csv", "data.csv/x", "dir", "naïve data.csv",
             "../" * 12 + "nowhere.csv"]


def base_config(file_dataset: bool) -> dict:
    dataset = ({"name": "d", "kind": "file", "path": "data.csv", "n": ["all"]} if file_dataset
               else {"name": "d", "kind": "lange_gaussians3"})
    return {"name": "prop", "seed": 3, "n": [30], "k": [2, 3], "resamples": 2, "datasets": [dataset],
            "methods": [{"name": "km", "algorithm": "kmeans", "params": {"n_init": 2}, "predictor": "nearest_centroid",
                         "criteria": ["lange"]}],
            "execution": {"task_seconds": 0.01}}


def changed(config: dict, path: tuple, action: str, value: object) -> dict:
    """``config`` with the key at ``path`` set to ``value``, deleted, or given an unknown sibling key."""
    parent = config
    for part in path[:-1]:
        if isinstance(parent, dict) and part in parent or isinstance(parent, list) and part < len(parent):
            parent = parent[part]
        else:
            return config
    if not isinstance(parent, (dict, list)) or isinstance(parent, list) and path[-1] >= len(parent):
        return config
    if action == "delete" and isinstance(parent, dict):
        parent.pop(path[-1], None)
    elif action == "unknown" and isinstance(parent, dict):
        parent[f"{path[-1]}_typo"] = value
    else:
        parent[path[-1]] = value
    return config


def good_variant(draw, config: dict) -> bytes:
    """The three groups as a CSV, maybe without its header (and then without the group column), with a constant
    column, a NaN, a word, or fewer rows; a file dataset of ``config`` reads the groups as its labels."""
    table = good_table(draw(st.sampled_from([60, 30, 12, 6])))
    change = draw(st.sampled_from(["none", "none", "constant", "nan", "text"]))
    if change == "constant":
        table["x"] = 3.0
    elif change == "nan":
        table.loc[draw(st.integers(0, len(table) - 1)), "y"] = np.nan
    elif change == "text":
        table["y"] = table["y"].astype(object)
        table.loc[0, "y"] = "n/a"
    header = draw(st.booleans())
    entry = config.get("datasets", [{}])[0] if isinstance(config.get("datasets"), list) else {}
    if isinstance(entry, dict) and entry.get("kind") == "file":
        entry.update({"labels": {"column": "group"}} if header else {"header": False})
    return (table if header else table.drop(columns="group")).to_csv(index=False, header=header).encode()


@st.composite
def configs(draw) -> tuple[dict, bytes]:
    """A valid config with drawn sizes and criteria, or one with drawn damage; a CSV of its data."""
    file_dataset = draw(st.booleans())
    config = base_config(file_dataset)
    if not draw(st.booleans()):  # valid settings, odd data
        config.update(n=[draw(st.integers(12, 40))], resamples=draw(st.integers(1, 3)),
                      k=draw(st.sampled_from([[2, 3], [2, 3, 4], {"from": 1, "to": 4}, [5]])))
        config["methods"][0]["criteria"] = draw(st.lists(st.sampled_from(
            ["lange", "pairwise", "prediction_strength", "gap"]), min_size=1, max_size=2, unique=True))
        return config, good_variant(draw, config)
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(KEYS))
        config = changed(config, key, draw(st.sampled_from(["set", "set", "delete", "unknown"])),
                         draw(JUNK))
    if file_dataset and draw(st.booleans()):
        config = changed(config, ("datasets", 0, "path"), "set", draw(st.sampled_from(ODD_PATHS)))
    if file_dataset and draw(st.booleans()):
        config = changed(config, ("datasets", 0, "labels"), "set", draw(st.sampled_from(
            [{"column": "group"}, {"column": "nope"}, {"path": "data.csv", "column": "c0"}, {"path": "empty.csv"},
             "group", 3, *({"path": path} for path in ODD_PATHS)])))
    return config, good_variant(draw, config) if draw(st.booleans()) else draw(data_files())


def prepare(folder: Path, data: bytes) -> None:
    """The files a drawn config may name: its data, an empty file, bytes that are not text, a folder."""
    (folder / "data.csv").write_bytes(data)
    (folder / "naïve data.csv").write_bytes(data)
    (folder / "empty.csv").write_bytes(b"")
    (folder / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (folder / "dir").mkdir(exist_ok=True)


def check(result, seconds: float, *, cells_may_fail: bool = False) -> None:
    """Exit 0 or 2 (1 where cells failed), an error as its last line, no traceback, in bounded time."""
    where = f"ordercube {' '.join(map(str, result.args))}"
    event(f"{result.args[0]} exit {result.returncode}")
    assert "Traceback" not in result.stderr + result.stdout, f"{where}\n{result.stderr}"
    assert seconds < SECONDS_PER_COMMAND, f"{where} took {seconds:.1f} s"
    allowed = (0, 1, 2) if cells_may_fail else (0, 2)
    assert result.returncode in allowed, f"{where} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    if result.returncode == 2:
        last = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
        assert last.startswith("error: ") or ": error: " in last, f"{where}: exit 2 without an error line\n{result.stderr}"
    if result.returncode == 1:
        assert "failed" in result.stdout + result.stderr, f"{where}: exit 1 without failed cells\n{result.stdout}"


def timed(*args: str, cwd: Path):
    start = time.perf_counter()
    result = cli_in_process(*args, cwd=cwd)
    return result, time.perf_counter() - start


@pytest.mark.timeout(300)
@settings(max_examples=70, **SETTINGS)
@given(drawn=configs(), run=st.booleans())
def test_drawn_configs_and_data_files_exit_0_or_2_and_never_a_traceback(drawn, run):
    config, data = drawn
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        prepare(folder, data)
        path = write_config(folder / "c.yaml", **config)
        result, seconds = timed("validate", str(path), "--out", str(folder / "cube.zarr"), cwd=folder)
        check(result, seconds)
        if run:  # a refused config too: run must refuse it as validate did, writing nothing
            result, seconds = timed("run", str(path), "--out", str(folder / "cube.zarr"), "--workers", "0", "--no-progress",
                                    cwd=folder)
            check(result, seconds, cells_may_fail=True)
            if result.returncode == 2:
                assert not (folder / "cube.zarr").exists(), f"a refused run wrote a cube\n{result.stderr}"


# ---- command lines against one cube, which none of them may change

@pytest.fixture(scope="module")
def cube(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("properties")
    good_table().to_csv(folder / "data.csv", index=False)
    config = base_config(True)
    config["datasets"][0]["labels"] = {"column": "group"}
    config["methods"][0]["criteria"] = ["lange", "prediction_strength"]
    config.update(n=[20, "all"], k=[2, 3, 4], resamples=4)
    result = cli_in_process("run", str(write_config(folder / "c.yaml", **config)), "--out", str(folder / "cube.zarr"),
                            "--workers", "0", "--no-progress", cwd=folder)
    assert result.returncode == 0, result.stderr
    return folder / "cube.zarr"


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


ODD_NAMES = ["nope", "", "D", "-x", "ü"]


def names(*good: str) -> st.SearchStrategy[str]:
    """Mostly the cube's own names, sometimes one it does not have or one a shell would not expect."""
    return st.one_of(st.sampled_from(good), st.sampled_from(good), st.sampled_from(ODD_NAMES))


NUMBERS = st.one_of(st.integers(-3, 30), st.sampled_from([10**19, -(10**19)])).map(str) | st.sampled_from(
    ["x", "", "nan", "1.5", "inf", "0x10"])
FLOATS = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.sampled_from(["0.05", "x", "", "-1"]))


@st.composite
def command_lines(draw, cube: Path, out: Path) -> list[str]:
    command = draw(st.sampled_from(["status", "report", "partition", "partition", "replay", "replay", "status"]))
    target = draw(st.sampled_from([str(cube)] * 5 + [str(cube / "missing"), str(out / "no-cube.zarr"),
                                                      str(cube / "zarr.json"), ""]))
    args = [command, target]
    if command == "status":
        args += draw(st.lists(st.sampled_from(["--json", "--verify"]), max_size=2, unique=True))
    elif command == "report":
        if draw(st.integers(0, 3)) == 0:
            args += ["--threshold", f"{draw(names('prediction_strength', 'lange'))}={draw(FLOATS)}"]
        if draw(st.integers(0, 3)) == 0:
            args += ["--decide", draw(st.sampled_from(["lange.ties=smallest", "lange.ties=largest", "lange.ties=0",
                                                       "prediction_strength.threshold=0.7", "gap.method=globalmax",
                                                       "lange=3", "x.y=1", "prediction_strength.threshold=nan"]))]
        args += ["--format", draw(st.sampled_from(["png", "svg", "png", "jpg"])), "--out", str(out / "report")]
    elif command == "partition":
        args += ["--dataset", draw(names("d")), "--method", draw(names("km"))]
        if draw(st.booleans()):
            args += ["--k", draw(NUMBERS)]
        if draw(st.booleans()):
            args += ["--criterion", draw(names("lange", "prediction_strength"))]
        if draw(st.booleans()):
            args += ["--config", draw(st.sampled_from([str(cube.parent / "c.yaml"), str(out / "missing.yaml"), str(out),
                                                       "/dev/null"]))]
        args += ["--out", draw(st.sampled_from([str(out / "labels.csv"), str(out), str(out / "no" / "x.csv")]))]
    else:
        for option in draw(st.lists(st.sampled_from(["--delta", "--epsilon", "--r-min", "--permutations", "--mode",
                                                     "--criterion"]), max_size=3, unique=True)):
            value = {"--delta": FLOATS, "--epsilon": FLOATS, "--r-min": NUMBERS, "--mode": st.sampled_from(
                ["t", "guarded", "strict", "hoeffding", "z"]), "--criterion": names("lange", "prediction_strength"),
                "--permutations": st.integers(-2, 500).map(str)}[option]
            args += [option, draw(value)]
        args += ["--out", str(out / "replay.csv")]
    return args


@pytest.mark.timeout(300)
@settings(max_examples=60, **SETTINGS)
@given(data=st.data())
def test_drawn_command_lines_exit_0_or_2_and_leave_the_cube_as_it_was(cube, data):
    before = files_of(cube)
    with tempfile.TemporaryDirectory() as name:
        out = Path(name)
        args = data.draw(command_lines(cube, out), label="command line")
        result, seconds = timed(*args, cwd=cube.parent)
        check(result, seconds)
    assert files_of(cube) == before, f"ordercube {' '.join(args)} changed the cube"


def test_the_strategies_draw_what_they_say():
    """The helpers the strategies are built on change what they say and nothing else."""
    assert len(good_table()) == 60 and good_table()["group"].value_counts().tolist() == [20, 20, 20]
    assert changed(base_config(True), ("datasets", 0, "path"), "set", "x.csv")["datasets"][0]["path"] == "x.csv"
    assert "seed" not in changed(base_config(True), ("seed",), "delete", None)
    assert changed(base_config(True), ("methods", 0, "params"), "unknown", 1)["methods"][0]["params_typo"] == 1
    assert changed(base_config(False), ("datasets", 5, "n"), "set", 1) == base_config(False)


# Found by the draws above (tracebacks before every input file was read through one function), kept as examples.


@pytest.mark.parametrize("labels_path", [
    "missing.csv", ".", "",
    "empty.csv",
])
def test_a_labels_path_that_cannot_be_read_exits_2_naming_the_key(tmp_path, labels_path):
    prepare(tmp_path, good_table().drop(columns="group").to_csv(index=False).encode())
    config = base_config(True)
    config["datasets"][0]["labels"] = {"path": labels_path}
    result = cli_in_process("validate", str(write_config(tmp_path / "c.yaml", **config)), cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.startswith("error: datasets[0].labels"), result.stderr


def test_a_kind_that_is_a_list_exits_2_naming_the_key(tmp_path):
    config = base_config(False)
    config["datasets"][0]["kind"] = ["lange_gaussians3"]
    result = cli_in_process("validate", str(write_config(tmp_path / "c.yaml", **config)), cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.startswith("error: datasets[0].kind"), result.stderr
