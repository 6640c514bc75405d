"""End to end on a real LocalCluster and a real zarr store: determinism, resume, extension, failures."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import zarr

from conftest import ORDERCUBE, REPO, STUBS, cli, cli_in_process, small_config, write_config
from ordercube.pipeline.reduce.select import criterion_scores, select_k
from ordercube.pipeline.cube.owner import open_cube

NOT_REPRODUCIBLE = {"seconds"}  # wall-clock time per cell; everything else is bit-identical


def cube_bytes(path: Path, *, keep_seconds: bool = False) -> dict[str, bytes]:
    cube = open_cube(path).load()
    out = {}
    for name, variable in {**cube.coords, **cube.data_vars}.items():
        if name in NOT_REPRODUCIBLE and not keep_seconds:
            continue
        values = variable.values
        out[name] = "\x00".join(map(str, values.ravel())).encode() if values.dtype.kind in "OUT" else values.tobytes()
    return out


def assert_same_cells(a: Path, b: Path) -> None:
    left, right = cube_bytes(a), cube_bytes(b)
    assert left.keys() == right.keys()
    different = [name for name in left if left[name] != right[name]]
    assert not different, f"variables differ between {a} and {b}: {different}"


def run_ok(config_path: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    result = cli("run", str(config_path), "--out", str(out), "--no-progress", *extra)
    assert result.returncode == 0, result.stderr
    return result


def run_here(config_path: Path, out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``ordercube run ... --workers 0`` called in this process: for the runs whose cells only have to be there (a
    reference, a base to grow) and for the checks of what the driver does. Where the cells are computed never
    changes them (the first test below); the tests of a cluster or of a process start one."""
    result = cli_in_process("run", str(config_path), "--out", str(out), "--no-progress", "--workers", "0", *extra, env=env)
    assert result.returncode == 0, result.stderr
    return result


