"""Figures that show the choice, drawn only when their inputs changed, and reports of awkward cubes:
read from the matplotlib objects the report draws and from its files."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import PolyCollection

from conftest import cli_in_process, small_config, write_config
from ordercube.pipeline.report.figures import Figures
from ordercube.pipeline.files.outputs import RECORD
from ordercube.pipeline.reduce.select import criterion_scores, decisions
from ordercube.pipeline.report.write import Reduced, label_of, plot_curves_vs_k, plot_scaling, write_report
from ordercube.pipeline.cube.owner import open_cube

CRITERIA = ["lange", "pairwise", "prediction_strength", "gap"]


@pytest.fixture(scope="module")
def cube_path(tmp_path_factory):
    folder = tmp_path_factory.mktemp("figures")
    config = small_config(n=[40, 80], k=[1, 2, 3, 4], resamples=6, seed=4)
    config["methods"][0]["criteria"] = CRITERIA
    path = write_config(folder / "c.yaml", **config)
    result = cli_in_process("run", str(path), "--out", str(folder / "c.zarr"), "--workers", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    return folder / "c.zarr"


def test_curves_mark_k_hat_and_draw_the_threshold_and_the_gap_bars(cube_path):
    reduced = Reduced.of(open_cube(cube_path).load())
    rules = decisions(reduced.scores)
    for criterion in ("lange", "prediction_strength", "gap"):
        decision = rules[criterion]
        figure = plot_curves_vs_k(reduced.summary, criterion, reduced.chosen[criterion], decision)
        ax = figure.axes[0]
        dataset, model = ax.get_title().split(" / ")
        assert ax.get_ylabel() == label_of(criterion)
        stars = [line for line in ax.lines if line.get_marker() == "*"]
        expected = [(int(reduced.chosen[criterion].sel(dataset=dataset, model=model, n=n)), n)
                    for n in reduced.summary["n"].values]
        expected = [(k, n) for k, n in expected if k in reduced.summary["k"].values]
        assert len(stars) == len(expected)
        for star, (k_hat, n) in zip(stars, expected):
            mean = float(reduced.summary[f"{criterion}_mean"].sel(dataset=dataset, model=model, n=n, k=k_hat))
            assert star.get_xdata()[0] == k_hat and star.get_ydata()[0] == pytest.approx(mean)
        threshold = [line for line in ax.lines if line.get_linestyle() == "--"]
        if criterion == "prediction_strength":
            assert len(threshold) == 1 and threshold[0].get_ydata()[0] == pytest.approx(0.9)
        else:
            assert not threshold
        bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
        if criterion == "gap":  # bars of the mean s_k, not a band
            assert ax.containers and not bands
        else:  # the band is mean ± 1 SE, and the axis holds all of it
            band = bands[0].get_paths()[0].vertices[:, 1]
            at = {"dataset": dataset, "model": model, "n": reduced.summary["n"].values[0]}
            mean = reduced.summary[f"{criterion}_mean"].sel(at)
            se = reduced.summary[f"{criterion}_std"].sel(at) / np.sqrt(reduced.summary[f"{criterion}_trials"].sel(at))
            assert band.max() == pytest.approx(float((mean + se).max())) and band.min() == pytest.approx(float((mean - se).min()))
            low, high = ax.get_ylim()
            assert band.min() >= low and band.max() <= high


def test_scaling_draws_only_what_means_something(cube_path):
    reduced = Reduced.of(open_cube(cube_path).load())
    mean = reduced.summary["lange_mean"]
    three = plot_scaling(mean, mean * 2, reduced.failures["lange"], reduced.failures["lange"] * 0 + 0.3,
                         reduced.truth, "lange")
    one = plot_scaling(reduced.summary["prediction_strength_mean"], None, None, None, reduced.truth,
                       "prediction_strength")
    pairs = 2  # (gauss, km), (mix, km)
    assert len([ax for ax in three.axes if ax.get_visible()]) == 3 * pairs
    assert len(one.axes) == pairs
    failure_axis = three.axes[2]  # error bars of 0.3 around rates in [0, 1]: none clipped
    low, high = failure_axis.get_ylim()
    rates = reduced.failures["lange"].isel(dataset=0, model=0).values
    assert low <= (rates - 0.3).min() and high >= (rates + 0.3).max()


def test_the_report_redraws_only_what_changed_and_removes_what_no_longer_applies(cube_path, tmp_path):
    cube = open_cube(cube_path).load()
    first = write_report(cube, tmp_path)
    drawn, kept = first.attrs["figures"]
    expected = {f"{c}_{kind}.png" for c in CRITERIA for kind in ("vs_k", "scaling", "selection_frequency")}
    assert set(drawn) == expected and kept == []
    again = write_report(cube, tmp_path)
    assert again.attrs["figures"][0] == [] and set(again.attrs["figures"][1]) == expected
    pd.testing.assert_frame_equal(first, again)
    # a new threshold for Prediction Strength changes its figures only (its k̂ and its threshold line)
    redecided = write_report(cube, tmp_path, {"prediction_strength": {"threshold": 0.5}})
    redrawn = set(redecided.attrs["figures"][0])
    assert redrawn and all(name.startswith("prediction_strength_") for name in redrawn)
    assert "prediction_strength_vs_k.png" in redrawn
    # a criterion gone from the cube takes its figures along; a file the report did not draw stays
    (tmp_path / "notes.png").write_bytes(b"mine")
    write_report(cube.drop_vars(["gap", "gap_sd"]), tmp_path)
    names = {path.name for path in tmp_path.iterdir()}
    assert not {name for name in names if name.startswith("gap_")} and "notes.png" in names
    assert set(json.loads((tmp_path / RECORD).read_text())) == {n for n in expected if not n.startswith("gap_")}


def test_vector_formats(cube_path, tmp_path):
    result = cli_in_process("report", str(cube_path), "--out", str(tmp_path), "--format", "svg")
    assert result.returncode == 0, result.stderr
    svgs = sorted(tmp_path.glob("*.svg"))
    assert len(svgs) == 3 * len(CRITERIA) and not list(tmp_path.glob("*.png"))
    assert all(path.read_text().lstrip().startswith("<?xml") and "<svg" in path.read_text() for path in svgs)
    bad = cli_in_process("report", str(cube_path), "--out", str(tmp_path), "--format", "jpg")
    assert bad.returncode == 2 and "--format" in bad.stderr and "'jpg'" in bad.stderr


def test_an_unknown_figure_format_is_refused_before_anything_is_drawn(tmp_path):
    with pytest.raises(ValueError, match="'gif' is not one of"):
        Figures(tmp_path, "gif")
    assert not list(tmp_path.iterdir())


def _run(tmp_path, name, **overrides):
    config = small_config(**overrides)
    path = write_config(tmp_path / f"{name}.yaml", **config)
    env = {"ORDERCUBE_PLUGINS": "ordercube_test_stubs"}
    result = cli_in_process("run", str(path), "--out", str(tmp_path / f"{name}.zarr"), "--workers", "0",
                            "--no-progress", env=env)
    assert result.returncode in (0, 1), result.stderr
    report = cli_in_process("report", str(tmp_path / f"{name}.zarr"), "--out", str(tmp_path / f"{name}-r"))
    assert report.returncode == 0 and "Traceback" not in report.stderr, report.stderr
    return report, pd.read_csv(tmp_path / f"{name}-r" / "selection.csv")


def test_one_n_and_one_k_are_reported_with_what_they_mean(tmp_path):
    report, table = _run(tmp_path, "one", n=[60], k=[3])
    assert set(table["k_hat"]) == {3} and (table["runner_up"] == -1).all() and table["at_grid_edge"].all()
    assert table["difference"].isna().all() and not table["not_separated"].any()
    assert "at_grid_edge (4 of 4 rows)" in report.stdout and "widen k" in report.stdout
    assert "few_trials (4 of 4 rows)" in report.stdout
    written = {path.name for path in (tmp_path / "one-r").glob("*.png")}
    assert written == {f"{c}_{kind}.png" for c in ("lange", "pairwise") for kind in ("vs_k", "selection_frequency")}


def test_failed_infeasible_cells_and_an_empty_criterion_are_named_in_the_report(tmp_path):
    methods = [{"name": "stub", "algorithm": "stub_failing", "predictor": "nearest_centroid", "criteria": ["lange"]}]
    report, table = _run(tmp_path, "holes", n=[8, 40], k=[2, 3, 4], methods=methods)
    missing = pd.read_csv(tmp_path / "holes-r" / "missing_cells.csv")
    failed = missing[missing["status"] == "failed"]
    assert set(zip(failed["n"], failed["k"])) == {(40, 4)} and (failed["cells"] == 6).all()
    assert set(failed["reason"]) == {"RuntimeError: stub failure at k=4"}
    infeasible = missing[missing["status"] == "infeasible"]
    assert set(zip(infeasible["n"], infeasible["k"])) == {(8, 3), (8, 4)}
    assert "cells without a value, left out of every mean and count (36 cells" in report.stdout
    assert "failed: the fit or a criterion raised an error" in report.stdout
    assert "infeasible: k too large for the half" in report.stdout
    # n = 8 has k = 2 only: k̂ = 2 at the grid's edge; n = 40 chooses among 2 and 3 and says 3 is the largest it had
    assert set(table[table["n"] == 8]["k_hat"]) == {2} and table[table["n"] == 8]["at_grid_edge"].all()
    at_40 = table[table["n"] == 40]
    assert set(at_40["at_grid_edge"]) == set(at_40["k_hat"] == 3)
    # a criterion that has no value anywhere
    cube = open_cube(tmp_path / "holes.zarr").load()
    cube["pairwise"] = cube["lange"] * np.nan
    table = write_report(cube, tmp_path / "nan-r")
    assert table.attrs["without_values"] == ["pairwise"] and set(table["criterion"]) == {"lange"}
    assert not list((tmp_path / "nan-r").glob("pairwise*"))
    assert criterion_scores(cube)["pairwise"].isnull().all()


def test_a_figure_that_fails_is_named_and_the_rest_of_the_report_is_written(cube_path, tmp_path, monkeypatch):
    import ordercube.pipeline.report.write

    def broken(*args, **kwargs):
        raise RuntimeError("no room on the canvas")

    monkeypatch.setattr(ordercube.pipeline.report.write, "plot_scaling", broken)
    table = write_report(open_cube(cube_path).load(), tmp_path)
    failed = dict(table.attrs["figures_failed"])
    assert set(failed) == {f"{c}_scaling.png" for c in CRITERIA if c != "gap"} | {"gap_scaling.png"}
    assert all(reason == "RuntimeError: no room on the canvas" for reason in failed.values())
    assert (tmp_path / "index.html").exists() and (tmp_path / "selection.csv").exists()
    assert len(list(tmp_path.glob("*_vs_k.png"))) == len(CRITERIA) and not list(tmp_path.glob("*_scaling.png"))
    monkeypatch.undo()
    again = write_report(open_cube(cube_path).load(), tmp_path)  # not recorded as drawn: drawn now
    assert set(again.attrs["figures"][0]) == set(failed) and again.attrs["figures_failed"] == []


def test_the_command_draws_in_two_processes_the_same_bytes_as_one(cube_path, tmp_path):
    from conftest import cli

    result = cli("report", str(cube_path), "--out", str(tmp_path / "two"))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert re.search(r"\(12 figures drawn, [1-9]\d* of them by a second process\)", result.stdout), result.stdout
    write_report(open_cube(cube_path).load(), tmp_path / "one")  # in this process, no helper
    names = sorted(path.name for path in (tmp_path / "one").glob("*.png"))
    assert names == sorted(path.name for path in (tmp_path / "two").glob("*.png")) and len(names) == 12
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
