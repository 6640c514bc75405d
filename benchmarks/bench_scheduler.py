"""Per-task costs of a sweep on a real `dask scheduler` + `dask worker` cluster, with many small workers.

Starts ``dask scheduler`` and ``dask worker --nworkers N --nthreads 1`` on 127.0.0.1 for each N (2, 8, 16, 32 by
default) and runs a real ordercube sweep through ``scheduler_file=`` with deliberately cheap cells (exact 1-D k-means
at n = 32, k = 2..3, the pairwise criterion: ~1 ms of compute per task), one storage chunk per task. With 32
worker processes on 2 cores the machine is oversubscribed on purpose: compute is negligible, so what is measured is
what every task costs the scheduler, the driver (submission, result handling, the single writer) and the store.

Printed for each N:

- tasks and tasks/s sustained (first task started to last task finished, as the scheduler saw them);
- scheduler CPU per task (the scheduler process's CPU time over that span, divided by the tasks; its inverse
  is the scheduler's ceiling in tasks/s on one core), and its idle CPU per worker (heartbeats);
- driver CPU per task: the slope between two grids (a quarter and the whole), so that imports, connecting
  and creating the cube are not charged to tasks; the window (``execution.max_tasks_in_flight``, default
  4 per worker thread);
- bytes per task: the pickled ``Task`` submitted and the pickled result (``[(Chunk, BlockResult)]``),
  and the result size the scheduler recorded;
- store writes per task: objects put into the cube's store while computing (values, status, reasons, seconds,
  the CRC manifest) per task; on object storage each is one PUT request.

The figures feed docs/explanation/scale.md's model for a thousand workers.

    python benchmarks/bench_scheduler.py            # N = 2, 8, 16, 32; ~2,400 tasks per N
    python benchmarks/bench_scheduler.py --quick    # N = 2, 8, 16; ~600 tasks per N
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve()
PLUGIN = "ordercube-bench-tasks"


# -- run inside the scheduler (this file is its --preload) -------------------------------------------------------

class TaskClock:
    """A scheduler plugin: counts the sweep's tasks and the scheduler's CPU time between the first task started
    and the last one finished."""

    name = PLUGIN

    def __init__(self, scheduler) -> None:
        self.scheduler = scheduler
        self.reset()

    def reset(self) -> None:
        self.tasks = 0
        self.result_bytes = 0
        self.compute = 0.0
        self.first = self.last = None
        self.cpu_first = self.cpu_last = None

    def transition(self, key, start, finish, *args, **kwargs) -> None:
        if not str(key).startswith("('execute_task") and not str(key).startswith("execute_task"):
            return
        if finish == "processing" and self.first is None:
            self.first, self.cpu_first = time.perf_counter(), time.process_time()
        elif finish == "memory":
            self.tasks += 1
            self.last, self.cpu_last = time.perf_counter(), time.process_time()
            self.result_bytes += int(kwargs.get("nbytes") or 0)
            for span in kwargs.get("startstops") or ():
                if span.get("action") == "compute":
                    self.compute += span["stop"] - span["start"]

    def stats(self, comm=None) -> dict:
        return {"tasks": self.tasks, "result_bytes": self.result_bytes, "compute": self.compute,
                "seconds": None if self.last is None else self.last - self.first,
                "cpu": None if self.last is None else self.cpu_last - self.cpu_first,
                "cpu_now": time.process_time(), "workers": len(self.scheduler.workers)}

    def clear(self, comm=None) -> None:
        self.reset()


def dask_setup(scheduler) -> None:
    """The scheduler's preload hook: install the clock and two handlers the bench calls by name."""
    from distributed.diagnostics.plugin import SchedulerPlugin

    clock = type("TaskClockPlugin", (TaskClock, SchedulerPlugin), {})(scheduler)
    scheduler.add_plugin(clock, name=PLUGIN)
    scheduler.handlers["ordercube_bench_stats"] = clock.stats
    scheduler.handlers["ordercube_bench_clear"] = clock.clear


# -- the bench ------------------------------------------------------------------------------------------------

