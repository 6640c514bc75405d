"""Fault injection with real processes: `kill -9` of a Dask worker, of the driver, of the scheduler, mid-sweep.

Each test disturbs a sweep and then checks that the cube it ends with is bit-identical (all variables but
``seconds``) to the cube of an undisturbed run of the same config.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
import zarr

from conftest import ORDERCUBE, REPO, STUBS, cli, cli_in_process, small_config, write_config
from test_engine import assert_same_cells, run_here, run_ok

# Long enough to be disturbed mid-way (about 4 s of kernels on two local workers), short enough for ~60 s tests;
# 160 chunks a variable, so the cube is not sharded and each chunk lands on disk when its task's result does.
SWEEP = small_config(n=[200, 400], k=[2, 3, 4, 5, 6], resamples=160,
                     execution={"trials_per_chunk": 4, "task_seconds": 0.01})
TOTAL = 2 * 2 * 1 * 5 * 160


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)]), **extra}


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[Path, Path]:
    """The config and the cube of its undisturbed run, computed in this process (where the cells are computed
    never changes them: tests/test_engine.py)."""
    folder = tmp_path_factory.mktemp("undisturbed")
    config = write_config(folder / "sweep.yaml", **SWEEP)
    run_here(config, folder / "undisturbed.zarr")
    return config, folder / "undisturbed.zarr"


def _done(cube: Path) -> int:
    """Cells with a status other than pending (0 while the cube does not exist yet or is being written)."""
    try:
        return int((zarr.open_group(cube, mode="r")["status"][:] != 0).sum())
    except Exception:  # not created yet, or an array read while the driver writes it
        return 0


def _wait_for_cells(cube: Path, at_least: int, process: subprocess.Popen, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = _done(cube)
        if done >= at_least:
            assert done < TOTAL, "the sweep finished before it could be disturbed: make SWEEP longer"
            return done
        assert process.poll() is None, f"the driver exited early ({process.returncode}): {process.communicate()}"
        time.sleep(0.05)
    raise AssertionError(f"the sweep did not reach {at_least} cells in {timeout} s (it has {_done(cube)})")


def _start_run(config: Path, cube: Path, *where: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    """`ordercube run` in its own process group (the driver and, with --workers, its LocalCluster)."""
    return subprocess.Popen([ORDERCUBE, "run", str(config), "--out", str(cube), *where,
                             "--no-progress"], env=env or _env(), start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL a process we started, its process group and every descendant of it; wait until all are gone."""
    try:
        tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for member in tree:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            pass
    process.wait(timeout=30)
    _, alive = psutil.wait_procs(tree, timeout=30)
    assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE], f"still running: {alive}"


