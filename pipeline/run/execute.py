"""Computing planned tasks and storing their results: what a sweep's two executors share, and the one
that runs in this process.

Where the work runs is decided by :func:`ordercube.pipeline.run.sweep.where_to_compute`: a small sweep, or one whose
kernels release the GIL and so share the cores among threads, costs less in the driver than a
LocalCluster costs to start, stop and warm up (2.5-3 s here); the rest is sent to Dask
(:mod:`ordercube.pipeline.run.on_cluster`). Both give the same cube bit for bit: a cell's value depends only on its
coordinates and the seed, and BLAS is held to one thread here as Dask's nanny holds it in a worker.
"""

from __future__ import annotations

import errno
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any
from dataclasses import dataclass, field, replace

import numpy as np

from ordercube.pipeline.system import interrupts
from ordercube.pipeline.config.specs import Config
from ordercube.pipeline.cube.owner import BlockWriter, Cube
from ordercube.pipeline.run.graph import Computed, Task, execute_task, isolate
from ordercube.pipeline.cube.grid import Chunk
from ordercube.pipeline.data.matrixfiles import matrix_source
from ordercube.pipeline.run.progress import SweepProgress
from ordercube.pipeline.run.rounds import Feed
from ordercube.tasks.cell import BlockResult, Status, describe, variables_of
from ordercube.tasks.datasets import SyntheticSource
from ordercube.tasks.datasets.matrices import MATRIX_KINDS, MatrixSource


class Interrupted(Exception):
    """The sweep was stopped by the user (Ctrl-C or SIGTERM); what arrived is on disk."""


class ClusterLost(Exception):
    """A connection to the Dask cluster was lost mid-sweep (the scheduler's, or one to a worker that distributed
    did not make again); what arrived is on disk."""


class DiskFull(Exception):
    """Writing the cube failed for want of space (ENOSPC, EDQUOT) or a file size limit (EFBIG).

    Every block written before is on disk: zarr writes a chunk to a temp file and renames it, so the
    failed write left at most a temp file, which the next run removes."""

    def __init__(self, error: OSError) -> None:
        self.error = error
        super().__init__(f"{error.strerror or error} ({errno.errorcode.get(error.errno or 0, error.errno)}"
                         f"{', ' + str(error.filename) if error.filename else ''})")


DISK_FULL = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}
REASONS_SHOWN = 3  # a run's summary names this many of its failed cells' most frequent reasons


class StoreFailed(Exception):
    """Writing the cube failed otherwise: an object store's error after its client's own retries (botocore: 503
    SlowDown, 500 and timeouts retried up to 4 times with backoff), an I/O error of a disk.

    Every block written before is kept: a chunk's values are written before its status, so a cell is never marked
    done without them, and a resume computes what is missing."""

    def __init__(self, error: OSError) -> None:
        self.error = error
        super().__init__(" ".join(str(error).split())[:300] or type(error).__name__)


def write_stopped(error: OSError) -> DiskFull | StoreFailed:
    """What stops a sweep whose cube could not be written: :class:`DiskFull` for a full disk or a file size limit,
    :class:`StoreFailed` for any other failure to write."""
    return DiskFull(error) if error.errno in DISK_FULL else StoreFailed(error)


