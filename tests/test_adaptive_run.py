"""Adaptive sweeps on the engine: rounds decided on stored trial-index prefixes.

Every check runs the real engine on a real zarr cube: in this process (threads), on a real LocalCluster, cut
into other tasks, interrupted and resumed; the decisions are checked against ordercube.tasks.adaptive.race run
independently on the stored values, and the computed cells against a fixed-budget cube of the same config.
"""

from __future__ import annotations

import json
import signal

import numpy as np
import pytest
import xarray as xr

from conftest import cli_in_process, write_config
from ordercube.pipeline.system import interrupts
from ordercube.pipeline.config.study import parse_config
from ordercube.pipeline.cube.attrs import BASELINE
from ordercube.pipeline.reduce.select import criterion_scores
from ordercube.pipeline.run.rounds import ADAPTIVE_ATTRIBUTE, AdaptiveFeed
from ordercube.pipeline.run.sweep import Interrupted, run_sweep
from ordercube.pipeline.cube.owner import Cube, open_cube
from ordercube.tasks.adaptive import race_by
from ordercube.tasks.cell import Status
from ordercube.tasks.criteria import CRITERIA

QUIET = {"show_progress": False, "echo": lambda line: None}


def adaptive_config(**overrides) -> dict:
    """Three groups that decide early (three Gaussians) and one that should not (rings), 60 trials, looks 20, 40, 60."""
    config = {
        "name": "adaptive", "seed": 11, "n": [60, 120], "k": [2, 3, 4, 5], "resamples": 60,
        "datasets": [{"name": "gauss", "kind": "lange_gaussians3"}, {"name": "rings", "kind": "rings3"}],
        "methods": [{"name": "km", "algorithm": "kmeans", "params": {"n_init": 2}, "predictor": "nearest_centroid",
                     "criteria": ["lange", "pairwise", "prediction_strength"]}],
        "adaptive": {"delta": 0.05, "looks": [20, 40, 60]},
        "execution": {"task_seconds": 0.05},
    }
    config.update(overrides)
    return config


def run(tmp_path, name: str, raw: dict, **options) -> xr.Dataset:
    config = parse_config(raw, base=tmp_path, out=str(tmp_path / name))
    run_sweep(config, **{**QUIET, **options})
    return open_cube(tmp_path / name)


def records(cube: xr.Dataset) -> dict:
    return json.loads(cube.attrs[ADAPTIVE_ATTRIBUTE])


def same_cube(a: xr.Dataset, b: xr.Dataset) -> None:
    for name in ("status", "lange", "pairwise", "reason"):
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
    assert records(a) == records(b)


