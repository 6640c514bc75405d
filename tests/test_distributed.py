"""A real `dask scheduler` and `dask worker` processes on 127.0.0.1, driven through --scheduler-file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import REPO, STUBS, cli, small_config, write_config
from test_engine import assert_same_cells


@pytest.fixture
def dask_cluster(tmp_path):
    """Scheduler and a 2-process worker, started as a user would; stopped after the test."""
    scheduler_file = tmp_path / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)])}
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
         "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(scheduler_file)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not scheduler_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    worker = subprocess.Popen(
        [sys.executable, "-m", "dask", "worker", "--scheduler-file", str(scheduler_file), "--nworkers", "2",
         "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        from distributed import Client

        with Client(scheduler_file=str(scheduler_file), timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
            dashboard = client.dashboard_link
        assert urllib.request.urlopen(dashboard.replace("/status", "/health"), timeout=10).read() == b"ok"
        yield scheduler_file
    finally:
        for process in (worker, scheduler):
            process.terminate()
        for process in (worker, scheduler):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def test_sweep_through_a_running_scheduler_equals_the_local_cluster(tmp_path, dask_cluster):
    config = write_config(tmp_path / "c.yaml", **small_config())
    remote = cli("run", str(config), "--out", str(tmp_path / "remote.zarr"), "--scheduler-file", str(dask_cluster),
                 "--no-progress")
    assert remote.returncode == 0, remote.stderr
    assert "dask dashboard: http://127.0.0.1:" in remote.stdout
    local = cli("run", str(config), "--out", str(tmp_path / "local.zarr"), "--workers", "1", "--no-progress")
    assert local.returncode == 0, local.stderr
    assert_same_cells(tmp_path / "remote.zarr", tmp_path / "local.zarr")

    address = json.loads(dask_cluster.read_text())["address"]
    by_address = cli("run", str(config), "--out", str(tmp_path / "address.zarr"), "--scheduler", address, "--no-progress")
    assert by_address.returncode == 0, by_address.stderr
    assert_same_cells(tmp_path / "address.zarr", tmp_path / "local.zarr")
