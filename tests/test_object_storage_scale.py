"""A sharded cube on S3 (moto's server on 127.0.0.1, counting the requests it serves): its objects are exactly
the rule's (:func:`ordercube.pipeline.cube.layout.object_count`), and its cells are stored in fewer writes than
one per chunk. ``benchmarks/bench_object_storage.py`` prints the same figures for larger sweeps."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ORDERCUBE, REPO, STUBS, write_config
from test_engine import assert_same_cells
from test_sharding import PLAIN, SHARDED

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")
sys.path.insert(0, str(REPO / "benchmarks"))
from bench_object_storage import BUCKET, CountingS3  # noqa: E402

from ordercube.pipeline.cube.layout import object_count  # noqa: E402

TIMEOUT = 240
SHAPE, CHUNKS = (1, 2, 1, 3, 130), (1, 1, 1, 3, 1)  # SHARDED's grid: 260 chunks a variable


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    server = CountingS3()
    server.make_bucket()
    server.env["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield server
    server.stop()


def _run(config, out: str, s3: CountingS3, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)]), **s3.env, **env}
    try:
        result = subprocess.run([ORDERCUBE, "run", str(config), "--out", out, "--no-progress", "--workers", "0"],
                                env=full_env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as error:
        raise AssertionError(f"ordercube run did not finish in {TIMEOUT} s: {error.stderr}") from None
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.parametrize("shard_cells", [None, 60])
def test_a_sweep_onto_s3_stores_the_rules_objects_in_fewer_writes_than_chunks(s3, tmp_path, monkeypatch, shard_cells):
    env = {"ORDERCUBE_SHARD_CELLS": str(shard_cells)} if shard_cells else {}
    for name, value in env.items():
        monkeypatch.setenv(name, value)  # object_count reads the shard size the run was given
    config = write_config(tmp_path / "sharded.yaml", **SHARDED)
    prefix = f"{BUCKET}/scale-{shard_cells}/cube.zarr"
    before = s3.snapshot()
    _run(config, f"s3://{prefix}", s3, **env)
    requests = {method: count - before[method] for method, count in s3.snapshot().items()}
    stored = s3.keys(prefix)
    rule = object_count(SHAPE, CHUNKS, 2)
    assert len(stored) == sum(rule.values()), (sorted(stored), rule)
    shards = 1 if shard_cells is None else 2 * 7
    assert rule["cells"] == 5 * shards
    cell_objects = [key for key in stored if key.split("/")[3] in ("lange", "pairwise", "status", "reason", "seconds")
                    and "/c/" in key]
    assert len(cell_objects) == 5 * shards
    print(f"shard of {shard_cells or 'default'} cells: {len(stored)} objects {rule}; requests {requests}")
    # An unsharded cube stores each of its 260 chunks a variable at least once; held shards are written far fewer
    # times (a PUT each, and the metadata's), whatever the shard size.
    assert requests.get("PUT", 0) < int(np.prod(SHAPE)) // 3, requests

    local = tmp_path / "plain.zarr"
    subprocess.run([ORDERCUBE, "run", str(write_config(tmp_path / "plain.yaml", **PLAIN)), "--out", str(local),
                    "--no-progress", "--workers", "0"], check=True, capture_output=True, timeout=TIMEOUT,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)])})
    for name, value in s3.env.items():
        monkeypatch.setenv(name, value)
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()  # one made by another module's test may point at its stopped server
    assert_same_cells(f"s3://{prefix}", local)