def test_this_process_one_and_two_workers_give_identical_cubes_and_a_rerun_computes_nothing(tmp_path):
    config = write_config(tmp_path / "c.yaml", **small_config())
    here = run_ok(config, tmp_path / "here.zarr")  # a small sweep: no cluster is started
    assert re.search(r"computing in this process: about 0\.\d s of work on \d+ thread\(s\), under "
                     r"execution.in_process_seconds = 5,", here.stdout), here.stdout
    assert "dask dashboard" not in here.stdout
    run_ok(config, tmp_path / "one.zarr", "--workers", "1")
    run_ok(config, tmp_path / "two.zarr", "--workers", "2")
    assert_same_cells(tmp_path / "one.zarr", tmp_path / "two.zarr")
    assert_same_cells(tmp_path / "here.zarr", tmp_path / "two.zarr")
    slow_threshold = write_config(tmp_path / "t.yaml", **small_config(execution={"in_process_seconds": 0}))
    forced = run_here(slow_threshold, tmp_path / "forced.zarr")
    assert "computing in this process (--workers 0)" in forced.stdout
    assert_same_cells(tmp_path / "forced.zarr", tmp_path / "two.zarr")
    assert "starting a local Dask cluster: the estimated work is over execution.in_process_seconds = 0" in run_ok(
        slow_threshold, tmp_path / "cluster.zarr").stdout
    planned = cli_in_process("validate", str(config), "--out", str(tmp_path / "planned.zarr")).stdout
    assert re.search(r"72 to compute in \d+ tasks in this process on \d+ thread\(s\) \(estimated work under "
                     r"execution.in_process_seconds = 5\)", planned), planned

    before = cube_bytes(tmp_path / "two.zarr", keep_seconds=True)
    again = cli_in_process("run", str(config), "--out", str(tmp_path / "two.zarr"), "--no-progress", "--workers", "2")
    assert again.returncode == 0 and "nothing to compute" in again.stdout, again.stderr
    assert cube_bytes(tmp_path / "two.zarr", keep_seconds=True) == before

    status = cli_in_process("status", str(tmp_path / "two.zarr"), "--json")
    counts = json.loads(status.stdout)
    assert counts == {"total": 2 * 2 * 1 * 3 * 6, "ok": 72, "failed": 0, "infeasible": 0, "crashed": 0,
                      "pending": 0, "skipped": 0}

    report = cli_in_process("report", str(tmp_path / "two.zarr"), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    table = pd.read_csv(tmp_path / "report" / "selection.csv")
    assert {"dataset", "n", "method", "k_hat"} <= set(table.columns) and len(table) == 2 * 2 * 2
    chosen = select_k(criterion_scores(open_cube(tmp_path / "two.zarr")))
    for row in table.itertuples():
        assert row.k_hat == int(chosen[row.criterion].sel(dataset=row.dataset, n=row.n, model=row.method))
    for criterion in ("lange", "pairwise"):
        for figure in ("vs_k", "selection_frequency", "scaling"):
            assert (tmp_path / "report" / f"{criterion}_{figure}.png").stat().st_size > 10_000


def test_extension_computes_only_new_cells_and_keeps_old_ones_bit_identical(tmp_path):
    base = small_config()
    run_here(write_config(tmp_path / "base.yaml", **base), tmp_path / "grown.zarr")
    old = open_cube(tmp_path / "grown.zarr").load()

    extended = small_config(n=[40, 80, 60], k=[2, 3, 4, 5], resamples=9)
    extended["datasets"].append({"name": "rings", "kind": "rings3"})
    extended["methods"].append({"name": "km1", "algorithm": "kmeans", "params": {"n_init": 1},
                                "predictor": "nearest_centroid", "criteria": ["lange"]})
    extended_path = write_config(tmp_path / "extended.yaml", **extended)
    result = run_ok(extended_path, tmp_path / "grown.zarr", "--workers", "2")
    new_cells = 3 * 3 * 2 * 4 * 9 - 2 * 2 * 1 * 3 * 6
    assert f"computing {new_cells} of {new_cells + 72} planned cells" in result.stdout

    grown = open_cube(tmp_path / "grown.zarr").load()
    at_old = {dim: old[dim].values for dim in ("dataset", "n", "model", "k", "trial")}
    for name in ("lange", "pairwise", "status", "seconds"):
        assert grown[name].sel(at_old).values.tobytes() == old[name].values.tobytes(), name

    run_here(extended_path, tmp_path / "fresh.zarr")
    fresh = open_cube(tmp_path / "fresh.zarr").load()
    for name in ("lange", "pairwise", "status", "lange_random"):
        aligned = grown[name].sel({dim: fresh[dim].values for dim in fresh[name].dims})
        assert aligned.values.tobytes() == fresh[name].values.tobytes(), name


def test_a_config_that_changes_old_cells_is_refused_and_the_cube_is_untouched(tmp_path):
    run_here(write_config(tmp_path / "a.yaml", **small_config()), tmp_path / "cube.zarr")
    before = cube_bytes(tmp_path / "cube.zarr", keep_seconds=True)
    for change, word in [({"seed": 8}, "seed"),
                         ({"datasets": [{"name": "gauss", "kind": "lange_gaussians3", "params": {"std": 1.5}}]}, "std")]:
        result = cli_in_process("run", str(write_config(tmp_path / "b.yaml", **small_config(**change))), "--out",
                     str(tmp_path / "cube.zarr"), "--no-progress")
        assert result.returncode == 2
        assert word in result.stderr and "--out" in result.stderr and "Traceback" not in result.stderr
    assert cube_bytes(tmp_path / "cube.zarr", keep_seconds=True) == before


def test_failing_and_infeasible_cells_are_recorded_and_the_sweep_goes_on(tmp_path):
    config = small_config(n=[8, 40], k=[2, 3, 4])
    config["methods"] = [{"name": "stub", "algorithm": "stub_failing", "predictor": "nearest_centroid",
                          "criteria": ["lange"]}]
    path = write_config(tmp_path / "f.yaml", **config)
    env = {"ORDERCUBE_PLUGINS": "ordercube_test_stubs"}
    result = cli("run", str(path), "--out", str(tmp_path / "f.zarr"), "--no-progress", "--workers", "2", env=env)
    assert result.returncode == 1, result.stderr
    # what failed, said where the run ends: each distinct reason with its cells (12: k = 4 at n = 40, 6 trials x 2)
    assert "\n  12 cells of this run: RuntimeError: stub failure at k=4\n" in result.stderr, result.stderr
    cube = open_cube(tmp_path / "f.zarr").load()
    status = cube["status"].sel(model="stub")
    # n = 8: halves of 4 points fit k = 2 only (2 points per cluster); k = 4 fails wherever it is feasible
    assert (status.sel(n=8, k=2) == 1).all() and (status.sel(n=8, k=[3, 4]) == 3).all()
    assert (status.sel(n=40, k=[2, 3]) == 1).all() and (status.sel(n=40, k=4) == 2).all()
    reasons = set(cube["reason"].sel(model="stub", n=40, k=4).values.ravel())
    assert reasons == {"RuntimeError: stub failure at k=4"}
    assert np.isnan(cube["lange"].sel(model="stub", n=40, k=4)).all()
    assert cube["lange"].sel(model="stub", n=40, k=[2, 3]).notnull().all()
    counts = json.loads(cli_in_process("status", str(tmp_path / "f.zarr"), "--json").stdout)
    assert counts == {"total": 72, "ok": 2 * 6 + 2 * 2 * 6, "failed": 2 * 6, "infeasible": 2 * 2 * 6, "crashed": 0,
                      "pending": 0, "skipped": 0}

    again = cli_in_process("run", str(path), "--out", str(tmp_path / "f.zarr"), "--no-progress", "--workers", "1", env=env)
    assert again.returncode == 1 and "nothing to compute" in again.stdout and "--retry-failed" in again.stderr
    retried = cli_in_process("run", str(path), "--out", str(tmp_path / "f.zarr"), "--no-progress", "--workers", "0",
                             "--retry-failed", env=env)
    assert retried.returncode == 1 and "computing 12 of 72" in retried.stdout
    assert "  12 cells of this run: RuntimeError: stub failure at k=4" in retried.stderr
    assert "cells of this run" not in again.stderr  # nothing computed: no reason of this run to show


def _status_counts(path: Path) -> tuple[int, int]:
    try:
        status = zarr.open_group(path, mode="r")["status"][:]
    except Exception:  # the cube may not exist yet
        return 0, 1
    return int((status != 0).sum()), status.size


def _start(config: Path, out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)])}
    return subprocess.Popen([ORDERCUBE, "run", str(config), "--out", str(out),
                             "--workers", "2", "--no-progress"], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_until_partly_done(path: Path, at_least: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, total = _status_counts(path)
        if done >= at_least:
            assert done < total, "the sweep finished before it could be interrupted: make it longer"
            return
        time.sleep(0.05)
    raise AssertionError("the sweep made no progress")


def test_interrupt_and_kill_then_resume_equals_an_uninterrupted_run(tmp_path):
    config = write_config(tmp_path / "long.yaml", **small_config(
        n=[200, 400], k=[2, 3, 4, 5, 6], resamples=24, execution={"trials_per_chunk": 2, "task_seconds": 0.01}))
    cube = tmp_path / "interrupted.zarr"

    process = _start(config, cube)
    _wait_until_partly_done(cube, at_least=20)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Resume with" in stderr and str(cube) in stderr

    done_after_interrupt, _ = _status_counts(cube)
    process = _start(config, cube)
    _wait_until_partly_done(cube, at_least=done_after_interrupt + 20)
    os.killpg(process.pid, signal.SIGKILL)  # the driver and its LocalCluster, no clean-up at all
    process.wait(timeout=30)

    (cube / "status" / "leftover.partial").write_bytes(b"torn")  # what a crash mid-write leaves
    resumed = run_ok(config, cube, "--workers", "2")
    removed = re.search(r"removed (\d+) temp file", resumed.stdout)
    assert removed and int(removed.group(1)) >= 1  # ours, and any the kill left mid-write
    assert not list(cube.rglob("*.partial"))
    run_here(config, tmp_path / "straight.zarr")
    assert_same_cells(cube, tmp_path / "straight.zarr")


def test_a_cell_that_kills_its_worker_every_time_is_isolated_and_recorded_as_crashed(tmp_path):
    """stub_crashing kills its worker process at k = 5 (os._exit), every time. The task holding it fails
    as a whole (KilledWorker); the driver reruns its cells one by one: the k = 2 cells are computed, each
    k = 5 cell (after a second run of its own) is recorded as crashed with the reason, and the sweep
    finishes; the computed cells equal an undisturbed run's."""
    config = small_config(n=[40], k=[2, 5], resamples=4, execution={"trials_per_chunk": 4, "task_seconds": 0.0001})
    config["datasets"] = [{"name": "gauss", "kind": "lange_gaussians3"}]
    config["methods"] = [{"name": "crash", "algorithm": "stub_crashing", "predictor": "nearest_centroid",
                          "criteria": ["lange"]},
                         {"name": "fine", "algorithm": "stub_constant", "predictor": "nearest_centroid",
                          "criteria": ["lange"]}]
    env = {"ORDERCUBE_PLUGINS": "ordercube_test_stubs", "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}
    path = write_config(tmp_path / "c.yaml", **config)
    result = cli("run", str(path), "--out", str(tmp_path / "c.zarr"), "--workers", "2", "--no-progress", env=env)
    assert result.returncode == 1, result.stderr
    # ordercube prints no traceback; distributed may log its own record of a dead worker's closed stream, with one
    # (2 of 10 runs of the default suite under -n 2)
    from test_waits import outside_distributed_records

    assert "failed as a whole" in result.stdout
    assert "Traceback" not in "\n".join(outside_distributed_records(result.stderr.splitlines())), result.stderr
    cube = open_cube(tmp_path / "c.zarr").load()
    assert (cube["status"].sel(model="fine") == 1).all()
    crash = cube.sel(model="crash")
    assert (crash["status"].sel(k=2) == 1).all() and crash["lange"].sel(k=2).notnull().all()
    assert (crash["status"].sel(k=5) == 4).all()  # crashed
    assert all(reason.startswith("crashed: KilledWorker") for reason in crash["reason"].sel(k=5).values.ravel())
    counts = json.loads(cli_in_process("status", str(tmp_path / "c.zarr"), "--json").stdout)
    assert counts == {"total": 16, "ok": 12, "failed": 0, "infeasible": 0, "crashed": 4, "pending": 0, "skipped": 0}
    without_crashes = write_config(tmp_path / "k2.yaml", **{**config, "k": [2]})  # the same cells, no crash anywhere
    run_here(without_crashes, tmp_path / "u.zarr", env={"ORDERCUBE_PLUGINS": "ordercube_test_stubs"})
    ok = open_cube(tmp_path / "u.zarr").load()
    np.testing.assert_array_equal(crash["lange"].sel(k=2).values, ok["lange"].sel(model="crash", k=2).values)


def test_a_new_method_with_a_new_criterion_adds_its_variable(tmp_path):
    lange_only = small_config(methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 3},
                                        "predictor": "nearest_centroid", "criteria": ["lange"]}])
    run_here(write_config(tmp_path / "a.yaml", **lange_only), tmp_path / "cube.zarr")
    old = open_cube(tmp_path / "cube.zarr").load()
    assert "pairwise" not in old

    both = small_config()
    both["methods"] = lange_only["methods"] + [{"name": "km2", "algorithm": "kmeans", "params": {"n_init": 3},
                                                "predictor": "nearest_centroid", "criteria": ["pairwise"]}]
    result = run_here(write_config(tmp_path / "b.yaml", **both), tmp_path / "cube.zarr")
    assert "added variable pairwise" in result.stdout
    cube = open_cube(tmp_path / "cube.zarr").load()
    assert cube["lange"].sel(model="km").values.tobytes() == old["lange"].sel(model="km").values.tobytes()
    assert cube["pairwise"].sel(model="km2").notnull().all() and cube["pairwise"].sel(model="km").isnull().all()
    # the halves of a trial are shared by every method: km's lange and km2's pairwise come from the same draws
    assert (cube["status"] == 1).all()
    # what each method writes is recorded for both (the lost-value check reads it without the criteria)
    outputs = json.loads(cube.attrs["ordercube_outputs"])
    assert outputs["km"]["variables"] == ["lange"] and outputs["km"]["baseline"] == ["lange"]
    assert outputs["km2"]["variables"] == ["pairwise"] and outputs["km2"]["baseline"] == []


