"""Running a sweep: connect to Dask, submit tasks through a bounded window, persist as results arrive.

The driver (this process) is the cube's only writer. At most ``max_tasks_in_flight`` tasks exist at
any time, so the driver's memory stays flat in the grid size; each finished task is written before
the next result is read, so a crash loses at most the tasks in flight. Resuming reads the cube alone.
"""

from __future__ import annotations

import errno
import time
from asyncio import CancelledError
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import zarr
from distributed import Client, as_completed
from distributed.client import FutureCancelledError
from distributed.comm.core import CommClosedError

from pipeline.cluster import (
    CONNECT_TIMEOUT, DEFAULT_DASHBOARD, WAIT_FOR_WORKERS, NoWorkers, WorkerWatch, check_dashboard_free, connect,
    dashboard_line, scheduler_address, stderr_line,
)
from pipeline.config import Config, MethodSpec
from pipeline.integrity import record_unrecorded
from pipeline.location import location
from pipeline.lock import CubeLock, describe_stale
from pipeline.graph import Task, build_tasks, execute_task, isolate
from pipeline.grid import (
    Chunk, Coords, chunks_to_compute, config_coords, default_chunks, group_into_tasks, merge_coords, plan_of,
    planned_mask,
)
from pipeline.progress import SweepProgress
from pipeline.store import (
    BASELINE, array, check_new_cube_path, create, is_cube, merge_blocks, open_existing, open_for_run, stored_chunk_shape,
    status_for_planning, stored_coords, writable_arrays, write_block,
)
from tasks.algorithms import get_algorithm
from tasks.cell import BlockResult, Status, describe
from tasks.criteria import get_criterion
from tasks.criteria.stability import random_labeling_disagreement
from tasks.datasets import SyntheticSource
from tasks.seeding import Purpose, stream


class Interrupted(Exception):
    """The sweep was stopped by the user (Ctrl-C or SIGTERM); what arrived is on disk."""


class ClusterLost(Exception):
    """The connection to the Dask scheduler was lost mid-sweep; what arrived is on disk."""


class DiskFull(Exception):
    """Writing the cube failed for want of space (ENOSPC, EDQUOT) or a file size limit (EFBIG).

    Every block written before is on disk: zarr writes a chunk to a temp file and renames it, so the
    failed write left at most a temp file, which the next run removes."""

    def __init__(self, error: OSError) -> None:
        self.error = error
        super().__init__(f"{error.strerror or error} ({errno.errorcode.get(error.errno or 0, error.errno)}"
                         f"{', ' + str(error.filename) if error.filename else ''})")


DISK_FULL = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


__all__ = ["ClusterLost", "DiskFull", "Interrupted", "NoWorkers", "connect", "run_sweep"]


@dataclass(frozen=True)
class Plan:
    """The cells a config still needs on a cube, chunk by chunk, before they are grouped into tasks."""

    config: Config
    coords: Coords
    chunk_shape: dict[str, int]
    planned_cells: int
    chunks: list[Chunk]

    @property
    def cells_to_compute(self) -> int:
        return sum(chunk.cells for chunk in self.chunks)

    def tasks(self, workers: int) -> list[Task]:
        seconds_per_point = {m.name: get_algorithm(m.algorithm).seconds_per_point * fit_work(m) for m in self.config.methods}
        groups = group_into_tasks(self.chunks, self.coords, seconds_per_point=seconds_per_point,
                                  task_seconds=self.config.execution.task_seconds, workers=workers)
        return build_tasks(self.config, self.coords, groups)


@dataclass(frozen=True)
class Summary:
    computed: int
    failed: int
    infeasible: int
    seconds: float
    crashed: int = 0
    isolated_tasks: int = 0


def make_plan(config: Config, coords: Coords, chunk_shape: dict[str, int], status: np.ndarray, *,
              retry_failed: bool = False) -> Plan:
    mask = planned_mask(plan_of(config), coords)
    todo = status == Status.PENDING
    if retry_failed:
        todo |= (status == Status.FAILED) | (status == Status.CRASHED)
    return Plan(config=config, coords=coords, chunk_shape=chunk_shape, planned_cells=int(mask.sum()),
                chunks=list(chunks_to_compute(mask, todo, chunk_shape)))


