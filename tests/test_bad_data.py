"""Bad data and bad report arguments: exit 2 with one line naming the file, row and column or the key,
no traceback, no cube written and an existing cube byte-identical; an empty cube reports and counts."""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.lib import format as npy_format

from conftest import cli, cli_in_process, small_config, write_config

ROWS = "".join(f"{i},{(i * 7) % 5}\n" for i in range(1, 11))  # ten finite rows of columns a, b


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def _assert_one_error_line(result, expected: list[str]) -> None:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in expected:
        assert fragment in lines[0], (fragment, lines[0])


def _one_method(**config: Any) -> dict:
    return small_config(n=[4], methods=[{"name": "m", "algorithm": "kmeans", "predictor": "nearest_centroid",
                                         "criteria": ["lange"]}], **config)


def _csv(text: str, **extra: Any) -> Callable[[Path], dict]:
    def build(tmp: Path) -> dict:
        (tmp / "data.csv").write_text("a,b\n" + text)
        return _one_method(datasets=[{"name": "f", "kind": "file", "path": "data.csv", **extra}])
    return build


def _npy(array: np.ndarray | bytes, **extra: Any) -> Callable[[Path], dict]:
    def build(tmp: Path) -> dict:
        if isinstance(array, bytes):
            (tmp / "data.npy").write_bytes(array)
        else:
            np.save(tmp / "data.npy", array, allow_pickle=True)
        return _one_method(datasets=[{"name": "f", "kind": "file", "path": "data.npy", **extra}])
    return build


def _claiming(shape: tuple[int, ...], data: bytes = b"\0" * 16, dtype: str = "<f8") -> bytes:
    """A .npy file whose header claims ``shape`` but which holds only ``data``."""
    stream = io.BytesIO()
    npy_format.write_array_header_1_0(stream, {"descr": dtype, "fortran_order": False, "shape": shape})
    return stream.getvalue() + data


def _labels(name: str, content: bytes | np.ndarray | str, column: Any = None) -> Callable[[Path], dict]:
    def build(tmp: Path) -> dict:
        path = tmp / name
        if isinstance(content, np.ndarray):
            np.save(path, content)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        (tmp / "data.csv").write_text("a,b\n" + ROWS)
        labels: dict[str, Any] = {"path": name} if column is None else {"path": name, "column": column}
        return _one_method(datasets=[{"name": "f", "kind": "file", "path": "data.csv", "labels": labels}])
    return build


def _synthetic(kind: str, **params: Any) -> Callable[[Path], dict]:
    return lambda tmp: small_config(datasets=[{"name": "s", "kind": kind, "params": params}])


HUGE = "".join(f"{i}e300,{i}\n" for i in range(1, 11))
TINY = "".join(f"{i}e-200,{i}e-201\n" for i in range(1, 11))