def test_a_joint_fit_of_all_k_through_the_engine_equals_a_direct_kernel_call(tmp_path):
    config = small_config(n=[64, 256], k=[2, 3, 4], resamples=5)
    config["datasets"] = [{"name": "mix", "kind": "shamir_mixture1d", "params": {"mu": 5.0}}]
    config["methods"] = [{"name": "exact", "algorithm": "kmeans_1d_exact", "predictor": "nearest_centroid",
                          "criteria": ["lange", "pairwise"]}]
    run_here(write_config(tmp_path / "c.yaml", **config), tmp_path / "c.zarr")
    cube = open_cube(tmp_path / "c.zarr").load()
    assert (cube["status"] == 1).all()

    from ordercube.tasks.cell import BlockSpec, run_block
    from ordercube.tasks.datasets import SyntheticSource
    from ordercube.tasks.seeding import label_id

    spec = BlockSpec(root_seed=7, dataset_id=label_id("mix"), n=256, method_id=label_id("exact"),
                     algorithm="kmeans_1d_exact", algorithm_params=(), predictor="nearest_centroid",
                     criteria=("lange", "pairwise"), ks=(2, 3, 4), trials=(3,))
    direct = run_block(spec, SyntheticSource("shamir_mixture1d", {"mu": 5.0}))
    for name in ("lange", "pairwise"):
        stored = cube[name].sel(dataset="mix", n=256, model="exact", trial=3).values
        assert stored.tobytes() == direct.values[name][:, 0].tobytes()


