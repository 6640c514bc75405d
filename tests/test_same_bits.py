"""benchmarks/same_bits.py: cubes of one config compare equal when made twice by the same code, differ when
made with another seed, and the shrink rule reduces a config without losing its datasets or methods."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from conftest import REPO

spec = importlib.util.spec_from_file_location("same_bits", REPO / "benchmarks" / "same_bits.py")
same_bits = importlib.util.module_from_spec(spec)
sys.modules["same_bits"] = same_bits  # dataclasses look their module up there
spec.loader.exec_module(same_bits)

TINY = {"name": "tiny", "seed": 3, "n": [24, 40], "k": [2, 3], "resamples": 2, "baseline_draws": 10,
        "datasets": [{"name": "gauss", "kind": "lange_gaussians3"},
                     {"name": "points", "kind": "file", "path": "points.csv", "n": [24]}],
        "methods": [{"name": "km", "algorithm": "kmeans", "params": {"n_init": 1}, "predictor": "nearest_centroid",
                     "criteria": ["lange"]}]}


def _configs(folder: Path, **overrides) -> Path:
    folder.mkdir()
    rng = np.random.default_rng(0)
    np.savetxt(folder / "points.csv", rng.normal(size=(30, 2)), delimiter=",", header="x,y", comments="")
    (folder / "tiny.yaml").write_text(yaml.safe_dump({**TINY, **overrides}, sort_keys=False))
    return folder


def _run(configs: Path, out: Path, *extra: str) -> None:
    assert same_bits.main(["run", "--out", str(out), "--configs", str(configs), "--workers", "0", *extra]) == 0
    assert not list(configs.glob(".same_bits.*")), "the placed config was left behind"


def test_the_same_code_gives_the_same_bits_and_another_seed_does_not(tmp_path, capsys):
    configs = _configs(tmp_path / "configs")
    _run(configs, tmp_path / "one", "--shrink", "--shrink-all")  # under every cap: run as written
    _run(configs, tmp_path / "two")
    assert same_bits.main(["compare", str(tmp_path / "one"), str(tmp_path / "two")]) == 0
    assert "1 of 1 configs identical" in capsys.readouterr().out
    timings = json.loads((tmp_path / "one" / "timings.json").read_text())
    assert timings["tiny"]["exit"] == 0 and timings["tiny"]["shrunk"] is False

    # --like runs the config an earlier run stored (here given another seed), not the configs folder's
    stored = yaml.safe_load((tmp_path / "one" / "configs" / "tiny.yaml").read_text())
    assert stored == TINY
    (tmp_path / "other" / "configs").mkdir(parents=True)
    (tmp_path / "other" / "configs" / "tiny.yaml").write_text(yaml.safe_dump({**stored, "seed": 4}, sort_keys=False))
    _run(configs, tmp_path / "seeded", "--like", str(tmp_path / "other"))
    assert same_bits.open_raw(tmp_path / "seeded" / "tiny.zarr").attrs["ordercube_seed"] == 4
    assert same_bits.main(["compare", str(tmp_path / "one"), str(tmp_path / "seeded")]) == 1
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("tiny "))
    assert "lange" in row and "lange_random" in row  # the criterion and the baseline both moved
    assert "seconds" not in row and "status" not in row.split()[4:] and "k," not in row  # ok cells, same grid
    assert "ordercube_seed" in out  # the attribute that says why


def test_a_single_changed_bit_is_found_and_a_nan_equals_a_nan():
    values = np.array([[0.25, np.nan], [0.5, 1.0]])
    before = xr.Variable(("n", "k"), values)
    assert same_bits.compare_arrays("lange", before, before.copy(deep=True)).what == ""
    changed = values.copy()
    changed[1, 0] = np.nextafter(0.5, 1.0)  # one unit in the last place
    found = same_bits.compare_arrays("lange", before, xr.Variable(("n", "k"), changed))
    assert found.cells == 1 and found.max_abs == pytest.approx(2.0**-53)
    assert same_bits.compare_arrays("lange", xr.Variable("k", [0.0]), xr.Variable("k", [-0.0])).cells == 1
    assert "dtype" in same_bits.compare_arrays("k", xr.Variable("k", np.array([2], np.int64)),
                                               xr.Variable("k", np.array([2], np.int32))).what
    nan_against_number = same_bits.compare_arrays("lange", before, xr.Variable(("n", "k"), np.nan_to_num(values)))
    assert nan_against_number.cells == 1 and nan_against_number.max_abs == np.inf


def test_the_shrink_rule_keeps_the_ends_of_k_and_the_smallest_n():
    raw = {"name": "big", "seed": 1, "n": {"from": 64, "to": 1024, "factor": 2}, "k": {"from": 1, "to": 40},
           "resamples": 1000, "datasets": [{"name": "a", "kind": "x", "n": [100, "all", 50], "sweep": {"p": [1, 2, 3]}}],
           "methods": [{"name": "m"}], "published": {"a/m": {"c": 3}}}
    small, notes = same_bits.shrink(raw)
    assert small["resamples"] == 3 and small["baseline_draws"] == 50
    assert small["n"] == [64, 128] and small["datasets"][0]["n"] == [50, 100]
    assert small["k"] == [1, 14, 27, 40]
    assert small["datasets"][0]["sweep"] == {"p": [1, 3]}
    assert "published" not in small and small["methods"] == raw["methods"] and raw["resamples"] == 1000
    assert len(notes) == 7
    assert same_bits.shrink(small) == (small, [])  # a shrunk config is already small: the rule is idempotent
    small_already = {"n": ["all"], "k": [2, 3], "baseline_draws": 20}
    assert same_bits.shrink(small_already) == (small_already, [])