@contextmanager
def _dask_processes(folder: Path, **env: str) -> Iterator[tuple[subprocess.Popen, subprocess.Popen, Path]]:
    """`dask scheduler` and a 2-process `dask worker` on 127.0.0.1 (as in test_distributed), killed afterwards."""
    folder.mkdir(parents=True, exist_ok=True)
    scheduler_file = folder / "scheduler.json"
    started: list[subprocess.Popen] = []
    try:
        with open(folder / "scheduler.log", "w") as log:
            started.append(subprocess.Popen(
                [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
                 "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(scheduler_file)],
                env=_env(**env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        with open(folder / "worker.log", "w") as log:
            started.append(subprocess.Popen(
                [sys.executable, "-m", "dask", "worker", "--scheduler-file", str(scheduler_file), "--nworkers", "2",
                 "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
                env=_env(**env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        from distributed import Client

        with Client(scheduler_file=str(scheduler_file), timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        yield started[0], started[1], scheduler_file
    finally:
        for process in reversed(started):
            _kill_tree(process)


def _worker_pids(scheduler_file: Path) -> list[int]:
    from distributed import Client

    with Client(scheduler_file=str(scheduler_file), timeout="30s") as client:
        client.wait_for_workers(2, timeout=60)
        return sorted(client.run(os.getpid).values())


def _kill_when_busy(scheduler_file: Path, pids: list[int], driver: subprocess.Popen, timeout: float = 60) -> int:
    """SIGKILL whichever worker process of ``pids`` the scheduler first shows processing a task; returns its pid.
    (Waiting for one given worker missed the sweep on a quiet machine: its last tasks ran on the other one.)"""
    from distributed import Client

    with Client(scheduler_file=str(scheduler_file), timeout="30s") as client:
        addresses = {p: a for a, p in client.run(os.getpid).items() if p in pids}
        deadline = time.monotonic() + timeout
        while True:
            processing = client.processing(workers=list(addresses.values()))
            busy = [pid for pid, address in addresses.items() if processing.get(address)]
            if busy:
                os.kill(busy[0], signal.SIGKILL)
                return busy[0]
            assert time.monotonic() < deadline, f"workers {sorted(addresses.values())} were given no task in {timeout} s"
            assert driver.poll() is None, f"the driver exited early ({driver.returncode}): {driver.communicate()}"
            time.sleep(0.01)


# Dask's own rescheduling (3 allowed failures) in the slow suite; the default suite keeps ordercube's own path.
@pytest.mark.parametrize("allowed_failures", [pytest.param(3, marks=pytest.mark.slow), 0], ids=["rescheduled", "isolated"])
def test_kill_9_of_a_worker_mid_sweep_ends_with_the_undisturbed_cube(tmp_path, sweep, allowed_failures):
    """Dask's default (3 allowed failures) reschedules the tasks of the dead worker: nothing fails. With 0
    allowed failures the tasks it was running end in KilledWorker: the driver resubmits their cells one
    by one, they compute (the kill was not theirs), and the run still exits 0 with every cell ok.

    The same cells in longer tasks (about 0.2 s each instead of 0.01 s), and the kill waits until the
    scheduler shows a task on the worker: on a loaded machine short tasks leave a worker idle (waiting for
    the driver) so often that the kill could miss every task."""
    _, undisturbed = sweep
    config = write_config(tmp_path / "sweep.yaml", **{**SWEEP, "execution": {"trials_per_chunk": 4, "task_seconds": 0.2}})
    cube = tmp_path / "cube.zarr"
    with _dask_processes(tmp_path / "cluster", DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=str(allowed_failures)) \
            as (_, _, scheduler_file):
        before = _worker_pids(scheduler_file)
        driver = _start_run(config, cube, "--scheduler-file", str(scheduler_file))
        try:
            at_kill = _wait_for_cells(cube, TOTAL // 20, driver)  # early: on a loaded machine the rest can go fast
            killed = _kill_when_busy(scheduler_file, before, driver)
            stdout, stderr = driver.communicate(timeout=90)
        finally:
            _kill_tree(driver)
        assert at_kill < TOTAL and "Traceback" not in stderr, stderr
        after = _worker_pids(scheduler_file)  # the nanny has started a new worker process in place of the dead one
        survivor = next(pid for pid in before if pid != killed)
        assert killed not in after and survivor in after, (before, killed, after)
        counts = json.loads(cli_in_process("status", str(cube), "--json").stdout)
        print(f"worker killed at {at_kill} cells: exit {driver.returncode}, {counts}\n{stdout}\n{stderr}")  # with -s
        assert driver.returncode == 0, stderr
        assert counts == {"total": TOTAL, "ok": TOTAL, "failed": 0, "infeasible": 0, "crashed": 0, "pending": 0, "skipped": 0}
        if not allowed_failures:
            assert re.search(r"\d+ task\(s\) failed as a whole \(a worker died\); their cells were run one by one",
                             stdout), stdout
    assert_same_cells(cube, undisturbed)


@pytest.mark.slow  # one kill -9 of the driver's group and its resume: test_engine.py's interrupt-and-kill test
def test_kill_9_of_the_driver_three_times_then_resume_ends_with_the_undisturbed_cube(tmp_path, sweep):
    """The driver and its LocalCluster are killed (process group, SIGKILL) at three seeded random moments
    after the attempt has written its first cells; no worker outlives its driver; the same command resumes."""
    config, undisturbed = sweep
    cube = tmp_path / "cube.zarr"
    rng = random.Random(20240611)
    progress = []
    for _ in range(3):
        done_before = _done(cube)
        driver = _start_run(config, cube, "--workers", "2")
        try:
            _wait_for_cells(cube, done_before + 1, driver)
            time.sleep(rng.uniform(0.0, 0.8))
            children = psutil.Process(driver.pid).children(recursive=True)
            assert len(children) >= 2, children  # the LocalCluster's worker processes (and their nannies' helpers)
        finally:
            _kill_tree(driver)
        assert driver.returncode == -signal.SIGKILL, "the sweep finished before the kill: make SWEEP longer"
        _, alive = psutil.wait_procs(children, timeout=10)
        assert not [p for p in alive if p.status() != psutil.STATUS_ZOMBIE], f"lingering after the kill: {alive}"
        progress.append(_done(cube))
        print(f"driver killed with {len(children)} descendants; {progress[-1]} cells done")  # shown with -s
    assert progress == sorted(progress) and progress[-1] < TOTAL, progress
    resumed = run_ok(config, cube, "--workers", "2")
    assert f"computing {TOTAL - progress[-1]} of {TOTAL} planned cells" in resumed.stdout, (progress, resumed.stdout)
    assert_same_cells(cube, undisturbed)


def test_kill_9_of_the_scheduler_mid_sweep_exits_cleanly_and_a_fresh_cluster_resumes(tmp_path, sweep):
    config, undisturbed = sweep
    cube = tmp_path / "cube.zarr"
    with _dask_processes(tmp_path / "first") as (scheduler, _, scheduler_file):
        driver = _start_run(config, cube, "--scheduler-file", str(scheduler_file))
        try:
            _wait_for_cells(cube, TOTAL // 6, driver)
            os.kill(scheduler.pid, signal.SIGKILL)
            killed = time.monotonic()
            try:
                _, stderr = driver.communicate(timeout=45)
            except subprocess.TimeoutExpired:
                raise AssertionError("the driver hung for 45 s after the scheduler died") from None
            exited_after = time.monotonic() - killed
        finally:
            _kill_tree(driver)
    assert driver.returncode == 3, (driver.returncode, stderr)
    done = _done(cube)
    print(f"scheduler killed: driver exit {driver.returncode} after {exited_after:.1f} s, {done} cells done\n{stderr}")
    assert 0 < done < TOTAL

    with _dask_processes(tmp_path / "second") as (_, _, scheduler_file):
        resumed = cli("run", str(config), "--out", str(cube), "--scheduler-file", str(scheduler_file), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert f"computing {TOTAL - done} of {TOTAL} planned cells" in resumed.stdout, (done, resumed.stdout)
    assert_same_cells(cube, undisturbed)

    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert "Traceback" not in stderr and len(errors) == 1 and "scheduler" in errors[0], (
        f"exit code {driver.returncode} after {exited_after:.1f} s; stderr ends with:\n" + "\n".join(lines[-5:]))
