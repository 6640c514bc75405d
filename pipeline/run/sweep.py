"""Running a sweep: plan the cells a cube lacks, choose where to compute them, store them as they arrive.

The driver (this process) is the cube's only writer. A small sweep is computed here, a larger one on a
Dask cluster (:mod:`ordercube.pipeline.run.on_cluster`: a LocalCluster started for the run, or a scheduler given);
:func:`where_to_compute` decides and says why. Resuming reads the cube alone.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from ordercube.pipeline.run.cluster import (
    CONNECT_TIMEOUT, DEFAULT_DASHBOARD, WAIT_FOR_WORKERS, NoWorkers, check_dashboard_free, scheduler_address, stderr_line,
)
from ordercube.pipeline.config.adaptive import check_looks
from ordercube.pipeline.config.specs import Config, MethodSpec
from ordercube.pipeline.system.cores import usable_cores
from ordercube.pipeline.run.estimate import Estimate, Pilot, estimate, run_pilot, without
from ordercube.pipeline.run.execute import (
    DISK_FULL, ClusterLost, DiskFull, Head, Interrupted, StoreFailed, Summary, compute_here, piece_computer,
    write_stopped,
)
from ordercube.pipeline.run.progress import PROGRESS_FROM_SECONDS
from ordercube.pipeline.run.graph import Task, build_tasks
from ordercube.pipeline.cube.grid import (
    CELL_SECONDS, CellCost, Chunk, Coords, chunks_to_compute, config_coords, default_chunks, estimated_seconds,
    group_into_tasks, iter_task_groups, merge_coords, plan_of, planned_mask, task_target,
)
from ordercube.pipeline.cube.owner import Cube
from ordercube.pipeline.cube.attrs import BASELINE
from ordercube.pipeline.system.kernel_cache import use_writable_cache
from ordercube.pipeline.files.location import location
from ordercube.pipeline.run.rounds import AdaptiveFeed, Feed, FixedFeed, forget_records
from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.cell import Status, describe
from ordercube.tasks.criteria import get_criterion
from ordercube.tasks.criteria.stability import random_labeling_disagreement
from ordercube.tasks.seeding import Purpose, stream

if TYPE_CHECKING:
    from distributed import Client

__all__ = ["DISK_FULL", "ClusterLost", "DiskFull", "Interrupted", "NoWorkers", "StoreFailed", "Summary", "run_sweep",
           "where_to_compute", "write_stopped"]


@dataclass(frozen=True)
class Plan:
    """The cells a config still needs on a cube, chunk by chunk, before they are grouped into tasks.

    ``wanted`` marks them (planned and still to compute: one byte per cell of the cube); the chunks and tasks
    are generated from it as they are needed (:meth:`iter_chunks`, :meth:`iter_tasks`), so a run's driver holds
    the tasks in flight, never the whole grid's (10^7 cells: 10^4 chunks of 10^3 cells at the default
    chunking, ~100 MiB of tuples and task payloads when built up front).
    """

    config: Config
    coords: Coords
    chunk_shape: dict[str, int]
    planned_cells: int
    wanted: np.ndarray = field(compare=False, repr=False)

    def iter_chunks(self) -> Iterator[Chunk]:
        """The chunks to compute, in grid order (:func:`ordercube.pipeline.cube.grid.chunks_to_compute`)."""
        return chunks_to_compute(self.wanted, None, self.chunk_shape)

    @property
    def chunks(self) -> list[Chunk]:
        """Every chunk to compute, as a list (a run streams them instead: :meth:`iter_chunks`)."""
        return list(self.iter_chunks())

    @cached_property
    def cells_to_compute(self) -> int:
        return sum(chunk.cells for chunk in self.iter_chunks())

    @property
    def datasets(self) -> set[str]:
        """The datasets with a cell to compute."""
        return {self.coords.dataset[d] for d in np.flatnonzero(self.wanted.any(axis=(1, 2, 3, 4)))}

    @property
    def cell_costs(self) -> dict[tuple[str, str], CellCost]:
        """The estimated cost of one cell of each (dataset, method) (:func:`cell_cost`)."""
        return {(d.name, m.name): cell_cost(m, features=d.n_features, objects=d.objects) for d in self.config.datasets
                for m in self.config.methods}

    @cached_property
    def estimated_seconds(self) -> float:
        """The rough compute time of the cells to compute on one core (the cost model that sizes tasks)."""
        costs = self.cell_costs
        return sum(estimated_seconds(chunk, self.coords, costs) for chunk in self.iter_chunks())

    def _groups(self, workers: int) -> Iterator[list[Chunk]]:
        target = task_target(self.estimated_seconds, task_seconds=self.config.execution.task_seconds, workers=workers)
        return iter_task_groups(self.iter_chunks(), self.coords, costs=self.cell_costs, target=target)

    def iter_tasks(self, workers: int) -> Iterator[Task]:
        """The tasks for ``workers`` worker threads, built one at a time as they are taken."""
        for group in self._groups(workers):
            yield from build_tasks(self.config, self.coords, [group])

    def task_count(self, workers: int) -> int:
        """How many tasks :meth:`iter_tasks` yields (the chunks grouped again, no task built)."""
        return sum(1 for _ in self._groups(workers))

    def tasks(self, workers: int) -> list[Task]:
        return list(self.iter_tasks(workers))

    def estimate(self, *, pilot: bool = True) -> Estimate:
        """The estimated compute of the cells to compute (:mod:`ordercube.pipeline.run.estimate`): the cost model
        calibrated by a short pilot timed in this process, whose cells are not kept (``run`` stores them);
        ``.wall(workers, cluster=...)`` is the wall time, ``.line(...)`` the line ``validate`` prints. Computed
        once per plan."""
        key = "_estimate_pilot" if pilot else "_estimate_model"
        if key not in self.__dict__:  # frozen: cached as functools.cached_property caches
            self.__dict__[key] = pilot_and_estimate(self)[1] if pilot else estimate(self, note="cost model")
        return self.__dict__[key]


def pilot_and_estimate(plan: Plan) -> tuple[Pilot, Estimate]:
    """The pilot of ``plan`` (none for an adaptive config: its rounds plan their cells from the cube) and the
    estimate it calibrates."""
    if plan.config.adaptive:
        return Pilot(), estimate(plan, note="cost model; adaptive methods: at most")
    pilot = run_pilot(plan, piece_computer(plan.config, plan.coords))
    return pilot, estimate(plan, pilot, note="" if pilot.pieces else "cost model")


@dataclass(frozen=True)
class Placement:
    """Where a sweep computes: in this process (``here``, on ``threads`` threads) or on Dask, and the line
    that says why."""

    here: bool
    reason: str
    threads: int = 1


# A second thread pays for its hand-offs (the GIL between kernels, the single writer) only with this much estimated
# work: the Lange workload at n = 100 (0.16 s estimated) computed in 0.19-0.20 s on one thread and 0.25-0.26 s on
# two (medians of 5, quiet 2-core machine); at n = 1,000 (0.74 s) two threads won, 0.50 s against 0.53-0.61 s.
MIN_THREAD_SECONDS = 0.25


def where_to_compute(plan: Plan, *, workers: int | None, elsewhere: bool, dashboard_asked: bool = False,
                     work: float | None = None) -> Placement:
    """In this process when the work is small and nobody asked for a cluster, else on Dask.

    ``workers``: 0 asks for this process, N >= 1 for a LocalCluster of N workers; ``elsewhere``: a
    scheduler or a client was given; ``dashboard_asked``: a dashboard address was given (only a cluster
    serves one). Otherwise the plan's estimated compute, shared among the threads this process would use
    (one per core when every method's kernels release the GIL, else one), decides against the config's
    ``execution.in_process_seconds`` (default 5): a LocalCluster costs about 2.5-3 s to start, stop and warm
    up on this project's 2-core machine, so it pays only where its processes do what threads cannot (GIL-bound
    kernels: from ~5 s of work its second core saves more than it costs) or where the work is long. ``work``:
    the compute left on one core when a pilot measured it (:meth:`Plan.estimate`), else the cost model's.
    """
    work = plan.estimated_seconds if work is None else work
    # one thread per core when every method's kernels release the GIL (else threads would queue on it), and
    # only as many as have MIN_THREAD_SECONDS of work each
    threads = usable_cores() if all(get_algorithm(m.algorithm).releases_gil for m in plan.config.methods) else 1
    threads = min(threads, max(1, int(work / MIN_THREAD_SECONDS)))
    if elsewhere:
        return Placement(False, "")
    if workers == 0:
        return Placement(True, f"computing in this process (--workers 0), on {threads} thread(s)", threads)
    if workers is not None:
        return Placement(False, "")
    if dashboard_asked:
        return Placement(False, "starting a local Dask cluster for the dashboard asked for (--dashboard-address)")
    wall, threshold = work / threads, plan.config.execution.in_process_seconds
    if wall < threshold:
        return Placement(True, f"computing in this process: about {wall:.1f} s of work on {threads} thread(s), "
                               f"under execution.in_process_seconds = {threshold:g}, below which a local cluster costs "
                               "more than it saves (--workers N starts one, with its dashboard)", threads)
    return Placement(False, f"starting a local Dask cluster: the estimated work is over execution.in_process_seconds "
                            f"= {threshold:g}")


def cells_to_do(status: np.ndarray, *, retry_failed: bool = False) -> np.ndarray:
    """The cells a run may compute: pending ones, skipped ones (a method without an adaptive rule now, or whose
    rule wants them, fills them: ordercube.pipeline.run.rounds), and with ``retry_failed`` failed and crashed ones."""
    todo = (status == Status.PENDING) | (status == Status.SKIPPED)
    if retry_failed:
        todo |= (status == Status.FAILED) | (status == Status.CRASHED)
    return todo


def make_plan(config: Config, coords: Coords, chunk_shape: dict[str, int], status: np.ndarray, *,
              retry_failed: bool = False) -> Plan:
    """The chunks a run computes. An adaptive method's cells are planned by its rounds (ordercube.pipeline.run.rounds) and
    counted here as their budget; its skipped cells are left alone (its rule decided it does not need them)."""
    mask = planned_mask(plan_of(config), coords)
    todo = cells_to_do(status, retry_failed=retry_failed)
    adaptive = np.array([name in config.adaptive for name in coords.model])[None, None, :, None, None]
    todo &= ~(adaptive & (status == Status.SKIPPED))
    todo &= mask
    return Plan(config=config, coords=coords, chunk_shape=chunk_shape, planned_cells=int(mask.sum()), wanted=todo)


def preview_plan(config: Config) -> Plan:
    """What ``run`` would compute, without writing anything (``ordercube validate``).

    Against the existing cube at ``config.out`` when there is one (checking that it may be extended),
    else against a fresh cube.
    """
    path = location(config.out)
    if not Cube.exists(path):
        coords = config_coords(config)
        return make_plan(config, coords, default_chunks(config), np.zeros(coords.shape, dtype=np.int8))
    cube = Cube.open_for(path, config)
    if config.adaptive:
        check_looks(config, cube.chunk_shape["trial"])
    stored = cube.coords
    coords = merge_coords(stored, config_coords(config))
    status = np.zeros(coords.shape, dtype=np.int8)
    status[tuple(slice(0, size) for size in stored.shape)] = cube.status_for_planning(baseline=False)[0]
    return make_plan(config, coords, cube.chunk_shape, status)


def fill_baseline(cube: Cube, config: Config, coords: Coords) -> int:
    """Estimate the random-labeling baseline for every planned (n, k) that lacks it; returns how many.

    One estimate per (n, k), from its own stream, reused by every dataset, method and trial.
    """
    if not any(get_criterion(name).normalised_by_random_labels for name in config.criteria):
        return 0
    baseline = cube.read(BASELINE)
    wanted_n = {n for d in config.datasets for n in d.n}
    filled = 0
    for i, n in enumerate(coords.n):
        for j, k in enumerate(coords.k):
            if n in wanted_n and k in config.k and np.isnan(baseline[i, j]):
                rng = stream(config.seed, Purpose.BASELINE, n, k)
                baseline[i, j] = random_labeling_disagreement(n // 2, k, rng, draws=config.baseline_draws)
                filled += 1
    if filled:
        cube.write_baseline(baseline)
    return filled


def run_sweep(config: Config, **options: Any) -> Summary:
    """Compute every planned cell of ``config`` that its cube lacks (see the module docstring).

    The cube is locked for the whole run (:meth:`ordercube.pipeline.cube.owner.Cube.lock`): a second writer is refused.
    ``options`` are those of :func:`_sweep_locked`.
    """
    path = location(config.out)
    Cube.check_settings()  # a bad ORDERCUBE_* setting of the writes exits 2 before the cube changes
    use_writable_cache()  # before numba is imported here or in a LocalCluster's workers: compiled once per machine
    if options.get("scheduler") or options.get("scheduler_file"):  # a bad address is refused before the cube changes
        scheduler_address(scheduler=options.get("scheduler"), scheduler_file=options.get("scheduler_file"),
                          timeout=options.get("connect_timeout", CONNECT_TIMEOUT))
    else:  # a given dashboard port that is taken is refused before the cube changes too
        check_dashboard_free(options.get("dashboard_address", DEFAULT_DASHBOARD))
    if not Cube.exists(path):
        Cube.check_new(path)
        if path.is_local:
            path.local().parent.mkdir(parents=True, exist_ok=True)
    with Cube.lock(path, options.pop("break_lock", None)) as lock:
        if lock.stale:
            options.get("echo", print)(lock.stale_note)
        summary = _sweep_locked(config, **options)
    if lock.broken:  # its heartbeat found another run's record: a run elsewhere took the lock as if this one had died
        warnings.warn(f"{config.out}: another run broke this run's lock object while it ran (--break-lock): both may "
                      "have written the cube; check it with 'ordercube status --verify'", RuntimeWarning, stacklevel=2)
    return summary


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
    dashboard_asked: bool = False,
    announce: Callable[[str], None] | None = None,
    announce_from: float = 0.0,
) -> Summary:
    """The body of :func:`run_sweep`, its caller holding the cube's lock. A ``client`` given is used
    instead of connecting (``workers``, ``scheduler`` and ``scheduler_file`` are then unused) and left open.
    ``dashboard_asked: the user gave a dashboard address, so a small
    sweep too runs on a LocalCluster (the only place a dashboard is served). ``announce`` says the estimated wall
    time before computing when it is at least ``announce_from`` seconds (default: ``echo``, which gets it otherwise)."""
    def say(line: str, wall: float) -> None:
        (announce if announce is not None and wall >= announce_from else echo)(line)

    planning = time.perf_counter()  # the driver's own work before its executor: counted in the summary's driver_seconds
    path = location(config.out)
    if Cube.exists(path) and config.adaptive:  # before the cube changes: its chunks must fit the looks
        check_looks(config, Cube.open_for(path, config).chunk_shape["trial"])
    if Cube.exists(path):
        cube = Cube.open_for(path, config, writable=True)
        coords, notes = cube.grow(config, config_coords(config))
        for note in notes:
            echo(note)
        if filled := fill_baseline(cube, config, coords):  # before counting: a lost baseline is computed, not its cells
            echo(f"computed the random-labelling baseline {BASELINE} at {filled} (n, k) that lacked it")
        status, lost = cube.status_for_planning()
        if lost.count:
            echo(f"{lost.describe()}; computing them again")
        if lost.unrecorded:  # chunks a crash left out of the manifest: recorded now, to be checked from here on
            cube.record_unrecorded(lost.unrecorded)
        plan = make_plan(config, coords, cube.chunk_shape, status, retry_failed=retry_failed)
        forget_records(cube, config)
        if not plan.cells_to_compute:
            echo(f"nothing to compute: all {plan.planned_cells} planned cells of {path} are already in the cube")
            return Summary(0, 0, 0, 0.0)
        open_cube_for_writing = lambda: cube  # noqa: E731
    else:
        Cube.check_new(path)
        coords = config_coords(config)
        plan = make_plan(config, coords, default_chunks(config), np.zeros(coords.shape, dtype=np.int8))

        def open_cube_for_writing() -> Cube:
            try:
                return Cube.create(path, config, coords, default_chunks(config),
                                   prepare=lambda new: fill_baseline(new, config, coords))
            except OSError as error:  # said at the store, wherever the executor opens it
                raise write_stopped(error) from None

    pilot, guess = pilot_and_estimate(plan)
    plan = without(plan, pilot)  # the pilot's cells are stored first (Head)
    placement = where_to_compute(plan, workers=workers, elsewhere=bool(client or scheduler or scheduler_file),
                                 dashboard_asked=dashboard_asked, work=guess.remaining)
    if config.adaptive and Cube.exists(path):  # the rounds read the cube from the start (a resumed run replays its decisions)
        cube = open_cube_for_writing()
        open_cube_for_writing = lambda: cube  # noqa: E731
        status = cube.read("status")
    elif config.adaptive:  # a new cube: created while the first rounds compute, as a fixed run's is
        cube = open_cube_for_writing = cache(open_cube_for_writing)  # the feed and the executor share it
        status = np.zeros(coords.shape, dtype=np.int8)

    def feed_for(threads: int) -> Feed:
        if not config.adaptive:
            return FixedFeed(plan.iter_tasks(workers=threads), total=plan.cells_to_compute,
                             count=plan.task_count(workers=threads), datasets=plan.datasets)
        return adaptive_feed(plan, cube, status, threads, retry_failed=retry_failed)

    def head(threads: int) -> Head:
        return Head(ready=pilot.results, estimate=guess.executor(threads), work=guess.modelled,
                    weight=lambda chunk: estimated_seconds(chunk, plan.coords, plan.cell_costs))

    def bar(threads: int) -> bool:
        return show_progress and guess.wall(threads, cluster=False) > PROGRESS_FROM_SECONDS

    if placement.here:
        echo(placement.reason)
        say(guess.line(placement.threads, cluster=False), guess.wall(placement.threads, cluster=False))
        feed = feed_for(placement.threads)
        echo(_computing(plan, feed, path, pilot))
        planning = time.perf_counter() - planning - pilot.seconds
        return _with_pilot(compute_here(config, feed, open_cube_for_writing, show_progress=bar(placement.threads),
                                        threads=placement.threads, head=head(placement.threads)), pilot, planning)
    planning = time.perf_counter() - planning - pilot.seconds
    if placement.reason:
        echo(placement.reason)
    local = not (client or scheduler or scheduler_file)
    from ordercube.pipeline.run.cluster import WorkerWatch, connect, dashboard_line, refuse_records_from_main
    if local:
        refuse_records_from_main()  # before the estimate of a cluster that will not start
        at_hand = workers or usable_cores()
        say(guess.line(at_hand, cluster=True), guess.wall(at_hand, cluster=True))
    from ordercube.pipeline.run.on_cluster import compute_on_cluster

    try:
        with connect(workers=workers, scheduler=scheduler, scheduler_file=scheduler_file,
                     connect_timeout=connect_timeout, dashboard_address=dashboard_address, client=client) as connected:
            watch = WorkerWatch(connected, patience=wait_for_workers, notify=notify, owned=client is None)
            threads = watch.wait()  # tasks are sized for the threads there are: wait for the first worker
            feed_started = time.perf_counter()
            if not local:
                say(guess.line(threads, cluster=False, where=f"on the {threads} worker thread(s) there"),
                    guess.wall(threads, cluster=False))
            feed = feed_for(threads)
            echo(_computing(plan, feed, path, pilot))
            planning += time.perf_counter() - feed_started
            if line := dashboard_line(connected, dashboard_address):
                echo(line)
            return _with_pilot(compute_on_cluster(connected, config, feed, open_cube_for_writing, threads=threads,
                                                  show_progress=bar(threads), watch=watch, head=head(threads)),
                               pilot, planning)
    except OSError as error:  # the cube's writes said theirs (StoreFailed, DiskFull): this one is a connection's,
        raise ClusterLost(describe(error)) from None  # as distributed's when a connection is reset


def _with_pilot(summary: Summary, pilot: Pilot, planning: float) -> Summary:
    """The executor's summary with the pilot's time (its cells are among the computed) and the planning's."""
    return replace(summary, seconds=summary.seconds + pilot.seconds).with_driver(planning)