def test_pieces_of_one_chunk_are_merged_into_one_write_and_other_chunks_stay_apart():
    from ordercube.pipeline.cube.grid import Chunk
    from ordercube.pipeline.cube.writes import merge_blocks
    from ordercube.tasks.cell import BlockResult

    def piece(model: int, trials: tuple[int, ...], offset: float) -> tuple[Chunk, BlockResult]:
        shape = (2, len(trials))
        values = offset + np.arange(np.prod(shape), dtype=float).reshape(shape)
        return Chunk(0, 0, model, (0, 1), trials), BlockResult(
            values={"lange": values}, status=np.full(shape, 1, dtype=np.int8),
            reason=np.full(shape, "", dtype=object), seconds=values / 100)

    first, other, second = piece(0, (0, 1), 0.0), piece(1, (0, 1), 50.0), piece(0, (4, 5, 6), 10.0)
    merged = merge_blocks([first, other, second])
    assert [chunk for chunk, _ in merged] == [Chunk(0, 0, 0, (0, 1), (0, 1, 4, 5, 6)), other[0]]
    np.testing.assert_array_equal(merged[0][1].values["lange"], [[0, 1, 10, 11, 12], [2, 3, 13, 14, 15]])
    np.testing.assert_array_equal(merged[0][1].seconds, merged[0][1].values["lange"] / 100)
    assert merged[0][1].status.shape == merged[0][1].reason.shape == (2, 5)
    assert merged[1][1] is other[1]