CONFIG_CASES: dict[str, tuple[Callable[[Path], dict], list[str]]] = {
    # non-finite values where they are read
    "csv inf": (_csv("1,2\n3,inf\n" + ROWS), ["datasets[0].path", "data.csv", "'inf'", "data row 2", "column 'b'"]),
    "csv -inf": (_csv(ROWS + "5,-inf\n"), ["datasets[0].path", "'-inf'", "data row 11", "column 'b'"]),
    "csv 1e400": (_csv("1e400,2\n" + ROWS), ["datasets[0].path", "'1e400'", "data row 1", "column 'a'", "1.8e308"]),
    "csv inf with a drop step": (_csv("1,Infinity\n" + ROWS, preprocess=[{"drop_missing": {}}]),
                                 ["datasets[0].path", "'Infinity'", "data row 1", "column 'b'"]),
    "csv nan without a step": (_csv(ROWS + "4,nan\n"), ["datasets[0].path", "1 missing", "data row 11, column 'b'",
                                                        "impute"]),
    "npy inf": (_npy(np.array([[1.0, 2.0], [3.0, np.inf], *[[float(i), 1.0] for i in range(9)]])),
                ["datasets[0].path", "data.npy", "inf", "row index 1, column 1"]),
    # magnitudes whose squared distances overflow or underflow
    "values near 1e300": (_csv(HUGE), ["datasets[0].path", "column 'a'", "|x| = 1e+301", "standardize"]),
    "values near 1e300 then standardize": (_csv(HUGE, preprocess=[{"standardize": {}}]),
                                           ["datasets[0].preprocess[0]", "standardize", "overflows", "rescale"]),
    "values near 1e300 after a transpose": (_csv(HUGE, preprocess=["transpose"]),
                                            ["datasets[0].path", "column 9 of the preprocessed matrix", "standardize"]),
    "values near 1e-200": (_csv(TINY), ["datasets[0].path", "underflow", "standardize"]),
    "log of zero": (_csv("0,1\n" + ROWS, preprocess=[{"log": {}}]), ["datasets[0].preprocess[0]", "positive"]),
    "csv with a 400-digit integer": (_csv("1," + "1" * 400 + "\n" + ROWS), ["datasets[0].path", "(400 characters)",
                                                                         "data row 1", "column 'b'", "float64's range"]),
    "csv with a 400-digit integer as the first column": (_csv("1" * 400 + ",1\n" + ROWS),
                                                         ["datasets[0].path", "data row 1", "column 'a'"]),
    "csv with a header only": (_csv(""), ["datasets[0].path", "0 data rows"]),
    "every row dropped": (_csv("1,\n2,\n", preprocess=[{"drop_missing": {}}]),
                          ["datasets[0].path", "0 rows and 2 columns left after preprocessing"]),
    "npy longdouble beyond float64": (_npy(np.full((10, 2), np.longdouble("1e400"))),
                                      ["datasets[0].path", "inf at row index 0, column 0", "float64's range"]),
    # .npy files that are not what their header says
    "npy header claiming 10**12 values": (_npy(_claiming((10**12,))), ["datasets[0].path", "(1000000000000,)",
                                                                       "16 bytes", "truncated"]),
    "npy header claiming a huge 2-D shape": (_npy(_claiming((10**9, 10**9))), ["datasets[0].path", "claims shape"]),
    "npy truncated": (_npy(_claiming((10, 2), b"\0" * 100)), ["datasets[0].path", "160 bytes", "100 bytes"]),
    "npy garbage": (_npy(b"not an npy file at all"), ["datasets[0].path", "not a readable .npy"]),
    "npy of pickled objects": (_npy(np.array([{"a": 1}, 2], dtype=object)), ["datasets[0].path", "pickle"]),
    "npy of complex numbers": (_npy(np.ones((10, 2), dtype=complex)), ["datasets[0].path", "2-D complex128",
                                                                       "real numbers"]),
    # labels files
    "empty labels file": (_labels("labels.csv", ""), ["datasets[0].labels.path", "labels.csv", "cannot parse"]),
    "a list as the labels column": (_labels("labels.csv", "x,y\n" + "1,2\n" * 10, column=["x", "y"]),
                                    ["datasets[0].labels.column", "['x', 'y']", "one column"]),
    "labels as .txt": (_labels("labels.txt", "1\n2\n"), ["datasets[0].labels.path", "'.txt'", ".csv or .npy"]),
    "labels as pickle": (_labels("labels.pkl", b"\x80\x04K\x01."), ["datasets[0].labels.path", "'.pkl'", ".csv or .npy"]),
    "labels .npy of floats": (_labels("labels.npy", np.arange(10.0)), ["datasets[0].labels.path", "float64",
                                                                        "integers or strings"]),
    "labels .npy 2-D": (_labels("labels.npy", np.zeros((10, 2), dtype=int)), ["datasets[0].labels.path", "2-D"]),
    "labels .npy with a huge header": (_labels("labels.npy", _claiming((10**12,), dtype="<i8")),
                                       ["datasets[0].labels.path", "claims shape (1000000000000,)"]),
    "labels .npy of objects": (_labels("labels.npy", _claiming((2,), b"", dtype="|O")),
                               ["datasets[0].labels.path", "pickle"]),
    "labels .npy of 10**12 empty strings": (_labels("labels.npy", _claiming((10**12,), b"", dtype="<U0")),
                                            ["datasets[0].labels.path", "1-D <U0", "integers or strings"]),
    "npy of 3-D data": (_npy(np.zeros((4, 3, 2))), ["datasets[0].path", "3-D float64", "1-D or 2-D"]),
    "labels .npy given a column": (_labels("labels.npy", np.arange(10), column="x"),
                                   ["datasets[0].labels.column", "no columns"]),
    "labels with a missing one": (_labels("labels.csv", "id,y\n" + "".join(f"r{i},{'' if i == 5 else i % 2}\n"
                                                                            for i in range(1, 11)), column="y"),
                                  ["datasets[0].labels", "missing label at data row 5"]),
    "labels with a ragged row": (_labels("labels.csv", "y\n" + "1\n" * 4 + "1,2\n" + "2\n" * 5),
                                 ["datasets[0].labels.path", "cannot parse", "line 6"]),
    # synthetic parameters
    "flat list of centers": (_synthetic("gaussian_mixture", centers=[1, 2, 3]),
                             ["datasets[0].params", "centers", "[1, 2, 3]", "in 1-D: [[0], [5], [10]]"]),
    "empty centers": (_synthetic("gaussian_mixture", centers=[]), ["datasets[0].params", "centers", "got []"]),
    "ragged centers": (_synthetic("gaussian_mixture", centers=[[0, 0], [1]]), ["centers", "same dimension"]),
    "repeated centers": (_synthetic("gaussian_mixture", centers=[[0, 0], [0, 0]]), ["centers", "distinct"]),
    "NaN in a center": (_synthetic("gaussian_mixture", centers=[[0, 0], [float("nan"), 1]]),
                        ["centers[1][0]", "got nan", "finite"]),
    "center at 1e200": (_synthetic("gaussian_mixture", centers=[[0, 0], [1e200, 1]]), ["centers[1][0]", "1e+100"]),
    "text in a center": (_synthetic("gaussian_mixture", centers=[[0, 0], ["1", 1]]), ["centers[1][0]", "got '1'"]),
    "mu NaN": (_synthetic("shamir_mixture1d", mu=float("nan")), ["datasets[0].params", "mu", "got nan", "mu: 5.0"]),
    "mu inf": (_synthetic("shamir_mixture1d", mu=float("inf")), ["mu", "got inf"]),
    "mu zero": (_synthetic("shamir_mixture1d", mu=0), ["mu", "> 0", "got 0"]),
    "std inf": (_synthetic("lange_gaussians3", std=float("inf")), ["datasets[0].params", "std", "got inf", "> 0"]),
    "std zero": (_synthetic("lange_gaussians3", std=0.0), ["std", "got 0.0"]),
    "std negative": (_synthetic("gaussian_mixture", centers=[[0], [5]], std=-1), ["std", "got -1"]),
    "std a bool": (_synthetic("lange_gaussians3", std=True), ["std", "got True"]),
    "std list too short": (_synthetic("gaussian_mixture", centers=[[0], [5]], std=[1.0]),
                           ["std", "a list of 2 numbers", "[1.0, 1.0]"]),
    "weights negative": (_synthetic("gaussian_mixture", centers=[[0], [5]], weights=[1, -1]), ["weights[1]", "got -1"]),
    "weights zero": (_synthetic("gaussian_mixture", centers=[[0], [5]], weights=[1, 0]), ["weights[1]", "> 0"]),
    "weights NaN": (_synthetic("gaussian_mixture", centers=[[0], [5]], weights=[1, float("nan")]),
                    ["weights[1]", "got nan"]),
    "weights of the wrong length": (_synthetic("gaussian_mixture", centers=[[0], [5]], weights=[1, 1, 1]),
                                    ["weights", "a list of 2 numbers", "[1, 1, 1]"]),
    "lange with two centers": (_synthetic("lange_gaussians3", centers=[[0, 0], [5, 5]]), ["centers", "3 points"]),
    "no radii": (_synthetic("rings3", radii=[]), ["radii", "non-empty list"]),
    "negative radius": (_synthetic("rings3", radii=[1, -2]), ["radii[1]", "got -2"]),
    "repeated radius": (_synthetic("rings3", radii=[1, 1]), ["radii", "distinct"]),
    "noise NaN": (_synthetic("rings3", noise=float("nan")), ["noise", "got nan"]),
    "noise negative": (_synthetic("rings3", noise=-0.1), ["noise", ">= 0"]),
}