@dataclass(frozen=True)
class Summary:
    """What a sweep did: its cells by outcome, its wall ``seconds``, and where the time of its ``tasks`` went.

    ``kernel_seconds``: the cells' own seconds (the cube's ``seconds``: the kernels); ``bookkeeping_seconds``: the
    tasks' wall on their workers beyond their kernels (the source built, run_block's gathering);
    ``write_seconds``: the driver's stores of the results (values, status, CRCs, manifest); ``driver_seconds``:
    the driver's other work while it was not waiting for a result (planning, the cube's creation, submitting).
    """

    computed: int
    failed: int
    infeasible: int
    seconds: float
    crashed: int = 0
    isolated_tasks: int = 0
    skipped: int = 0
    tasks: int = 0
    kernel_seconds: float = 0.0
    bookkeeping_seconds: float = 0.0
    write_seconds: float = 0.0
    driver_seconds: float = 0.0
    reasons: tuple[tuple[str, int], ...] = ()  # the failed or crashed cells' most frequent reasons, with their counts

    @property
    def overhead_seconds(self) -> float:
        """The engine's time beyond the kernels: bookkeeping, writes and driver."""
        return self.bookkeeping_seconds + self.write_seconds + self.driver_seconds

    @property
    def overhead_share(self) -> float:
        """The engine's overhead as a share of compute (the kernels' seconds); NaN without kernel time."""
        return self.overhead_seconds / self.kernel_seconds if self.kernel_seconds > 0 else float("nan")

    def with_driver(self, seconds: float) -> Summary:
        """This summary with ``seconds`` more of the driver's own work (the planning before the executor)."""
        return replace(self, driver_seconds=self.driver_seconds + seconds)


@dataclass(frozen=True)
class Head:
    """What a run brings to its executor before the first task: the pilot's results (stored first: real cells,
    :mod:`ordercube.pipeline.run.estimate`) and what seeds the progress bar's ETA (``estimate``: the executor's
    seconds; ``weight``: a chunk's modelled seconds, ``work`` their total)."""

    ready: list[tuple[Chunk, BlockResult]] = field(default_factory=list)
    estimate: float | None = None
    weight: Callable[[Chunk], float] | None = None
    work: float | None = None

    def progress(self, total: int, *, enabled: bool) -> SweepProgress:
        cells = sum(chunk.cells for chunk, _ in self.ready)
        return SweepProgress(total + cells, enabled=enabled, estimate=self.estimate, weight=self.weight,
                             work=self.work)

    def store(self, tally: Tally, cube_arrays: BlockWriter) -> None:
        if self.ready:
            tally.kernel += float(sum(result.seconds.sum() for _, result in self.ready))
            tally.store(cube_arrays, self.ready)


class Tally:
    """Writes merged blocks into the cube, counts their cells by status and advances the progress bar, and adds
    up where the time went (:class:`Summary`): the tasks' kernel and worker seconds as they arrive
    (:meth:`computed`), the writes' as they are made, the waits for results (:meth:`waiting`)."""

    def __init__(self, progress: SweepProgress) -> None:
        self.progress = progress
        self.counts = {Status.OK: 0, Status.FAILED: 0, Status.INFEASIBLE: 0, Status.CRASHED: 0}
        self.skipped = 0
        self.isolated_tasks = 0
        self.started = time.perf_counter()
        self.tasks = 0
        self.kernel = 0.0
        self.worker = 0.0
        self.writes = 0.0
        self.waited = 0.0
        self._lock = threading.Lock()  # compute threads count the tasks they cut up
        self.reasons: Counter[str] = Counter()  # of the failed and crashed cells

    def count_isolated(self) -> None:
        with self._lock:
            self.isolated_tasks += 1

    def computed(self, results: list[tuple[Chunk, BlockResult]]) -> None:
        """Count one task's time: its cells' kernel seconds and its wall on the worker (a :class:`Computed`)."""
        self.tasks += 1
        self.kernel += float(sum(result.seconds.sum() for _, result in results))
        self.worker += getattr(results, "wall", 0.0)

    def waiting(self, seconds: float) -> None:
        """The driver waited ``seconds`` for results: not its own work."""
        self.waited += seconds

    def store(self, cube_arrays: BlockWriter, done: Iterable[tuple[Chunk, BlockResult]]) -> None:
        """Write ``done`` (:class:`DiskFull` or :class:`StoreFailed` when the cube cannot be written: said here, at
        the write, so that a connection's OSError elsewhere is never taken for the store's)."""
        try:
            self._store(cube_arrays, done)
        except OSError as error:
            raise write_stopped(error) from None

    def _store(self, cube_arrays: BlockWriter, done: Iterable[tuple[Chunk, BlockResult]]) -> None:
        # Pieces of the same storage chunk are written together: at small n the writes set the pace.
        started = time.perf_counter()
        for chunk, result in cube_arrays.write_merged(done):
            for code in self.counts:
                self.counts[code] += int((result.status == code).sum())
            broken = (result.status == Status.FAILED) | (result.status == Status.CRASHED)
            if broken.any():
                self.reasons.update(str(reason) for reason in result.reason[broken])
            self.progress.advance(chunk.cells, failed=int(broken.sum()), chunk=chunk)
        self.writes += time.perf_counter() - started

    def skip(self, cells: int) -> None:
        """Cells the adaptive rule stored as skipped (ordercube.pipeline.run.rounds): done, without computing."""
        self.skipped += cells
        self.progress.advance(cells, failed=0)

    def summary(self) -> Summary:
        counts = self.counts
        seconds = time.perf_counter() - self.started
        return Summary(computed=sum(counts.values()), failed=counts[Status.FAILED],
                       infeasible=counts[Status.INFEASIBLE], seconds=seconds,
                       crashed=counts[Status.CRASHED], isolated_tasks=self.isolated_tasks, skipped=self.skipped,
                       tasks=self.tasks, kernel_seconds=self.kernel,
                       bookkeeping_seconds=max(self.worker - self.kernel, 0.0), write_seconds=self.writes,
                       driver_seconds=max(seconds - self.waited - self.writes, 0.0),
                       reasons=tuple(self.reasons.most_common(REASONS_SHOWN)))