def cheap_config(tasks: int, out: Path) -> dict:
    """A sweep of ``tasks`` tasks of one storage chunk each (1 trial x k = 2, 3) at n = 32: ~1 ms per task."""
    datasets = 4
    return {
        "name": "scheduler_bench", "seed": 31, "n": [32], "k": {"from": 2, "to": 3},
        "resamples": max(1, tasks // datasets), "out": str(out),
        "datasets": [{"name": f"mu{mu}", "kind": "shamir_mixture1d", "params": {"mu": float(mu)}}
                     for mu in range(3, 3 + datasets)],
        "methods": [{"name": "exact", "algorithm": "kmeans_1d_exact", "predictor": "nearest_centroid",
                     "criteria": ["pairwise"]}],
        "execution": {"trials_per_chunk": 1, "task_seconds": 1e-6},
    }


@contextmanager
def dask_processes(folder: Path, workers: int, *, timeout: float = 300) -> Iterator[Path]:
    """``dask scheduler`` (with this file as its preload) and ``dask worker --nworkers N --nthreads 1`` on
    127.0.0.1, started as a user would; stopped (terminate, then kill) on the way out."""
    folder.mkdir(parents=True, exist_ok=True)
    scheduler_file = folder / "scheduler.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")])}
    with open(folder / "scheduler.log", "w") as log:  # a pipe nobody reads could fill and block the process
        scheduler = subprocess.Popen(
            [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0", "--dashboard-address",
             "127.0.0.1:0", "--scheduler-file", str(scheduler_file), "--preload", str(HERE)],
            env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=log)
    with open(folder / "worker.log", "w") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "dask", "worker", "--scheduler-file", str(scheduler_file), "--nworkers",
             str(workers), "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard"],
            env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=log)
    try:
        from distributed import Client

        deadline = time.monotonic() + timeout
        while not scheduler_file.exists():
            if time.monotonic() > deadline or scheduler.poll() is not None:
                raise RuntimeError(f"the scheduler did not start: see {folder / 'scheduler.log'}")
            time.sleep(0.1)
        with Client(scheduler_file=str(scheduler_file), timeout="60s") as client:
            client.wait_for_workers(workers, timeout=timeout)
        yield scheduler_file
    finally:
        for process in (worker, scheduler):
            process.terminate()
        for process in (worker, scheduler):
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class WriterClock:
    """Time spent in the driver's single writer (``BlockWriter.write_merged``: values, status, CRCs, manifest)
    in this process: wall seconds (the writer's occupancy, which bounds the tasks it can store per second) and
    this process's CPU seconds over the same spans."""

    def __init__(self) -> None:
        from ordercube.pipeline.cube.writes import BlockWriter

        self.owner, self.original = BlockWriter, BlockWriter.write_merged
        self.wall = self.cpu = 0.0

    def __enter__(self) -> WriterClock:
        original, clock = self.original, self

        def timed(writer, blocks):
            wall, cpu = time.perf_counter(), time.process_time()
            stored = list(original(writer, blocks))
            clock.wall += time.perf_counter() - wall
            clock.cpu += time.process_time() - cpu
            return iter(stored)

        self.owner.write_merged = timed
        return self

    def __exit__(self, *exc) -> None:
        self.owner.write_merged = self.original


class StorePuts:
    """Counts the objects put into zarr's LocalStore in this process (each is one PUT on object storage), and the
    reads of chunk data (each one GET, whole or ranged)."""

    def __init__(self) -> None:
        from zarr.storage import LocalStore

        self.store, self.original, self.original_get = LocalStore, LocalStore.set, LocalStore.get
        self.data = self.metadata = self.reads = 0

    def __enter__(self) -> StorePuts:
        original, counter = self.original, self

        async def counted(store, key, value, *args, **kwargs):
            if key.endswith("zarr.json"):
                counter.metadata += 1
            else:
                counter.data += 1
            return await original(store, key, value, *args, **kwargs)

        original_get = self.original_get

        async def counted_get(store, key, *args, **kwargs):
            if not key.endswith("zarr.json"):
                counter.reads += 1
            return await original_get(store, key, *args, **kwargs)

        self.store.set, self.store.get = counted, counted_get
        return self

    def __exit__(self, *exc) -> None:
        self.store.set, self.store.get = self.original, self.original_get


def one_sweep(scheduler_file: Path, tasks: int, folder: Path) -> dict:
    """A sweep of about ``tasks`` tasks driven from this process; the driver's CPU and wall, the store's puts,
    and what the scheduler's clock saw."""
    from distributed import Client

    import ordercube

    out = folder / f"cube-{tasks}.zarr"
    shutil.rmtree(out, ignore_errors=True)
    with Client(scheduler_file=str(scheduler_file), timeout="60s") as client:
        client.sync(client.scheduler.ordercube_bench_clear)
        idle0 = client.sync(client.scheduler.ordercube_bench_stats)["cpu_now"]
        time.sleep(2.0)
        idle = (client.sync(client.scheduler.ordercube_bench_stats)["cpu_now"] - idle0) / 2.0
        with StorePuts() as puts, WriterClock() as writer:
            cpu, wall = time.process_time(), time.perf_counter()
            ordercube.sweep(cheap_config(tasks, out), client=client)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        seen = client.sync(client.scheduler.ordercube_bench_stats)
    shutil.rmtree(out, ignore_errors=True)
    return {"driver_cpu": cpu, "wall": wall, "writer_wall": writer.wall, "writer_cpu": writer.cpu,
            "driver_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "puts": puts.data,
            "reads": puts.reads, "metadata_puts": puts.metadata,
            "scheduler_idle_cpu_per_s": idle, **seen}