@pytest.mark.parametrize("mode", ["t", "guarded", "strict"])
def test_decisions_are_the_race_on_the_stored_prefix_and_computed_cells_equal_the_fixed_budgets(tmp_path, mode):
    """Mode strict (empirical Bernstein, ranges from the baseline for Lange) stops later than t, as a pilot run
    found; guarded (Cochran's rule on each interval) in between; all give records equal to the race run here on
    the stored values."""
    adaptive = run(tmp_path, "a.zarr", adaptive_config(adaptive={"delta": 0.05, "looks": [20, 40, 60], "mode": mode}),
                   workers=0)
    fixed = run(tmp_path, "f.zarr", {key: value for key, value in adaptive_config().items() if key != "adaptive"},
                workers=0)
    status = adaptive["status"].values
    assert (status == Status.OK).sum() + (status == Status.SKIPPED).sum() == status.size
    skipped = (status == Status.SKIPPED).sum() / status.size
    assert skipped > 0.3 if mode == "t" else skipped < 0.3  # t: the Gaussians decided early
    computed = status == Status.OK  # the same cells, the same bits: a cell depends on its coordinates only
    for name in ("lange", "pairwise"):
        np.testing.assert_array_equal(adaptive[name].values[computed], fixed[name].values[computed])
    assert (adaptive["seconds"].values[~computed] == 0).all()
    scores = criterion_scores(adaptive)
    looks = (20, 40, 60)
    decided = records(adaptive)
    assert len(decided) == 4
    for key, record in decided.items():
        dataset, n, model = key.split("|")
        assert (record["dataset"], record["n"], record["method"], record["looks"]) == (dataset, int(n), model, [20, 40, 60])
        group = status[list(adaptive["dataset"].values).index(dataset), list(adaptive["n"].values).index(int(n)), 0]
        r_stop = record["r_stop"]
        assert (group[:, r_stop:] == Status.SKIPPED).all()  # nothing after the stop
        assert record["cells"] == int((group == Status.OK).sum()) and record["budget"] == group.size
        kept = set()
        for name, outcome in record["criteria"].items():
            values = scores[name].sel(dataset=dataset, n=int(n), model=model).transpose("trial", "k").values
            ks = [k for k, column in zip(adaptive["k"].values, values.T) if not np.isnan(column[:20]).all()]
            values = values[:, [list(adaptive["k"].values).index(k) for k in ks]]
            ranges = None
            if mode == "strict":
                baseline = adaptive[BASELINE].sel(n=int(n)).sel(k=ks).values
                ranges = 1 / baseline if name == "lange" else np.ones(len(ks))
            expected = race_by(CRITERIA[name].decision, values, looks, delta=0.05, epsilon=0.0, upto=r_stop,
                               mode=mode, ranges=ranges)
            assert outcome["reason"] == expected.reason and outcome["r_stop"] == expected.stop
            assert outcome["k_hat"] == (ks[expected.choice] if expected.choice >= 0 else -1)
            assert outcome["in_play"] == [ks[a] for a in expected.active]
            kept |= set(outcome["in_play"])
        left = {}  # an eliminated k gets no trials after the last look at which a criterion eliminated it
        for outcome in record["criteria"].values():
            for look, gone in zip(looks, outcome["eliminated"]):
                for k in gone:
                    left.setdefault(k, []).append(look)
        for k, at in left.items():
            if k not in kept and len(at) == len(record["criteria"]):
                assert (group[list(adaptive["k"].values).index(k), max(at):] == Status.SKIPPED).all()
        for k in kept:  # the k's still in play at the stop have every trial up to it
            assert (group[list(adaptive["k"].values).index(k), :r_stop] == Status.OK).all()
    gauss = decided["gauss|120|km"]["criteria"]
    for name in ("lange", "pairwise", "prediction_strength") if mode == "t" else ():
        assert gauss[name]["reason"] == "decided" and gauss[name]["k_hat"] == 3, (name, gauss[name])


def test_the_same_cube_for_threads_another_task_cut_a_local_cluster_and_an_interrupted_run(tmp_path, monkeypatch):
    reference = run(tmp_path, "one.zarr", adaptive_config(), workers=0)
    cut = adaptive_config(execution={"task_seconds": 5.0})  # whole rounds per task instead of slices
    same_cube(reference, run(tmp_path, "cut.zarr", cut, workers=0))
    same_cube(reference, run(tmp_path, "cluster.zarr", adaptive_config(), workers=2, dashboard_address=None))

    calls = []
    original = AdaptiveFeed.stored

    def stop_after_a_few_writes(self, done):
        calls.append(1)
        if len(calls) == 4:  # a Ctrl-C mid-sweep: some rounds stored, others not
            interrupts.on_signal(signal.SIGINT, None)
        return original(self, done)

    monkeypatch.setattr(AdaptiveFeed, "stored", stop_after_a_few_writes)
    config = parse_config(adaptive_config(), base=tmp_path, out=str(tmp_path / "stopped.zarr"))
    try:
        with pytest.raises(Interrupted):
            run_sweep(config, workers=0, **QUIET)
    finally:
        interrupts.REQUESTED.clear()
    counts = Cube.open(tmp_path / "stopped.zarr").count_cells()
    assert counts["pending"] > 0
    monkeypatch.setattr(AdaptiveFeed, "stored", original)
    run_sweep(config, workers=0, **QUIET)
    same_cube(reference, open_cube(tmp_path / "stopped.zarr"))


def test_a_new_cube_is_created_once_the_first_rounds_are_handed_out_and_the_dearest_round_goes_first(tmp_path,
                                                                                                    monkeypatch):
    events = []
    take, create = AdaptiveFeed.take, Cube.create.__func__

    def taking(self, count):
        tasks = take(self, count)
        events.extend(("take", spec.n) for task in tasks for _, spec in task.blocks)
        return tasks

    def creating(cls, *args, **kwargs):
        events.append(("create", None))
        return create(cls, *args, **kwargs)

    monkeypatch.setattr(AdaptiveFeed, "take", taking)
    monkeypatch.setattr(Cube, "create", classmethod(creating))
    cube = run(tmp_path, "new.zarr", adaptive_config(), workers=0)
    assert events.count(("create", None)) == 1
    assert events[0][0] == "take", "the cube was created before any round was handed out"
    # every group's first round is needed: the larger sample size (dearer cells) is handed out first
    assert events[0] == ("take", 120), events[:4]
    assert records(cube) and int((cube["status"] == Status.SKIPPED).sum()) > 0


