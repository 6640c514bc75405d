"""A real `dask scheduler` and `dask worker` processes on 127.0.0.1, driven through --scheduler-file."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import REPO, STUBS, cli, small_config, write_config
from test_engine import assert_same_cells


@contextmanager
def dask_processes(folder: Path, pythonpath: list[Path]) -> Iterator[Path]:
    """Scheduler and a 2-process worker importing from ``pythonpath``, started as a user would."""
    folder.mkdir(parents=True, exist_ok=True)
    scheduler_file = folder / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath))}
    with open(folder / "scheduler.log", "w") as log:  # a pipe nobody reads could fill and block the process
        scheduler = subprocess.Popen(
            [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(scheduler_file)],
            env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 60
    while not scheduler_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    with open(folder / "worker.log", "w") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "dask", "worker", "--scheduler-file", str(scheduler_file), "--nworkers", "2",
             "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
            env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=log)
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


@pytest.fixture
def dask_cluster(tmp_path):
    """Scheduler and a 2-process worker, started as a user would; stopped after the test."""
    with dask_processes(tmp_path / "cluster", [STUBS, REPO]) as scheduler_file:
        yield scheduler_file


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


def test_workers_with_other_code_are_refused_on_connect_before_anything_is_written(tmp_path):
    """Version skew, for real: the workers import a copy of ordercube whose tasks code differs by one line."""
    skewed = tmp_path / "skewed"
    installed = skewed / "ordercube"  # the layout of an install: pipeline/ and tasks/ inside the ordercube package
    shutil.copytree(REPO / "ordercube", installed, ignore=shutil.ignore_patterns("__pycache__"))
    for package in ("tasks", "pipeline"):
        shutil.copytree(REPO / package, installed / package, ignore=shutil.ignore_patterns("__pycache__"))
    with open(installed / "tasks" / "cell.py", "a") as cell:
        cell.write("# a local edit on the workers' machine\n")
    config = write_config(tmp_path / "c.yaml", **small_config())
    with dask_processes(tmp_path / "cluster", [skewed, STUBS]) as scheduler_file:
        refused = cli("run", str(config), "--out", str(tmp_path / "c.zarr"), "--scheduler-file", str(scheduler_file),
                      "--no-progress")
    assert refused.returncode == 2, refused.stderr
    assert "Traceback" not in refused.stderr and "version skew" in refused.stderr
    assert "has ordercube tasks code" in refused.stderr and "install the same ordercube" in refused.stderr
    assert not (tmp_path / "c.zarr").exists()


def test_a_tls_address_without_tls_settings_exits_2_naming_the_settings(tmp_path):
    config = write_config(tmp_path / "c.yaml", **small_config())
    refused = cli("run", str(config), "--out", str(tmp_path / "c.zarr"), "--scheduler", "tls://127.0.0.1:1",
                  "--no-progress")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert "tls://127.0.0.1:1" in refused.stderr and "DASK_DISTRIBUTED__COMM__TLS__CA_FILE" in refused.stderr
    assert not (tmp_path / "c.zarr").exists()