def payload_bytes() -> tuple[int, int, int]:
    """Pickled sizes (cloudpickle, as Dask sends them) of one task of the cheap sweep and of its result, and the
    cells that task holds; the task is planned by the engine's own functions, as ``ordercube validate`` does."""
    import cloudpickle

    from ordercube.inputs import read_config
    from ordercube.pipeline.run.execute import synthetic_sources
    from ordercube.pipeline.run.graph import execute_task
    from ordercube.pipeline.run.sweep import preview_plan

    with tempfile.TemporaryDirectory() as folder:
        config = read_config(cheap_config(8, Path(folder) / "c.zarr"))
        task = next(iter(preview_plan(config).tasks(2)))
    result = execute_task(task, synthetic_sources(config).get(task.dataset), None)
    return len(cloudpickle.dumps(task)), len(cloudpickle.dumps(result)), task.cells


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 2, 8, 16 and ~600 tasks per N")
    parser.add_argument("--workers", help="comma-separated worker process counts (default 2,8,16,32)")
    parser.add_argument("--tasks", type=int, help="tasks of the larger grid (default 2400; --quick 600)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _stop)  # so that the scheduler and workers are stopped on the way out
    counts = [int(n) for n in (args.workers or ("2,8,16" if args.quick else "2,8,16,32")).split(",")]
    tasks = args.tasks or (600 if args.quick else 2400)
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores; N worker processes oversubscribe them on purpose)")
    task_bytes, result_bytes, cells = payload_bytes()
    print(f"one task: {cells} cells; pickled Task {task_bytes} B submitted, pickled result {result_bytes} B returned")
    rows = []
    with tempfile.TemporaryDirectory(prefix="ordercube-scheduler-") as tmp:
        for n in counts:
            started = time.perf_counter()
            with dask_processes(Path(tmp) / f"cluster-{n}", n) as scheduler_file:
                up = time.perf_counter() - started
                small = one_sweep(scheduler_file, tasks // 4, Path(tmp))
                large = one_sweep(scheduler_file, tasks, Path(tmp))
            row = figures(n, small, large, up)
            rows.append(row)
            print(line(row), flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"task_bytes": task_bytes, "result_bytes": result_bytes,
                                               "cells_per_task": cells, "runs": rows}, indent=1))
    return 0


def _stop(signum, frame) -> None:
    raise SystemExit(128 + signum)


def figures(n: int, small: dict, large: dict, startup: float) -> dict:
    extra = large["tasks"] - small["tasks"]
    return {
        "workers": n, "window": 4 * n, "startup_s": startup, "tasks": large["tasks"],
        "tasks_per_s": large["tasks"] / large["seconds"],
        "scheduler_cpu_ms_per_task": 1e3 * large["cpu"] / large["tasks"],
        "scheduler_net_cpu_ms_per_task": 1e3 * (large["cpu"] - large["scheduler_idle_cpu_per_s"] * large["seconds"])
        / large["tasks"],
        "scheduler_idle_cpu_per_worker_ms_per_s": 1e3 * large["scheduler_idle_cpu_per_s"] / n,
        "driver_cpu_ms_per_task": 1e3 * (large["driver_cpu"] - small["driver_cpu"]) / extra,
        "driver_cpu_ms_per_task_whole": 1e3 * large["driver_cpu"] / large["tasks"],
        "writer_wall_ms_per_task": 1e3 * large["writer_wall"] / large["tasks"],
        "writer_cpu_ms_per_task": 1e3 * large["writer_cpu"] / large["tasks"],
        "driver_peak_mib": large["driver_peak_mib"],
        "compute_ms_per_task": 1e3 * large["compute"] / large["tasks"],
        "result_bytes_per_task": large["result_bytes"] / large["tasks"],
        "puts_per_task": large["puts"] / large["tasks"],
        "reads_per_task": large["reads"] / large["tasks"],
        "metadata_puts": large["metadata_puts"],
        "wall_s": large["wall"],
    }


def net_of_idle(row: dict) -> str:
    """The scheduler's CPU per task less its idle rate over the run, or why not (on a loaded machine the idle
    sample, two seconds, can exceed what the run shows)."""
    net = row["scheduler_net_cpu_ms_per_task"]
    if net <= 0:
        return "net of idle: not measurable, the idle sample exceeds it"
    return f"{net:.2f} net of idle: ceiling ~{1e3 / net:.0f} tasks/s"


def line(row: dict) -> str:
    return (f"N={row['workers']:>2} window={row['window']:>3}: {row['tasks']} tasks, {row['tasks_per_s']:.0f} tasks/s "
            f"(wall {row['wall_s']:.1f} s); scheduler {row['scheduler_cpu_ms_per_task']:.2f} ms CPU/task "
            f"({net_of_idle(row)}), idle "
            f"{row['scheduler_idle_cpu_per_worker_ms_per_s']:.2f} ms/s per worker; driver "
            f"{row['driver_cpu_ms_per_task']:.2f} ms CPU/task (slope; {row['driver_cpu_ms_per_task_whole']:.2f} whole), "
            f"writing {row['writer_wall_ms_per_task']:.2f} ms wall "
            f"({row['writer_cpu_ms_per_task']:.2f} ms process CPU meanwhile), "
            f"peak RSS {row['driver_peak_mib']:.0f} MiB; "
            f"compute {row['compute_ms_per_task']:.2f} ms/task; result {row['result_bytes_per_task']:.0f} B/task "
            f"(scheduler's estimate); store: {row['puts_per_task']:.1f} puts/task, {row['reads_per_task']:.1f} reads/task")


if __name__ == "__main__":
    sys.exit(main())