def _computing(plan: Plan, feed: Feed, path: Any, pilot: Pilot) -> str:
    if isinstance(feed, FixedFeed):  # the pilot's cells, computed already, among them
        tasks = f"{feed.tasks} tasks" + (f" and the pilot's {len(pilot.pieces)}" if pilot.pieces else "")
        return (f"computing {plan.cells_to_compute + pilot.cells} of {plan.planned_cells} planned cells in {tasks} "
                f"-> {path}")
    return (f"computing up to {feed.total} of {plan.planned_cells} planned cells, adaptive methods in rounds "
            f"({', '.join(plan.config.adaptive)}: their rule stops them) -> {path}")


def adaptive_feed(plan: Plan, cube: Cube | Callable[[], Cube], status: np.ndarray, threads: int, *,
                  retry_failed: bool) -> AdaptiveFeed:
    """The rounds of the adaptive methods (each cut into tasks of ``execution.task_seconds``, not finer: the groups'
    rounds share the workers), and the plan's other chunks as tasks, cut as a fixed plan's are (ordercube.pipeline.run.rounds)."""
    config, coords = plan.config, plan.coords
    adaptive = {j for j, name in enumerate(coords.model) if name in config.adaptive}

    def tasks_of(chunks: list[Chunk], workers: int) -> list[Task]:
        if not chunks:
            return []
        groups = group_into_tasks(chunks, coords, costs=plan.cell_costs,
                                  task_seconds=config.execution.task_seconds, workers=workers)
        return build_tasks(config, coords, groups)

    fixed = tasks_of([chunk for chunk in plan.chunks if chunk.model not in adaptive], threads)
    return AdaptiveFeed(config, coords, plan.chunk_shape, cells_to_do(status, retry_failed=retry_failed), cube,
                        lambda chunks: tasks_of(chunks, 0), fixed)