def preview_plan(config: Config) -> Plan:
    """What ``run`` would compute, without writing anything (``ordercube validate``).

    Against the existing cube at ``config.out`` when there is one (checking that it may be extended),
    else against a fresh cube.
    """
    path = location(config.out)
    if not is_cube(path):
        coords = config_coords(config)
        return make_plan(config, coords, default_chunks(config), np.zeros(coords.shape, dtype=np.int8))
    group = open_existing(path, config)
    stored = stored_coords(group)
    coords = merge_coords(stored, config_coords(config))
    status = np.zeros(coords.shape, dtype=np.int8)
    status[tuple(slice(0, size) for size in stored.shape)] = status_for_planning(group, path)[0]
    return make_plan(config, coords, stored_chunk_shape(group), status)


def fill_baseline(group: zarr.Group, config: Config, coords: Coords) -> int:
    """Estimate the random-labeling baseline for every planned (n, k) that lacks it; returns how many.

    One estimate per (n, k), from its own stream, reused by every dataset, method and trial.
    """
    if not any(get_criterion(name).normalised_by_random_labels for name in config.criteria):
        return 0
    baseline = np.asarray(array(group, BASELINE)[:])
    wanted_n = {n for d in config.datasets for n in d.n}
    filled = 0
    for i, n in enumerate(coords.n):
        for j, k in enumerate(coords.k):
            if n in wanted_n and k in config.k and np.isnan(baseline[i, j]):
                rng = stream(config.seed, Purpose.BASELINE, n, k)
                baseline[i, j] = random_labeling_disagreement(n // 2, k, rng, draws=config.baseline_draws)
                filled += 1
    if filled:
        array(group, BASELINE)[:] = baseline
    return filled


def run_sweep(config: Config, **options: Any) -> Summary:
    """Compute every planned cell of ``config`` that its cube lacks (see the module docstring).

    The cube is locked for the whole run (:class:`pipeline.lock.CubeLock`): a second writer is refused.
    ``options`` are those of :func:`_sweep_locked`.
    """
    path = location(config.out)
    if options.get("scheduler") or options.get("scheduler_file"):  # a bad address is refused before the cube changes
        scheduler_address(scheduler=options.get("scheduler"), scheduler_file=options.get("scheduler_file"),
                          timeout=options.get("connect_timeout", CONNECT_TIMEOUT))
    else:  # a given dashboard port that is taken is refused before the cube changes too
        check_dashboard_free(options.get("dashboard_address", DEFAULT_DASHBOARD))
    if not is_cube(path):
        check_new_cube_path(path)
        if path.is_local:
            path.local().parent.mkdir(parents=True, exist_ok=True)
    with CubeLock(path) as lock:
        if lock.stale:
            options.get("echo", print)(describe_stale(lock.stale))
        return _sweep_locked(config, **options)


def _sweep_locked(
    config: Config,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    scheduler_file: str | None = None,
    retry_failed: bool = False,
    echo: Callable[[str], None] = print,
    show_progress: bool = True,
    connect_timeout: float = CONNECT_TIMEOUT,
    wait_for_workers: float = WAIT_FOR_WORKERS,
    notify: Callable[[str], None] = stderr_line,
    dashboard_address: str | None = DEFAULT_DASHBOARD,
    client: Client | None = None,
) -> Summary:
    """The body of :func:`run_sweep`, its caller holding the cube's lock. A ``client`` given is used
    instead of connecting (``workers``, ``scheduler`` and ``scheduler_file`` are then unused) and left open."""
    path = location(config.out)
    if is_cube(path):
        group, coords, notes = open_for_run(path, config, config_coords(config))
        for note in notes:
            echo(note)
        status, lost = status_for_planning(group, path)
        if lost.count:
            echo(f"{lost.describe()}; computing them again")
        if lost.unrecorded:  # chunks a crash left out of the manifest: recorded now, to be checked from here on
            record_unrecorded(group, lost.unrecorded)
        plan = make_plan(config, coords, stored_chunk_shape(group), status, retry_failed=retry_failed)
        fill_baseline(group, config, coords)
        if not plan.chunks:
            echo(f"nothing to compute: all {plan.planned_cells} planned cells of {path} are already in the cube")
            return Summary(0, 0, 0, 0.0)
        open_cube_for_writing = lambda: group  # noqa: E731
    else:
        check_new_cube_path(path)
        coords = config_coords(config)
        plan = make_plan(config, coords, default_chunks(config), np.zeros(coords.shape, dtype=np.int8))

        def open_cube_for_writing() -> zarr.Group:
            return create(path, config, coords, default_chunks(config),
                          prepare=lambda group: fill_baseline(group, config, coords))

    with connect(workers=workers, scheduler=scheduler, scheduler_file=scheduler_file,
                 connect_timeout=connect_timeout, dashboard_address=dashboard_address, client=client) as connected:
        watch = WorkerWatch(connected, patience=wait_for_workers, notify=notify, owned=client is None)
        threads = watch.wait()  # tasks are sized for the threads there are: wait for the first worker
        tasks = plan.tasks(workers=threads)
        echo(f"computing {plan.cells_to_compute} of {plan.planned_cells} planned cells in {len(tasks)} tasks -> {path}")
        if line := dashboard_line(connected, dashboard_address):
            echo(line)
        return _submit_and_store(connected, config, tasks, open_cube_for_writing, threads=threads,
                                 show_progress=show_progress, watch=watch)


def fit_work(method: MethodSpec) -> float:
    """How many times the halves' fits a trial of ``method`` costs, with the fits its criteria add."""
    return 1.0 + sum(get_criterion(name).extra_fits(method.criterion_options.get(name, get_criterion(name).options))
                     for name in method.criteria)


def failed_results(task: Task, error: BaseException) -> list[tuple[Chunk, BlockResult]]:
    """Every cell of ``task`` recorded with the reason the task itself failed: as crashed when its worker
    process died under it (Dask's KilledWorker), else as failed (a result that could not be sent, ...).
    The driver sends only single cells here (see :func:`pipeline.graph.isolate`)."""
    crashed = _killed_worker(error)
    reason = f"{'crashed' if crashed else 'task failed'}: {describe(error)}"
    results = []
    for chunk, spec in task.blocks:
        shape = (len(chunk.k), len(chunk.trial))
        results.append((chunk, BlockResult(values={name: np.full(shape, np.nan) for name in spec.variables},
                                           status=np.full(shape, Status.CRASHED if crashed else Status.FAILED,
                                                          dtype=np.int8),
                                           reason=np.full(shape, reason, dtype=object), seconds=np.zeros(shape))))
    return results


def _batches(futures: as_completed, watch: WorkerWatch, *, idle: float = 5.0) -> Iterator[list]:
    """``futures.batches()``, but after every ``idle`` seconds without a result ``watch`` checks that there
    are workers to compute them (it tells the user, restarts lost local workers, or gives up)."""
    while True:
        batch = futures.next_batch(block=False)
        if batch:
            watch.progress()
            yield batch
            continue
        if futures.is_empty():
            return
        with futures.thread_condition:  # a result that arrives after has_ready() notifies this condition
            if not futures.has_ready():
                futures.thread_condition.wait(timeout=idle)
        if not futures.has_ready():
            watch.check()


def _allowed_failures(dask_scheduler) -> int:
    """How many worker deaths the scheduler forgives a task (``distributed.scheduler.allowed-failures``)."""
    return int(dask_scheduler.allowed_failures)


def _killed_worker(error: BaseException) -> bool:
    return type(error).__name__ == "KilledWorker"


def _submit_and_store(client: Client, config: Config, tasks: list[Task], open_cube_for_writing: Callable[[], zarr.Group],
                      *, threads: int, show_progress: bool, watch: WorkerWatch) -> Summary:
    """Submit through the window and write results as they arrive.

    The cube is opened (a new one created) after the first window is submitted, so that creating it
    overlaps the first tasks: for a small sweep, creation costs as much as the computation.
    """
    started = time.perf_counter()
    window = config.execution.max_tasks_in_flight or 4 * threads
    needed = {task.dataset for task in tasks}
    arrays = {d.name: client.scatter(d.data, broadcast=True) for d in config.datasets
              if d.data is not None and d.name in needed}
    labels = {d.name: client.scatter(d.labels, broadcast=True) for d in config.datasets
              if d.labels is not None and d.name in needed}
    synthetic = {d.name: SyntheticSource(d.kind, dict(d.params)) for d in config.datasets if d.data is None}
    pending = iter(tasks)
    isolated: deque[Task] = deque()  # cells of a task that failed as a whole, resubmitted one by one first
    futures = as_completed()
    in_flight: dict = {}

    isolating: set = set()  # the isolated cell in flight: they run one at a time, so no two crashers meet

    def submit_next() -> None:
        alone = bool(isolated) and not isolating
        task = isolated.popleft() if alone else next(pending, None)
        if task is not None:
            future = client.submit(execute_task, task, synthetic.get(task.dataset), arrays.get(task.dataset),
                                   labels.get(task.dataset), pure=False)
            in_flight[future] = task
            futures.add(future)
            if alone:
                isolating.add(future)

    counts = {Status.OK: 0, Status.FAILED: 0, Status.INFEASIBLE: 0, Status.CRASHED: 0}
    isolated_tasks = 0
    struck: set[Chunk] = set()
    # Without retries on the scheduler (allowed-failures 0), a cell queued on a worker when another cell
    # killed it fails with it: then a cell gets a second run of its own before it is called crashed.
    second_chance = client.run_on_scheduler(_allowed_failures) == 0
    with SweepProgress(sum(task.cells for task in tasks), enabled=show_progress) as progress:
        try:
            for _ in range(window):
                submit_next()
            cube_arrays = writable_arrays(open_cube_for_writing())
            # Whatever has finished while the driver was writing arrives as one batch, and pieces of the
            # same storage chunk are written together: at small n the writes, not the kernels, set the pace.
            for batch in _batches(futures, watch):
                done = []
                for future in batch:
                    task = in_flight.pop(future)
                    isolating.discard(future)
                    try:  # a 'finished' future can still fail here: its result died with a worker before it was sent
                        done.extend(future.result())
                        continue
                    except (CommClosedError, ConnectionError, FutureCancelledError, CancelledError):
                        raise
                    except Exception as error:  # the task failed as a whole
                        failure = error
                    if task.cells > 1:  # find the cell that broke it: the others are computed
                        isolated.extend(isolate(task))
                        isolated_tasks += 1
                    elif second_chance and _killed_worker(failure) and task.blocks[0][0] not in struck:
                        struck.add(task.blocks[0][0])
                        isolated.append(task)
                    else:
                        done.extend(failed_results(task, failure))
                for chunk, result in merge_blocks(done):
                    write_block(cube_arrays, chunk, result)
                    for code in counts:
                        counts[code] += int((result.status == code).sum())
                    progress.advance(chunk.cells, failed=int(((result.status == Status.FAILED)
                                                              | (result.status == Status.CRASHED)).sum()))
                for future in batch:
                    future.release()
                    submit_next()
        except (CommClosedError, ConnectionError, FutureCancelledError, CancelledError) as error:
            raise ClusterLost(describe(error)) from None
        except (KeyboardInterrupt, NoWorkers, OSError) as error:
            futures.clear()
            client.cancel(list(in_flight), force=True)
            if isinstance(error, KeyboardInterrupt):
                raise Interrupted() from None
            if isinstance(error, OSError) and error.errno in DISK_FULL:
                raise DiskFull(error) from None
            raise
    return Summary(computed=sum(counts.values()), failed=counts[Status.FAILED],
                   infeasible=counts[Status.INFEASIBLE], seconds=time.perf_counter() - started,
                   crashed=counts[Status.CRASHED], isolated_tasks=isolated_tasks)