@pytest.mark.parametrize("case", CONFIG_CASES)
def test_bad_data_exits_2_with_one_line_and_writes_no_cube(tmp_path, case):
    build, expected = CONFIG_CASES[case]
    config = write_config(tmp_path / "bad.yaml", **build(tmp_path))
    result = cli_in_process("run", str(config), "--out", str(tmp_path / "cube.zarr"), "--no-progress")
    _assert_one_error_line(result, expected)
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / "cube.zarr").exists()


@pytest.fixture(scope="module")
def computed_cube(tmp_path_factory) -> Path:
    """A small cube with the criteria whose decisions take numbers (threshold, p_max, se_factor)."""
    folder = tmp_path_factory.mktemp("computed")
    config = small_config(n=[40], k=[2, 3], resamples=2, datasets=[{"name": "gauss", "kind": "lange_gaussians3"}],
                          methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 2},
                                    "predictor": "nearest_centroid",
                                    "criteria": ["lange", "prediction_strength", "clest", "gap"]}])
    result = cli_in_process("run", str(write_config(folder / "c.yaml", **config)), "--out", str(folder / "cube.zarr"),
                            "--no-progress", "--workers", "0")
    assert result.returncode == 0, result.stderr
    return folder / "cube.zarr"


@pytest.fixture(scope="module")
def empty_cube(tmp_path_factory) -> Path:
    """A cube as ``run`` creates it before any cell is stored (Cube.create, as run_sweep calls it)."""
    from ordercube.pipeline.config.study import parse_config
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.cube.grid import config_coords, default_chunks

    path = tmp_path_factory.mktemp("empty") / "cube.zarr"
    config = parse_config(small_config(), out=str(path))
    Cube.create(path, config, config_coords(config), default_chunks(config))
    return path