def test_a_run_without_adaptive_fills_the_skipped_cells_and_gives_the_fixed_budgets_cube(tmp_path):
    raw = adaptive_config()
    run(tmp_path, "grow.zarr", raw, workers=0)
    counts = Cube.open(tmp_path / "grow.zarr").count_cells()
    assert counts["skipped"] > 0 and counts["pending"] == 0
    again = cli_in_process("run", str(write_config(tmp_path / "again.yaml", **raw)), "--out", str(tmp_path / "grow.zarr"),
                           "--workers", "0")
    assert again.returncode == 0 and "nothing to compute" in again.stdout  # skipped cells are done for the rule
    plain = {key: value for key, value in raw.items() if key != "adaptive"}
    filled = run(tmp_path, "grow.zarr", plain, workers=0)
    fixed = run(tmp_path, "fixed.zarr", plain, workers=0)
    assert (filled["status"].values == Status.OK).all() and records(filled) == {}  # no rule stopped these any more
    for name in ("lange", "pairwise"):
        np.testing.assert_array_equal(filled[name].values, fixed[name].values)


def test_more_resamples_extend_an_adaptive_cube_to_what_a_fresh_run_of_them_decides(tmp_path):
    """The rule at 120 trials (looks 20, 40, 80, 120) on the cube of 60: the same decisions as a fresh run at 120, and
    every cell that run computed is computed here with the same bits (the cube at 60 may hold a few more: its looks
    had other Bonferroni levels). ``validate`` says what the block does."""
    small = adaptive_config(adaptive={"delta": 0.05, "r_min": 20})
    run(tmp_path, "x.zarr", small, workers=0)
    larger = adaptive_config(resamples=120, adaptive={"delta": 0.05, "r_min": 20})
    shown = cli_in_process("validate", str(write_config(tmp_path / "larger.yaml", **larger)), "--out", str(tmp_path / "x.zarr"))
    assert shown.returncode == 0 and "adaptive: stops once k̂ is settled, looks [20, 40, 80, 120]" in shown.stdout
    extended = run(tmp_path, "x.zarr", larger, workers=0)
    fresh = run(tmp_path, "fresh.zarr", larger, workers=0)
    decisions = [{key: {field: value for field, value in record.items() if field != "cells"}
                  for key, record in records(cube).items()} for cube in (extended, fresh)]
    assert decisions[0] == decisions[1]
    computed = fresh["status"].values == Status.OK
    assert (extended["status"].values[computed] == Status.OK).all()
    for name in ("lange", "pairwise", "prediction_strength"):
        np.testing.assert_array_equal(extended[name].values[computed], fresh[name].values[computed])
    assert (extended["status"].values[..., 60:] == Status.OK).any()  # a group unsettled at 60 went on