def failed_results(task: Task, error: BaseException) -> list[tuple[Chunk, BlockResult]]:
    """Every cell of ``task`` recorded with the reason the task itself failed: as crashed when its worker
    process died under it (Dask's KilledWorker), else as failed (a result that could not be sent, ...).
    Only the pieces of :func:`ordercube.pipeline.run.graph.isolate` come here: one cell, or one trial of an algorithm
    that fits every k at once."""
    crashed = killed_worker(error)
    reason = f"{'crashed' if crashed else 'task failed'}: {describe(error)}"
    results = []
    for chunk, spec in task.blocks:
        shape = (len(chunk.k), len(chunk.trial))
        results.append((chunk, BlockResult(values={name: np.full(shape, np.nan) for name in variables_of(spec)},
                                           status=np.full(shape, Status.CRASHED if crashed else Status.FAILED,
                                                          dtype=np.int8),
                                           reason=np.full(shape, reason, dtype=object), seconds=np.zeros(shape))))
    return results


def killed_worker(error: BaseException) -> bool:
    return type(error).__name__ == "KilledWorker"


def synthetic_sources(config: Config) -> dict[str, SyntheticSource | MatrixSource]:
    """The generator of every synthetic dataset, by name (file and in-memory datasets carry arrays), and the trial
    recipe of every matrix dataset (its noise and split; its clean matrix travels as the dataset's array)."""
    sources: dict[str, SyntheticSource | MatrixSource] = {
        d.name: SyntheticSource(d.kind, dict(d.params)) for d in config.datasets if d.data is None}
    sources.update({d.name: matrix_source(d.kind, None, d.params) for d in config.datasets if d.kind in MATRIX_KINDS})
    return sources


def task_inputs(config: Config) -> Callable[[Task], tuple[SyntheticSource | MatrixSource | None, Any, Any]]:
    """``inputs(task)`` → what :func:`ordercube.pipeline.run.graph.execute_task` takes besides the task: the
    generator of its synthetic dataset (None for a file or in-memory one), the dataset's array and its labels."""
    synthetic = synthetic_sources(config)
    datasets = {d.name: d for d in config.datasets}

    def inputs(task: Task) -> tuple[SyntheticSource | MatrixSource | None, Any, Any]:
        dataset = datasets[task.dataset]
        return synthetic.get(task.dataset), dataset.data, dataset.labels

    return inputs