REPORT_CASES: dict[str, tuple[Callable[[Path, Path], list[str]], list[str]]] = {
    "a folder that is not a cube": (lambda cube, tmp: ["."], ["CUBE", "not a cube"]),
    "--out naming a file": (lambda cube, tmp: [str(cube), "--out", str(tmp / "afile")], ["--out", "afile", "is a regular file, not a folder"]),
    "--out below a file": (lambda cube, tmp: [str(cube), "--out", str(tmp / "afile" / "report")],
                           ["--out", "afile is a file, not a folder"]),
    "--out inside the cube": (lambda cube, tmp: [str(cube), "--out", str(cube / "report")], ["--out", "inside the cube"]),
    "--out the cube itself": (lambda cube, tmp: [str(cube), "--out", str(cube)], ["--out", "inside the cube"]),
    "--out where nobody can write": (lambda cube, tmp: [str(cube), "--out", "/proc/ordercube-report"],
                                     ["--out", "cannot create the report folder /proc/ordercube-report"]),
    "NaN threshold": (lambda cube, tmp: [str(cube), "--threshold", "prediction_strength=nan"],
                      ["--threshold", "prediction_strength.threshold = 'nan'", "finite"]),
    "inf threshold": (lambda cube, tmp: [str(cube), "--threshold", "prediction_strength=inf"],
                      ["prediction_strength.threshold = 'inf'"]),
    "NaN p_max": (lambda cube, tmp: [str(cube), "--decide", "clest.p_max=nan"],
                  ["--decide", "clest.p_max = 'nan'", "[0, 1]"]),
    "p_max above 1": (lambda cube, tmp: [str(cube), "--decide", "clest.p_max=2"], ["clest.p_max = '2'", "[0, 1]"]),
    "NaN d_min": (lambda cube, tmp: [str(cube), "--decide", "clest.d_min=NaN"], ["clest.d_min = 'NaN'", "finite"]),
    "negative se_factor": (lambda cube, tmp: [str(cube), "--decide", "gap.se_factor=-1"], ["gap.se_factor = '-1'", ">= 0"]),
    "1e400 se_factor": (lambda cube, tmp: [str(cube), "--decide", "gap.se_factor=1e400"], ["gap.se_factor = '1e400'"]),
}


