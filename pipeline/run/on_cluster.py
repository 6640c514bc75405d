"""The Dask executor of a sweep: tasks submitted through a bounded window, results written as they arrive.

At most ``max_tasks_in_flight`` tasks exist at any time, so the driver's memory stays flat in the grid
size; each finished task is written before the next result is read, so a crash loses at most the tasks
in flight. A task that fails as a whole (its worker died) is cut into single cells, run one at a time,
so that the cell that kills its worker every time is recorded as crashed and every other one computed.
"""

from __future__ import annotations

import time
from asyncio import CancelledError
from collections import deque
from collections.abc import Callable, Iterator

from distributed import Client, as_completed, span
from distributed.client import FutureCancelledError
from distributed.comm.core import CommClosedError

from ordercube.pipeline.system import interrupts
from ordercube.pipeline.run.cluster import NoWorkers, WorkerWatch
from ordercube.pipeline.config.specs import Config
from ordercube.pipeline.cube.owner import Cube
from ordercube.pipeline.run.execute import ClusterLost, Head, Interrupted, Summary, Tally, failed_results, \
    killed_worker, synthetic_sources, write_stopped
from ordercube.pipeline.run.graph import Task, execute_task, isolate
from ordercube.pipeline.cube.grid import Chunk
from ordercube.pipeline.run.rounds import Feed
from ordercube.tasks.cell import describe


def _batches(futures: as_completed, watch: WorkerWatch, tally: Tally, *, idle: float = 5.0) -> Iterator[list]:
    """``futures.batches()``, but after every ``idle`` seconds without a result ``watch`` checks that there
    are workers to compute them (it tells the user, restarts lost local workers, or gives up); the time spent
    waiting for a result is told to ``tally`` (not the driver's own work)."""
    while True:
        interrupts.check()
        batch = futures.next_batch(block=False)
        if batch:
            watch.progress()
            yield batch
            continue
        if futures.is_empty():
            return
        waiting = time.perf_counter()
        with futures.thread_condition:  # a result that arrives after has_ready() notifies this condition
            if not futures.has_ready():
                futures.thread_condition.wait(timeout=idle)
        tally.waiting(time.perf_counter() - waiting)
        if not futures.has_ready():
            watch.check()


def _allowed_failures(dask_scheduler) -> int:
    """How many worker deaths the scheduler forgives a task (``distributed.scheduler.allowed-failures``)."""
    return int(dask_scheduler.allowed_failures)


def compute_on_cluster(client: Client, config: Config, feed: Feed, open_cube_for_writing: Callable[[], Cube],
                       *, threads: int, show_progress: bool, watch: WorkerWatch, head: Head | None = None) -> Summary:
    """Submit ``feed``'s tasks through the window and write results as they arrive (an adaptive feed hands out
    a group's next round once its results are stored: ordercube.pipeline.run.rounds).

    The cube is opened (a new one created) after the first window is submitted, so that creating it
    overlaps the first tasks: for a small sweep, creation costs as much as the computation.
    """
    window = config.execution.max_tasks_in_flight or 4 * threads
    arrays = {d.name: client.scatter(d.data, broadcast=True) for d in config.datasets
              if d.data is not None and d.name in feed.datasets}
    labels = {d.name: client.scatter(d.labels, broadcast=True) for d in config.datasets
              if d.labels is not None and d.name in feed.datasets}
    synthetic = synthetic_sources(config)
    pending: deque[Task] = deque()
    isolated: deque[Task] = deque()  # cells of a task that failed as a whole, resubmitted one by one first
    futures = as_completed()
    in_flight: dict = {}

    isolating: set = set()  # the isolated cell in flight: they run one at a time, so no two crashers meet

    def submit_next() -> bool:
        alone = bool(isolated) and not isolating
        if not alone and not pending:
            pending.extend(feed.take(1))
        task = isolated.popleft() if alone else (pending.popleft() if pending else None)
        if task is not None:
            future = client.submit(execute_task, task, synthetic.get(task.dataset), arrays.get(task.dataset),
                                   labels.get(task.dataset), pure=False)
            in_flight[future] = task
            futures.add(future)
            if alone:
                isolating.add(future)
        return task is not None

    struck: set[Chunk] = set()
    # Without retries on the scheduler (allowed-failures 0), a cell queued on a worker when another cell
    # killed it fails with it: then a cell gets a second run of its own before it is called crashed.
    second_chance = client.run_on_scheduler(_allowed_failures) == 0
    # One span holds the whole sweep: the scheduler keeps every span and the task groups it saw for as long as
    # it lives (dask/distributed#7977), and without one it opens a new default span each time the window
    # drains (between adaptive rounds): a span and a task group more per drain, 3.9 KB measured in the driver
    # of a LocalCluster.
    head = head or Head()
    with span("ordercube sweep"), head.progress(feed.total, enabled=show_progress) as progress:
        tally = Tally(progress)
        try:
            for _ in range(window):
                submit_next()
            try:
                cube_arrays = open_cube_for_writing().writer()
            except OSError as error:  # the store's: the cube could not be created or opened
                raise write_stopped(error) from None
            head.store(tally, cube_arrays)
            tally.skip(feed.stored([]))
            # Whatever has finished while the driver was writing arrives as one batch, written together.
            for batch in _batches(futures, watch, tally):
                done = []
                for future in batch:
                    task = in_flight.pop(future)
                    isolating.discard(future)
                    try:  # a 'finished' future can still fail here: its result died with a worker before it was sent
                        results = future.result()
                        tally.computed(results)
                        done.extend(results)
                        continue
                    except (CommClosedError, ConnectionError, FutureCancelledError, CancelledError):
                        raise
                    except Exception as error:  # the task failed as a whole
                        failure = error
                    pieces = isolate(task) if task.cells > 1 else [task]
                    if len(pieces) > 1:  # find the cell that broke it: the others are computed
                        isolated.extend(pieces)
                        tally.count_isolated()
                    elif second_chance and killed_worker(failure) and task.blocks[0][0] not in struck:
                        struck.add(task.blocks[0][0])
                        isolated.append(task)
                    else:
                        done.extend(failed_results(task, failure))
                tally.store(cube_arrays, done)
                tally.skip(feed.stored(done))
                for future in batch:
                    future.release()
                while len(in_flight) < window and submit_next():  # a decided look may release a whole round
                    pass
        except (CommClosedError, ConnectionError, FutureCancelledError, CancelledError) as error:
            # another OSError of the sweep (distributed's, for a reset connection) is mapped around it in sweep.py
            raise ClusterLost(describe(error)) from None
        except (KeyboardInterrupt, NoWorkers) as error:
            futures.clear()
            client.cancel(list(in_flight), force=True)
            if isinstance(error, KeyboardInterrupt):
                raise Interrupted() from None
            raise
    return tally.summary()