def compute_here(config: Config, feed: Feed, open_cube_for_writing: Callable[[], Cube], *,
                 show_progress: bool, threads: int = 1, head: Head | None = None) -> Summary:
    """Run every task of ``feed`` in this process on ``threads`` threads, writing each result as it finishes
    (an adaptive feed hands out a group's next round once its results are stored: ordercube.pipeline.run.rounds).

    The compiled kernels release the GIL (numba ``nogil``, scikit-learn's and numpy's loops), so threads
    use the cores without a cluster's start, stop and warm-up; the driver's thread alone writes the cube.
    A task that raises as a whole (run_block records a cell's own errors as failed cells, so this is
    rare: memory, a plugin's bug) is rerun cell by cell, as on a cluster, and the cells that still
    raise are recorded as failed. Ctrl-C stops once the tasks being computed end; what was written stays.
    """
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    from threadpoolctl import threadpool_limits

    inputs = task_inputs(config)

    def compute(task: Task, tally: Tally) -> list[tuple[Chunk, BlockResult]]:
        return _computed(task, *inputs(task), tally)

    head = head or Head()
    with head.progress(feed.total, enabled=show_progress) as progress, \
            threadpool_limits(limits=1), ThreadPoolExecutor(max_workers=threads) as pool:
        # BLAS held to one thread, as Dask's nanny does for a worker: the same BLAS, the same bits
        tally = Tally(progress)
        running: set = set()
        try:
            running = {pool.submit(compute, task, tally) for task in feed.take(2 * threads)}
            cube_arrays = open_cube_for_writing().writer()  # while the first tasks compute
            head.store(tally, cube_arrays)
            tally.skip(feed.stored([]))
            while running:
                interrupts.check()
                waiting = time.perf_counter()
                finished, running = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
                tally.waiting(time.perf_counter() - waiting)
                done = []
                for future in finished:
                    results = future.result()
                    tally.computed(results)
                    done.extend(results)
                tally.store(cube_arrays, done)
                tally.skip(feed.stored(done))
                running |= {pool.submit(compute, task, tally) for task in feed.take(2 * threads - len(running))}
        except KeyboardInterrupt:
            for future in running:
                future.cancel()
            raise Interrupted() from None
        except OSError as error:
            raise write_stopped(error) from None
    return tally.summary()


def _computed(task: Task, synthetic: SyntheticSource | None, data: np.ndarray | None, labels: np.ndarray | None,
              tally: Tally, *, whole: bool = True) -> list[tuple[Chunk, BlockResult]]:
    try:
        return execute_task(task, synthetic, data, labels)
    except Exception as error:  # the task failed as a whole
        if not whole:
            return failed_results(task, error)
    tally.count_isolated()
    pieces = [_computed(piece, synthetic, data, labels, tally, whole=False) for piece in isolate(task)]
    computed = Computed(result for piece in pieces for result in piece)
    computed.wall = sum(getattr(piece, "wall", 0.0) for piece in pieces)
    return computed


def piece_computer(config: Config, coords: Any) -> Callable[[Chunk], list[tuple[Chunk, BlockResult]]]:
    """A function computing one chunk of ``config`` in this process, BLAS held to one thread as in
    :func:`compute_here` (the same bits): the pilot's (:mod:`ordercube.pipeline.run.estimate`)."""
    from threadpoolctl import threadpool_limits

    from ordercube.pipeline.run.graph import build_tasks

    inputs = task_inputs(config)

    def compute(piece: Chunk, *, warm_up: bool = False) -> list[tuple[Chunk, BlockResult]]:
        """The piece's results; ``warm_up``: the same cells at a small n instead, to be thrown away (the
        process's first calls of the method's kernels: imports, numba's cache)."""
        task = build_tasks(config, coords, [[piece]])[0]
        if warm_up:
            task = replace(task, blocks=tuple((chunk, replace(spec, n=min(spec.n, max(40, 4 * max(spec.ks)))))
                                              for chunk, spec in task.blocks))
        with threadpool_limits(limits=1):
            return execute_task(task, *inputs(task))

    return compute
