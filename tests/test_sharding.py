"""Sharded cubes (format 4): many chunks in one stored object, the same cells, the same guarantees.

A cube of more than ``SHARD_ABOVE_CHUNKS`` chunks a variable is sharded. The grids here get there with one trial
per chunk (260 chunks a variable) and are cut into several shards by ``ORDERCUBE_SHARD_CELLS`` (the shard size a
process creates its cubes with), so that a run holds, fills and writes several shards, some of them twice.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import zarr

from conftest import ORDERCUBE, REPO, STUBS, cli_in_process, small_config, write_config
from ordercube.pipeline.cube.layout import SHARD_ABOVE_CHUNKS, object_count, shard_shape
from test_engine import assert_same_cells

TIMEOUT = 240
SHARD_CELLS = 60  # 20 trials of 3 k: 7 shards per (dataset, n, model) of 130 trials, the last one partly used
GAUSS = [{"name": "gauss", "kind": "lange_gaussians3"}]
SHARDED = small_config(n=[40, 80], k=[2, 3, 4], resamples=130, datasets=GAUSS,
                       methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 2},
                                 "predictor": "nearest_centroid", "criteria": ["lange", "pairwise"]}],
                       execution={"trials_per_chunk": 1, "task_seconds": 0.01})
PLAIN = {**SHARDED, "execution": {"trials_per_chunk": 10, "task_seconds": 0.01}}  # 26 chunks a variable: format 3
GROWN = {**SHARDED, "n": [40, 80, 120], "k": [2, 3, 4, 5], "resamples": 140,
         "methods": [*SHARDED["methods"], {"name": "ps", "algorithm": "kmeans", "params": {"n_init": 2},
                                           "predictor": "nearest_centroid", "criteria": ["prediction_strength"]}]}
GROWN_PLAIN = {**GROWN, "execution": {"trials_per_chunk": 10, "task_seconds": 0.01}}


def _run(config: Path, cube: Path, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)]),
                "ORDERCUBE_SHARD_CELLS": str(SHARD_CELLS), **env}
    full_env.pop("ORDERCUBE_KILL_PID", None)
    if "ORDERCUBE_KILL_AT" in env or "ORDERCUBE_KILL_COUNT" in env:
        full_env["ORDERCUBE_PLUGINS"] = "ordercube_kill_switch"
    try:
        return subprocess.run([ORDERCUBE, "run", str(config), "--out", str(cube), "--no-progress", "--workers", "0"],
                              env=full_env, capture_output=True, text=True, timeout=TIMEOUT, start_new_session=True)
    except subprocess.TimeoutExpired as error:
        raise AssertionError(f"ordercube run did not finish in {TIMEOUT} s: {error.stderr}") from None


def _ok(config: Path, cube: Path) -> subprocess.CompletedProcess:
    result = _run(config, cube)
    assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict:
    """An unsharded reference, a sharded cube of the same cells (the count of its stored objects' writes), and
    both grown."""
    folder = tmp_path_factory.mktemp("sharding")
    configs = {name: write_config(folder / f"{name}.yaml", **config)
               for name, config in (("sharded", SHARDED), ("plain", PLAIN), ("grown", GROWN), ("grown_plain", GROWN_PLAIN))}
    _ok(configs["plain"], folder / "plain.zarr")
    counts = folder / "counts.json"
    result = _run(configs["sharded"], folder / "sharded.zarr", ORDERCUBE_KILL_COUNT=str(counts))
    assert result.returncode == 0, result.stderr
    _ok(configs["grown_plain"], folder / "grown_plain.zarr")
    changes = json.loads(counts.read_text())
    return {"folder": folder, "configs": configs, "create": changes["create"], "writes": changes["write"]}


def _objects(cube: Path, name: str) -> list[str]:
    return sorted(str(p.relative_to(cube)) for p in (cube / name / "c").rglob("*") if p.is_file())


def test_the_shard_rule_groups_whole_chunks_in_the_tasks_order_up_to_the_shard_size():
    assert shard_shape((1, 2, 1, 3, 26), (1, 1, 1, 3, 1)) is None  # 52 chunks: not sharded
    shape, chunks = (3, 7, 2, 9, 1000), (1, 1, 1, 9, 100)  # 420 chunks of 900 cells
    shard = shard_shape(shape, chunks)
    assert shard is not None and all(s % c == 0 for s, c in zip(shard, chunks))
    # all trials (9,000 cells), both models (18,000), then 3 of the 7 n (54,000 <= 65,536); not across datasets
    assert shard == (1, 3, 2, 9, 1000)
    objects = int(np.prod([-(-s // h) for s, h in zip(shape, shard)]))
    assert objects == 3 * 3 and objects < int(np.prod([-(-s // c) for s, c in zip(shape, chunks)])) / 40
    assert shard_shape((3, 2, 1, 9, 300), (1, 1, 1, 9, 1)) == (3, 2, 1, 9, 300)  # every n whole: datasets too
    assert SHARD_ABOVE_CHUNKS == 256
    # 1e7 cells of one criterion, 100 trials a chunk: a few hundred objects, where one per chunk would be ~40,000
    for grid in ((10, 5, 1, 10, 20000), (100, 10, 1, 10, 1000), (1, 1, 1, 10, 10**6)):
        assert int(np.prod(grid)) == 10**7
        rule = object_count(grid, (1, 1, 1, 10, 100), 1)
        assert rule["cells"] == 4 * int(np.prod([-(-s // h) for s, h in zip(grid, shard_shape(grid, (1, 1, 1, 10, 100)))]))
        assert sum(rule.values()) < 1000, (grid, rule)


def test_a_sharded_cube_holds_the_cells_of_an_unsharded_one_in_fewer_objects(made):
    folder = made["folder"]
    sharded, plain = folder / "sharded.zarr", folder / "plain.zarr"
    assert_same_cells(sharded, plain)
    group = zarr.open_group(sharded, mode="r")
    assert group.attrs["ordercube_format"] == 4 and zarr.open_group(plain, mode="r").attrs["ordercube_format"] == 3
    status = group["status"]
    assert status.chunks == (1, 1, 1, 3, 1) and status.shards == (1, 1, 1, 3, 20)
    # 260 chunks of every cell variable in 2 n x 7 shards: one object each, and the manifest one entry per object
    for name in ("lange", "pairwise", "status", "reason", "seconds"):
        assert len(_objects(sharded, name)) == 14, name
    manifest = np.asarray(group["integrity/crc"][:])
    assert manifest.shape == (4, 1, 2, 1, 1, 7) and (manifest >= 1 << 32).all()
    assert cli_in_process("status", str(sharded), "--verify").stderr.startswith("verified: ")
    # held and written by shard: about one write of each variable's shard (a few twice: the 10 s timer, the lock)
    assert made["writes"] < 3 * 14 * 5


def _done_values_match(cube: Path, reference: Path) -> int:
    """How many cells the killed ``cube`` marks done; fails if any of them lacks its reference values."""
    got, want = zarr.open_group(cube, mode="r"), zarr.open_group(reference, mode="r")
    status = np.asarray(got["status"][:])
    done = status != 0
    assert (status[done] == np.asarray(want["status"][:])[done]).all()
    for name in ("lange", "pairwise"):
        assert np.array_equal(np.asarray(got[name][:])[done], np.asarray(want[name][:])[done], equal_nan=True), name
    return int(done.sum())


def test_a_kill_while_shards_are_written_then_the_same_command_gives_the_unsharded_runs_cells(made, tmp_path):
    folder, writes = made["folder"], made["writes"]
    moments = sorted(random.Random(31).sample(range(1, writes + 1), 3))
    for moment in moments:
        cube = tmp_path / f"killed-{moment}.zarr"
        killed = _run(made["configs"]["sharded"], cube, ORDERCUBE_KILL_AT=str(made["create"] + moment))
        assert killed.returncode == -9, f"not killed at write {moment} of {writes} ({killed.returncode}): {killed.stderr}"
        assert _done_values_match(cube, folder / "plain.zarr") < 780  # never a status before its values
        resumed = _run(made["configs"]["sharded"], cube)
        assert resumed.returncode == 0, f"killed at write {moment}: the same command then failed: {resumed.stderr}"
        assert_same_cells(cube, folder / "plain.zarr")
        assert cli_in_process("status", str(cube), "--verify").stderr.startswith("verified: ")


def _shard(cube: Path, name: str, index: int = 3) -> Path:
    return cube / name / "c" / "0" / "0" / "0" / "0" / str(index)


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["a chunk inside", "the index"])
def test_a_flipped_byte_inside_a_shard_is_an_error_naming_it(made, tmp_path, where):
    cube = tmp_path / "cube.zarr"
    shutil.copytree(made["folder"] / "sharded.zarr", cube)
    shard = _shard(cube, "lange")
    _flip(shard, shard.stat().st_size // 3 if where == "a chunk inside" else shard.stat().st_size - 7)
    for command in (["status", str(cube), "--verify"], ["status", str(cube)]):
        result = cli_in_process(*command)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert "lange/c/0/0/0/0/3" in result.stderr and "checksum" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr


def test_a_shard_copied_over_another_is_caught_by_the_manifest_and_recomputed(made, tmp_path):
    cube = tmp_path / "cube.zarr"
    shutil.copytree(made["folder"] / "sharded.zarr", cube)
    assert _shard(cube, "pairwise", 1).read_bytes() != _shard(cube, "pairwise", 2).read_bytes()
    shutil.copyfile(_shard(cube, "pairwise", 1), _shard(cube, "pairwise", 2))  # valid checksums, the wrong place
    result = cli_in_process("status", str(cube), "--json")
    assert json.loads(result.stdout)["pending"] == 20 * 3
    assert "pairwise/c/0/0/0/0/2 not the chunk recorded at its place" in result.stderr
    rerun = _ok(made["configs"]["sharded"], cube)
    assert "60 cell(s) marked done have lost their values" in rerun.stdout
    assert_same_cells(cube, made["folder"] / "plain.zarr")


def test_a_sharded_cube_extends_in_its_layout_to_the_cells_of_an_unsharded_one(made, tmp_path):
    cube = tmp_path / "cube.zarr"
    shutil.copytree(made["folder"] / "sharded.zarr", cube)
    grown = _ok(made["configs"]["grown"], cube)
    assert "extended n by [120]" in grown.stdout and "added variable prediction_strength" in grown.stdout
    assert_same_cells(cube, made["folder"] / "grown_plain.zarr")
    group = zarr.open_group(cube, mode="r")
    assert group["prediction_strength"].shards == group["status"].shards == (1, 1, 1, 3, 20)
    assert cli_in_process("status", str(cube), "--verify").stderr.startswith("verified: ")
    # the edge shard of trials 120..139 was rewritten by the growth (trials 130..139 cleared) and recorded again
    assert json.loads(cli_in_process("status", str(cube), "--json").stdout)["pending"] == 0


def test_an_unsharded_cube_stays_unsharded_when_it_grows_past_the_shard_threshold(made, tmp_path):
    cube = tmp_path / "cube.zarr"
    small = write_config(tmp_path / "small.yaml", **{**SHARDED, "resamples": 20})  # 40 chunks: format 3
    _ok(small, cube)
    _ok(made["configs"]["grown"], cube)  # 3 x 2 x 140 chunks a variable now
    group = zarr.open_group(cube, mode="r")
    assert group.attrs["ordercube_format"] == 3 and group["status"].shards is None
    assert_same_cells(cube, made["folder"] / "grown_plain.zarr")


def test_an_adaptive_run_on_a_sharded_cube_decides_and_stores_what_it_does_unsharded(tmp_path, monkeypatch):
    """The rounds read the status back between looks: the shards held by then are written first."""
    from test_adaptive_run import adaptive_config, records, run, same_cube

    raw = adaptive_config(resamples=80, adaptive={"delta": 0.05, "looks": [20, 40, 60, 80]})
    plain = run(tmp_path, "plain.zarr", {**raw, "execution": {"task_seconds": 0.05, "trials_per_chunk": 20}}, workers=0)
    monkeypatch.setenv("ORDERCUBE_SHARD_CELLS", "40")  # 10 trials of 4 k: 8 shards per (dataset, n, method)
    sharded = run(tmp_path, "sharded.zarr", {**raw, "execution": {"task_seconds": 0.05, "trials_per_chunk": 1}}, workers=0)
    assert zarr.open_group(tmp_path / "sharded.zarr", mode="r")["status"].shards == (1, 1, 1, 4, 10)
    same_cube(sharded, plain)
    assert records(sharded) and (sharded["status"].values == 5).any()  # decided early: some cells skipped
