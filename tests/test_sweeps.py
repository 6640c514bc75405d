"""A generator parameter as an axis (``sweep:``): expansion, bad input, and the report against the parameter."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from conftest import cli_in_process, small_config, write_config
from ordercube.pipeline.config.study import load_config
from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.report.sweep import crossing_points
from ordercube.pipeline.config.sweeps import Swept, expand, swept

TRIANGLE = [[0.0, 1.0], [0.8660254037844386, -0.5], [-0.8660254037844386, -0.5]]
ENTRY = {"name": "tri", "kind": "gaussian_mixture", "params": {"centers": TRIANGLE}, "sweep": {"std": [0.3, 1, 1.5]}}


def test_a_sweep_is_one_dataset_per_value_named_by_it(tmp_path):
    config = load_config(write_config(tmp_path / "s.yaml", **small_config(datasets=[ENTRY])))
    assert [d.name for d in config.datasets] == ["tri_std0.3", "tri_std1", "tri_std1.5"]
    assert [d.params["std"] for d in config.datasets] == [0.3, 1, 1.5]
    assert all(d.params["centers"] == TRIANGLE and d.true_k == 3 for d in config.datasets)
    # the cube keeps the entry as written, and the report finds the values again from it
    assert swept(config.raw) == {"tri_std0.3": Swept("tri", "std", 0.3), "tri_std1": Swept("tri", "std", 1),
                                 "tri_std1.5": Swept("tri", "std", 1.5)}


def test_expand_leaves_other_entries_alone():
    plain = {"name": "g", "kind": "lange_gaussians3"}
    assert expand(plain, "datasets[0]") == [(plain, None)]


@pytest.mark.parametrize("sweep, params, kind, expected", [
    ({"std": [0.3], "weights": [[1, 1, 1]]}, {"centers": TRIANGLE}, "gaussian_mixture", ["datasets[0].sweep", "one parameter"]),
    ({"std": 0.3}, {"centers": TRIANGLE}, "gaussian_mixture", ["datasets[0].sweep.std", "0.3", "list"]),
    ({"std": []}, {"centers": TRIANGLE}, "gaussian_mixture", ["datasets[0].sweep.std", "[]"]),
    ({"std": [0.3]}, {"centers": TRIANGLE, "std": 1.0}, "gaussian_mixture", ["datasets[0].sweep.std", "params.std"]),
    ({"std": [0.3, -1]}, {"centers": TRIANGLE}, "gaussian_mixture", ["datasets[0].params.std", "-1"]),
    ({"stdd": [0.3]}, {"centers": TRIANGLE}, "gaussian_mixture", ["datasets[0].params", "stdd"]),
    ({"std": [0.3, 0.30]}, {"centers": TRIANGLE}, "gaussian_mixture", ["datasets", "tri_std0.3", "twice"]),
])
def test_bad_sweeps_exit_2_naming_the_key(tmp_path, sweep, params, kind, expected):
    entry = {"name": "tri", "kind": kind, "params": params, "sweep": sweep}
    path = write_config(tmp_path / "bad.yaml", **small_config(datasets=[entry]))
    with pytest.raises(ConfigError):
        load_config(path)
    result = cli_in_process("validate", str(path))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    for text in expected:
        assert text in result.stderr, (text, result.stderr)


def test_a_file_dataset_cannot_be_swept(tmp_path):
    np.savetxt(tmp_path / "x.csv", np.random.default_rng(0).normal(size=(40, 2)), delimiter=",")
    entry = {"name": "f", "kind": "file", "path": "x.csv", "header": False, "sweep": {"std": [1]}}
    with pytest.raises(ConfigError, match=r"datasets\[0\]\.sweep"):
        load_config(write_config(tmp_path / "f.yaml", **small_config(datasets=[entry])))


def test_crossing_is_the_first_value_whose_modal_choice_is_below_the_true_k():
    table = pd.DataFrame({
        "sweep": "tri", "parameter": "std", "n": 500, "method": "gmm", "true_k": 3,
        "criterion": ["bic"] * 4 + ["mtc"] * 4,
        "value": [0.3, 0.6, 0.9, 1.2] * 2,
        "modal_k": [3, 2, 1, 1, 3, 4, 3, 1],  # over-selecting (4) is not a crossing; falling below 3 is
    })
    crossings = crossing_points(table).set_index("criterion")["crossing"]
    assert crossings["bic"] == 0.6 and crossings["mtc"] == 1.2
    never = crossing_points(table.assign(modal_k=3))
    assert never["crossing"].isna().all()


def test_report_of_a_swept_cube_draws_choices_against_the_parameter(tmp_path):
    config = small_config(n=[200], k=[1, 2, 3, 4], resamples=4, datasets=[{**ENTRY, "sweep": {"std": [0.2, 3.0]}}],
                          methods=[{"name": "gmm", "algorithm": "gaussian_mixture_em", "params": {"n_init": 2},
                                    "predictor": "gaussian_posterior", "criteria": ["mtc", "bic"]}])
    path = write_config(tmp_path / "s.yaml", **config)
    assert cli_in_process("run", str(path), "--out", str(tmp_path / "s.zarr"), "--no-progress", "--workers", "0").returncode == 0
    result = cli_in_process("report", str(tmp_path / "s.zarr"), "--out", str(tmp_path / "report"))
    assert result.returncode == 0, result.stderr
    assert "swept parameter" in result.stdout and (tmp_path / "report" / "sweep_tri_gmm_n200.png").stat().st_size > 0
    table = pd.read_csv(tmp_path / "report" / "sweep.csv")
    selection = pd.read_csv(tmp_path / "report" / "selection.csv")
    assert sorted(table["value"].unique()) == [0.2, 3.0] and set(table["criterion"]) == {"mtc", "bic"}
    # well separated (sd 0.2 against centres 1 apart): both find 3 in every trial; sd 3 blurs them into one blob
    easy = table[table["value"] == 0.2]
    assert (easy["modal_k"] == 3).all() and (easy["true_k_frequency"] == 1.0).all()
    assert (table[table["value"] == 3.0]["modal_k"] < 3).all()
    crossings = pd.read_csv(tmp_path / "report" / "sweep_crossings.csv")
    assert (crossings["crossing"] == 3.0).all()
    # the modal choice is the most frequent per-trial choice of selection.csv's rows where k̂ is the modal one
    joined = table.merge(selection, on=["dataset", "n", "method", "criterion"])
    assert (joined["modal_frequency"] >= joined["k_hat_frequency"] - 1e-12).all()