@pytest.mark.parametrize("case", REPORT_CASES)
def test_bad_report_arguments_exit_2_and_leave_the_cube_untouched(computed_cube, tmp_path, case):
    build, expected = REPORT_CASES[case]
    (tmp_path / "afile").write_text("not a folder")
    before = _tree_bytes(computed_cube)
    result = _cli_in(tmp_path, "report", *build(computed_cube, tmp_path))
    _assert_one_error_line(result, expected)
    assert _tree_bytes(computed_cube) == before
    assert (tmp_path / "afile").read_text() == "not a folder"
    assert not computed_cube.with_name("cube-report").exists()


def _cli_in(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """The CLI run from ``folder`` (so that ``report .`` names it)."""
    return cli_in_process(*args, cwd=folder)


def test_a_threshold_that_is_a_number_still_re_decides(computed_cube, tmp_path):
    result = cli_in_process("report", str(computed_cube), "--out", str(tmp_path / "r"), "--threshold",
                            "prediction_strength=0.0", "--decide", "clest.p_max=1")
    assert result.returncode == 0, result.stderr
    table = (tmp_path / "r" / "selection.csv").read_text().splitlines()
    strength = [line for line in table if ",prediction_strength," in line]
    # every mean prediction strength is >= 0, so the largest k of the cube (3) is chosen
    assert strength and all(line.split(",")[4] == "3" for line in strength), table


def test_report_and_status_of_a_cube_with_nothing_computed(empty_cube, tmp_path):
    before = _tree_bytes(empty_cube)
    result = cli_in_process("report", str(empty_cube), "--out", str(tmp_path / "r"))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout.startswith("no computed cells yet") and "0 of 72 planned cells ok; pending: 72" in result.stdout
    assert not (tmp_path / "r").exists() and _tree_bytes(empty_cube) == before
    result = cli_in_process("report", str(empty_cube), "--decide", "clest.p_max=nan")
    _assert_one_error_line(result, ["--decide", "'clest': no such criterion"])
    result = cli_in_process("status", str(empty_cube), "--json")
    assert result.returncode == 0 and '"ok": 0' in result.stdout and '"pending": 72' in result.stdout
    assert _tree_bytes(empty_cube) == before


def test_bad_data_against_an_existing_cube_leaves_it_byte_identical(computed_cube, tmp_path):
    before = _tree_bytes(computed_cube)
    (tmp_path / "data.csv").write_text("a,b\n" + ROWS + "1e400,1\n")
    config = small_config(n=[40], k=[2, 3], resamples=2, datasets=[
        {"name": "gauss", "kind": "lange_gaussians3"}, {"name": "f", "kind": "file", "path": "data.csv"}])
    result = cli("run", str(write_config(tmp_path / "c.yaml", **config)), "--out", str(computed_cube), "--no-progress",
                 timeout=120)
    _assert_one_error_line(result, ["datasets[1].path", "'1e400'", "data row 11", "column 'a'"])
    assert _tree_bytes(computed_cube) == before


def test_a_criterion_without_any_value_is_left_out_of_the_report(computed_cube, tmp_path):
    """A criterion added to a cube but not computed yet (all NaN) used to crash the figures."""
    from ordercube.pipeline.report.write import write_report
    from ordercube.pipeline.cube.owner import open_cube

    cube = open_cube(computed_cube).load()
    cube["prediction_strength"] = cube["prediction_strength"] * np.nan
    table = write_report(cube, tmp_path / "r")
    assert set(table["criterion"]) == {"lange", "clest", "gap"}
    assert not list((tmp_path / "r").glob("prediction_strength*")) and (tmp_path / "r" / "gap_vs_k.png").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders: run the suite as a user")
def test_report_into_a_read_only_folder_exits_2(computed_cube, tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = cli("report", str(computed_cube), "--out", str(folder / "r"), timeout=120)
    finally:
        folder.chmod(0o755)
    _assert_one_error_line(result, ["--out", "is not writable"])
    assert list(folder.iterdir()) == []