def criterion_options(method: MethodSpec, name: str) -> dict[str, Any]:
    """The options criterion ``name`` runs with in ``method``: its defaults under the method's own."""
    return {**get_criterion(name).options, **method.criterion_options.get(name, {})}


def fit_work(method: MethodSpec) -> float:
    """How many times the halves' fits a trial of ``method`` costs: its scheme's fits (``Scheme.fits`` of its
    parameters; the halves: 1) plus the fits each criterion declares (``Criterion.extra_fits`` of its resolved
    options; 0 when it declares none). Criteria that name the same ``Criterion.shares_fits`` make their fits
    once: that group counts its largest declaration, once. A reduced criterion adds nothing to a run."""
    from ordercube.tasks.schemes import get_scheme

    scheme = get_scheme(method.scheme)
    alone, shared = 0.0, {}
    for name in method.criteria:
        criterion = get_criterion(name)
        fits = float(criterion.extra_fits(criterion_options(method, name)))
        if criterion.shares_fits:
            shared[criterion.shares_fits] = max(fits, shared.get(criterion.shares_fits, 0.0))
        else:
            alone += fits
    return float(scheme.fits({**scheme.defaults, **method.scheme_params})) + alone + sum(shared.values())


def cell_cost(method: MethodSpec, *, features: int = 1, objects: str | None = None) -> CellCost:
    """The estimated compute of one cell of ``method`` on data of ``features`` features whose rows are
    ``objects`` (the algorithm's variant for them, when it has one): the engine's
    :data:`CELL_SECONDS`, its fits (:func:`fit_work`) times its algorithm's declared cost of one fit
    (``seconds_per_fit``, and ``seconds_per_point`` + ``features`` x ``seconds_per_feature`` per point and
    order, scaled by ``fit_scale`` of the method's parameters), and its criteria's own declared seconds
    (``Criterion.seconds_per_cell``)."""
    algorithm = get_algorithm(method.algorithm).on(objects)
    fits = fit_work(method) * algorithm.fit_scale({**algorithm.defaults, **method.params})
    own = [(get_criterion(name).seconds_per_cell, criterion_options(method, name)) for name in method.criteria]

    def criteria(n: int) -> float:
        return sum(seconds(options, n) for seconds, options in own)

    return CellCost(fixed=CELL_SECONDS + fits * algorithm.seconds_per_fit,
                    per_point=fits * (algorithm.seconds_per_point + max(features, 1) * algorithm.seconds_per_feature),
                    points_power=algorithm.points_power, per_order=not algorithm.shares_fit_across_k,
                    criteria=criteria)