def test_k_from_1_holds_prediction_strength_and_marks_stability_not_applicable_and_re_deciding_writes_nothing(tmp_path):
    config = small_config(k=[1, 2, 3, 4], datasets=[{"name": "gauss", "kind": "lange_gaussians3"}],
                          methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 3},
                                    "predictor": "nearest_centroid", "criteria": ["lange", "prediction_strength"]}])
    run_here(write_config(tmp_path / "c.yaml", **config), tmp_path / "c.zarr")
    cube = open_cube(tmp_path / "c.zarr").load()
    assert (cube["status"] == 1).all()
    assert cube["lange"].sel(k=1).isnull().all() and cube["lange"].sel(k=[2, 3, 4]).notnull().all()
    assert (cube["prediction_strength"].sel(k=1) == 1.0).all()  # one cluster keeps every pair together

    before = cube_bytes(tmp_path / "c.zarr", keep_seconds=True)
    for threshold in (0.9, 0.5):
        report = cli_in_process("report", str(tmp_path / "c.zarr"), "--out", str(tmp_path / f"r{threshold}"),
                     "--threshold", f"prediction_strength={threshold}")
        assert report.returncode == 0, report.stderr
        table = pd.read_csv(tmp_path / f"r{threshold}" / "selection.csv")
        expected = select_k(criterion_scores(cube), {"prediction_strength": {"threshold": threshold}})["prediction_strength"]
        rows = table[table.criterion == "prediction_strength"]
        assert rows.k_hat.tolist() == expected.sel(dataset="gauss", model="km").values.ravel().tolist()
        assert (table[table.criterion == "lange"].k_hat >= 2).all()
    assert cube_bytes(tmp_path / "c.zarr", keep_seconds=True) == before
    refused = cli_in_process("report", str(tmp_path / "c.zarr"), "--threshold", "lange=0.2")
    assert refused.returncode == 2 and "--threshold" in refused.stderr and "Traceback" not in refused.stderr