def test_status_counts_skipped_cells_and_the_report_shows_every_groups_record(tmp_path):
    cube = run(tmp_path, "s.zarr", adaptive_config(adaptive={"delta": 0.05, "looks": [20, 40, 60], "epsilon": 0.001}),
               workers=0)
    shown = cli_in_process("status", str(tmp_path / "s.zarr"))
    assert shown.returncode == 0 and f"skipped: {int((cube['status'] == Status.SKIPPED).sum())}" in shown.stdout
    reasons = set(cube["reason"].values[cube["status"].values == Status.SKIPPED])
    assert reasons and all(reason.startswith("adaptive: ") for reason in reasons)
    assert any("eliminated at r = 20" in reason or "stopped at r = 20" in reason for reason in reasons)
    report = cli_in_process("report", str(tmp_path / "s.zarr"), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    computed = int((cube["status"] == Status.OK).sum())
    assert f"adaptive resampling: {computed} of {cube['status'].size} cells" in report.stdout
    import pandas as pd

    table = pd.read_csv(tmp_path / "report" / "adaptive.csv", keep_default_na=False)
    expected = [(record["dataset"], record["n"], record["method"], name, race["reason"], race["k_hat"],
                 " ".join(map(str, race["in_play"])), race["r_stop"], record["cells"], record["budget"], "t", 0.05, 0.001)
                for record in records(cube).values() for name, race in record["criteria"].items()]
    rows = [tuple(row) for row in table[["dataset", "n", "method", "criterion", "reason", "k_hat", "in_play", "r_stop",
                                         "cells", "budget", "mode", "delta", "epsilon"]].itertuples(index=False)]
    assert sorted(rows, key=str) == sorted(expected, key=str) and len(rows) == 12  # 4 groups x 3 criteria
    assert table.drop_duplicates(["dataset", "n", "method"])["cells"].sum() == computed
    assert (table["share"] == table["cells"] / table["budget"]).all()


BAD = {
    "delta 0": ({"adaptive": {"delta": 0}}, ["adaptive.delta", "got 0", "> 0 and < 1"]),
    "delta above 1": ({"adaptive": {"delta": 1.5}}, ["adaptive.delta", "got 1.5"]),
    "epsilon negative": ({"adaptive": {"epsilon": -0.01}}, ["adaptive.epsilon", "got -0.01", ">= 0"]),
    "looks not increasing": ({"adaptive": {"looks": [40, 20, 60]}}, ["adaptive.looks", "increasing"]),
    "last look not the budget": ({"adaptive": {"looks": [20, 40]}}, ["adaptive.looks", "resamples = 60"]),
    "looks and r_min": ({"adaptive": {"looks": [20, 60], "r_min": 20}}, ["adaptive.looks", "keep one"]),
    "looks not multiples of the chunk": ({"adaptive": {"looks": [30, 60]}, "execution": {"trials_per_chunk": 20}},
                                         ["adaptive.looks", "multiples of execution.trials_per_chunk = 20"]),
    "criterion without a sequential rule": (
        {"methods": [{"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["lange", "gap"]}]},
        ["methods[0].criteria[1]", "'gap'", "no sequential rule", "adaptive: off"]),
    "unknown mode": ({"adaptive": {"mode": "betting"}}, ["adaptive.mode", "got 'betting'", "use mode: t", "strict"]),
    "strict mode on a criterion without a range": (
        {"adaptive": {"mode": "strict"}, "methods": [{"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid",
                                                      "criteria": ["lange", "davies_bouldin"]}]},
        ["methods[0].criteria[1]", "mode strict needs values in a known range", "'davies_bouldin'"]),
    "unknown key": ({"adaptive": {"alpha": 0.05}}, ["adaptive.alpha", "unknown key", "delta"]),
    "method block not a mapping": (
        {"methods": [{"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["lange"],
                      "adaptive": 3}]}, ["methods[0].adaptive", "got 3"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_adaptive_blocks_exit_2_naming_the_key_and_write_nothing(tmp_path, case):
    overrides, expected = BAD[case]
    path = write_config(tmp_path / "bad.yaml", **adaptive_config(**overrides))
    result = cli_in_process("run", str(path), "--out", str(tmp_path / "bad.zarr"), "--workers", "0")
    assert result.returncode == 2, result.stderr
    for text in expected:
        assert text in result.stderr, (text, result.stderr)
    assert "Traceback" not in result.stderr and not (tmp_path / "bad.zarr").exists()


def test_a_method_may_turn_the_rule_off_or_change_it(tmp_path):
    raw = adaptive_config(methods=[
        {"name": "km", "algorithm": "kmeans", "params": {"n_init": 2}, "predictor": "nearest_centroid",
         "criteria": ["lange"], "adaptive": {"delta": 0.01}},
        {"name": "internal", "algorithm": "kmeans", "params": {"n_init": 2}, "predictor": "nearest_centroid",
         "criteria": ["silhouette"], "adaptive": "off"}])
    config = parse_config(raw, base=tmp_path)
    assert set(config.adaptive) == {"km"} and config.adaptive["km"].delta == 0.01
    assert config.adaptive["km"].looks == (20, 40, 60)
    cube = run(tmp_path, "m.zarr", raw, workers=0)
    assert (cube["status"].sel(model="internal").values == Status.OK).all()
    assert (cube["status"].sel(model="km").values == Status.SKIPPED).any()


def test_an_existing_cube_whose_chunks_do_not_fit_the_looks_is_refused_before_it_changes(tmp_path):
    plain = {key: value for key, value in adaptive_config().items() if key != "adaptive"}
    plain["execution"] = {"trials_per_chunk": 30}
    run(tmp_path, "c.zarr", {**plain, "resamples": 30}, workers=0)
    before = Cube.open(tmp_path / "c.zarr").count_cells()
    path = write_config(tmp_path / "more.yaml", **{**plain, "execution": {}, "adaptive": {"looks": [20, 40, 60]}})
    result = cli_in_process("run", str(path), "--out", str(tmp_path / "c.zarr"), "--workers", "0")
    assert result.returncode == 2 and "adaptive.looks" in result.stderr and "30 trials per chunk" in result.stderr
    assert Cube.open(tmp_path / "c.zarr").count_cells() == before