COMPETITORS = {"name": "competitors", "seed": 11, "n": [150], "k": [1, 2, 3, 4, 5], "resamples": 6,
               "datasets": [{"name": "gauss", "kind": "gaussian_mixture",
                             "params": {"centers": [[0, 0], [6, 0], [3, 5]], "std": 1.0}}],
               "methods": [{"name": "km", "algorithm": "kmeans", "params": {"n_init": 5}, "predictor": "nearest_centroid",
                            "criteria": ["lange", {"gap": {"references": 8}}, {"clest": {"splits": 4}},
                                         "prediction_strength", "agreement"]},
                           {"name": "gmm", "algorithm": "gaussian_mixture", "predictor": "gaussian_posterior",
                            "criteria": ["lange", "bic", "aic", "agreement"]}],
               "execution": {"trials_per_chunk": 3, "task_seconds": 0.01}}


def test_competing_criteria_share_the_resamples_choose_three_and_are_reproducible_per_seed(tmp_path):
    config = write_config(tmp_path / "c.yaml", **COMPETITORS)
    run_ok(config, tmp_path / "two.zarr", "--workers", "2")
    whole_chunks = write_config(tmp_path / "w.yaml", **{**COMPETITORS, "execution": {"task_seconds": 5}})
    run_here(whole_chunks, tmp_path / "one.zarr")
    assert_same_cells(tmp_path / "two.zarr", tmp_path / "one.zarr")  # other tasks, in this process: the same bits

    cube = open_cube(tmp_path / "two.zarr").load()
    assert (cube["status"] == 1).all()
    km, gmm = cube.sel(model="km"), cube.sel(model="gmm")
    assert km["lange"].sel(k=1).isnull().all() and km["clest"].sel(k=1).isnull().all()  # not applicable at k = 1
    assert km["gap"].sel(k=1).notnull().all() and gmm["bic"].sel(k=1).notnull().all()  # defined there
    assert gmm["gap"].isnull().all() and km["bic"].isnull().all()  # each method computes only its own criteria
    null = km["clest_null"].sel(k=[2, 3, 4, 5])
    assert (km["gap_sd"] > 0).all() and ((null >= 0) & (null <= 1)).all()

    report = cli_in_process("report", str(tmp_path / "two.zarr"), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr
    table = pd.read_csv(tmp_path / "report" / "selection.csv")
    chosen = {(row.method, row.criterion): row.k_hat for row in table.itertuples()}
    assert chosen == {("km", "lange"): 3, ("km", "gap"): 3, ("km", "clest"): 3, ("km", "prediction_strength"): 3,
                      ("gmm", "lange"): 3, ("gmm", "bic"): 3, ("gmm", "aic"): 3}
    assert (table.agreement_at_k_hat > 0.95).all()  # three separated clouds: the k̂ = 3 solutions are the classes

    before = cube_bytes(tmp_path / "two.zarr", keep_seconds=True)
    redecided = cli_in_process("report", str(tmp_path / "two.zarr"), "--out", str(tmp_path / "r2"),
                               "--decide", "gap.method=globalmax", "--decide", "clest.d_min=0.9")
    assert redecided.returncode == 0, redecided.stderr
    table = pd.read_csv(tmp_path / "r2" / "selection.csv")
    scores = criterion_scores(cube)
    global_max = int(scores["gap"].sel(model="km").mean("trial").idxmax("k").squeeze())
    assert table[table.criterion == "gap"].k_hat.item() == global_max
    assert table[table.criterion == "clest"].k_hat.item() == 1  # no k beats its null by 0.9
    assert cube_bytes(tmp_path / "two.zarr", keep_seconds=True) == before
    for bad, words in ((("--decide", "gap.method=largest"), ["gap.method", "'largest'", "Tibs2001SEmax"]),
                       (("--decide", "lange.threshold=0.3"), ["lange.threshold", "has the fields ['ties', 'aggregate']"]),
                       (("--decide", "gap=3"), ["CRITERION.FIELD=VALUE", "gap.method=globalmax"])):
        refused = cli_in_process("report", str(tmp_path / "two.zarr"), "--out", str(tmp_path / "r3"), *bad)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
        assert all(word in refused.stderr for word in words), refused.stderr
