"""The wall time of a sweep, said before it starts: the static cost model calibrated by a short timed pilot.

The static model (:func:`ordercube.pipeline.run.sweep.cell_cost`) knows the *relative* cost of the cells well
(a fit's cost in n, k and features, the criteria's extra fits) but its absolute seconds are constants measured
once, stale as soon as a kernel gets faster or the machine is busy. So before a run a few real cells are timed
in this process: one trial (every k of its chunk) of as many (dataset, n, method) groups as a small budget allows,
the methods taken in turn. Each method's measured / modelled ratio rescales its remaining cells (a method
without a piece timed takes the pilot's overall ratio); the pilot's cells are real cells, stored in the cube
by ``run`` (a cell's value depends on its coordinates and the seed only), so no work is lost.

The wall time then divides the one-core compute among the workers at hand (:data:`PARALLEL_EFFICIENCY`) and adds
a LocalCluster's start, warm-up and stop when one is started (:data:`CLUSTER_START_SECONDS`) and the cube's
writes (:data:`WRITE_SECONDS` per chunk).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ordercube.pipeline.cube.grid import Chunk, estimated_seconds
from ordercube.pipeline.system import interrupts
from ordercube.pipeline.system.cores import usable_cores

if TYPE_CHECKING:
    from ordercube.tasks.cell import BlockResult

#: A :class:`ordercube.pipeline.run.sweep.Plan` (not imported: the sweep imports this module).
Plan = Any

#: The pilot's budget: at most this share of the plan's modelled work ...
PILOT_SHARE = 0.03
#: ... or, when no piece fits in that share (a piece is a whole trial: 5% of a 20-resample group), one piece of at
#: most this share. The pilot's cells are stored, so what it costs is only its running on one core, not the work.
PILOT_ONE_PIECE_SHARE = 0.12
#: ... and at most this many seconds, modelled before and measured while it runs (the pilot stops there).
PILOT_SECONDS = 2.0
#: ... and, whatever the shares, this many modelled seconds: a small plan is where the model's constants miss most
#: (a classifier config of 0.3 s modelled took 15 s with its kernels' first compilation).
PILOT_FLOOR = 0.1
#: No pilot below this much modelled work.
PILOT_MIN_WORK = 0.01
#: A LocalCluster's start (scheduler, nannies, the workers' imports and first kernel calls) and stop: 2.5-3.5 s
#: on this project's 2-core machine (``benchmarks/bench_estimate.py`` measures it).
CLUSTER_START_SECONDS = 3.0
#: Two workers on two cores do not halve the time: the driver writes, the OS and other processes share the cores.
PARALLEL_EFFICIENCY = 0.85
#: The driver's store of one chunk's results (values, status, CRCs, manifest), 1.5-9 ms measured.
WRITE_SECONDS = 0.005
#: Planning and the cube's creation before the first cell (a new cube's template and baseline).
START_SECONDS = 0.2


@dataclass
class Pilot:
    """The pilot's timed pieces: (piece, modelled seconds, measured seconds) and their results; ``fixed``: per
    method, the seconds a task pays once whatever its trials (its block's set-up: a consensus block's distances,
    the arrays of its results), and ``process_set_up``: per method, the seconds a process pays once for every task
    of the dataset (what it keeps: reference sets), when more pieces told them apart from the trials' own cost."""

    pieces: list[tuple[Chunk, float, float]] = field(default_factory=list)
    results: list[tuple[Chunk, BlockResult]] = field(default_factory=list)
    seconds: float = 0.0
    warm_up: float = 0.0
    fixed: dict[int, float] = field(default_factory=dict)
    process_set_up: dict[int, float] = field(default_factory=dict)

    @property
    def cells(self) -> int:
        return sum(piece.cells for piece, _, _ in self.pieces)


@dataclass(frozen=True)
class Estimate:
    """The estimated compute of a plan on one core (``work``, seconds, the pilot's cells included) and what it
    rests on; :meth:`wall` turns it into the wall time for the workers at hand."""

    work: float
    modelled: float
    chunks: int
    tasks: int = 0
    pilot_cells: int = 0
    pilot_seconds: float = 0.0
    pilot_work: float = 0.0
    ratio: float = 1.0
    note: str = ""
    warm_up: float = 0.0
    slowdown: float = 1.0
    process_set_up: float = 0.0

    @property
    def remaining(self) -> float:
        """The compute on one core of the cells the pilot left."""
        return max(self.work - self.pilot_work, 0.0)

    def executor(self, workers: int) -> float:
        """The wall time of the cells after the pilot on ``workers`` threads or workers already running: the
        cube's creation and writes, the compute shared among them."""
        speedup = 1 + (max(workers, 1) - 1) * PARALLEL_EFFICIENCY
        return START_SECONDS + self.chunks * WRITE_SECONDS + self.remaining / speedup

    def wall(self, workers: int, *, cluster: bool) -> float:
        """The wall time of the whole sweep on ``workers`` threads of this process (``cluster`` False) or workers of
        a LocalCluster started for it (``cluster`` True: its start and stop added), the pilot (serial) included."""
        return self.pilot_seconds + self.executor(workers) + (self.cluster_start if cluster else 0.0)

    @property
    def cluster_start(self) -> float:
        """A LocalCluster's start and stop (:data:`CLUSTER_START_SECONDS`, longer on a busy machine: ``slowdown``),
        its workers' first calls of the kernels (each pays the pilot's warm-up again, in parallel) and what each
        worker process builds once and keeps (``process_set_up``, in parallel; in this process the pilot built it)."""
        return CLUSTER_START_SECONDS * self.slowdown + self.warm_up + self.process_set_up

    def line(self, workers: int, *, cluster: bool, written: bool = True, where: str | None = None) -> str:
        """One short line: ``estimated 23 s on 2 local worker(s) (pilot of 12 cells: 0.4 s)``."""
        where = where or (f"on {workers} local worker(s)" if cluster else f"in this process on {workers} thread(s)")
        if self.pilot_cells:
            how = f"pilot of {self.pilot_cells} cells: {self.pilot_seconds:.1f} s{'' if written else ', not written'}"
        else:
            how = self.note or "cost model"
        return f"estimated {_duration(self.wall(workers, cluster=cluster))} {where} ({how})"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def pilot_pieces(plan: Plan, budget: float) -> Iterator[tuple[Chunk, float]]:
    """The pilot's pieces and their modelled seconds, within ``budget`` modelled seconds: one trial (every k of its
    chunk, so an algorithm fitting all k at once gets the same bits as in the run) of one chunk per (dataset, n,
    method) group, the methods in turn, each method's groups from the largest n down. Adaptive methods are left
    out (their rounds plan their cells from the cube)."""
    costs, coords = plan.cell_costs, plan.coords
    adaptive = set(plan.config.adaptive)
    firsts: dict[int, list[tuple[Chunk, float]]] = defaultdict(list)
    seen: set[tuple[int, int, int]] = set()
    for chunk in plan.iter_chunks():
        group = (chunk.dataset, chunk.n, chunk.model)
        if group in seen or coords.model[chunk.model] in adaptive:
            continue
        seen.add(group)
        piece = Chunk(chunk.dataset, chunk.n, chunk.model, chunk.k, (chunk.trial[0],))
        firsts[chunk.model].append((piece, estimated_seconds(piece, coords, costs)))
    queues = [sorted(pieces, key=lambda p: -coords.n[p[0].n]) for pieces in firsts.values()]
    spent = 0.0
    while any(queues):
        for queue in queues:
            while queue:
                piece, cost = queue.pop(0)
                if spent + cost <= budget:
                    spent += cost
                    yield piece, cost
                    break


def pilot_budget(plan: Plan) -> float:
    """The pilot's modelled seconds: :data:`PILOT_SHARE` of the plan's, or its cheapest piece when that alone is
    over it and within :data:`PILOT_ONE_PIECE_SHARE`, and at least :data:`PILOT_FLOOR`; at most
    :data:`PILOT_SECONDS`."""
    total = plan.estimated_seconds
    cheapest = min((cost for _, cost in pilot_pieces(plan, float("inf"))), default=float("inf"))
    share = PILOT_SHARE * total if cheapest <= PILOT_SHARE * total or cheapest > PILOT_ONE_PIECE_SHARE * total \
        else cheapest
    return min(max(share, PILOT_FLOOR), PILOT_SECONDS)


def run_pilot(plan: Plan, compute: Callable[..., list[tuple[Chunk, BlockResult]]]) -> Pilot:
    """Time the pieces of :func:`pilot_pieces` one by one with ``compute``, until the budget's seconds are spent.
    Before a method's first piece, ``compute(piece, warm_up=True)`` runs it untimed at a small n, its results thrown
    away: the process's first call of a kernel (imports, numba's cache) would otherwise be extrapolated to every
    cell."""
    pilot = Pilot()
    total = plan.estimated_seconds
    if total < PILOT_MIN_WORK:
        return pilot
    started = time.perf_counter()
    warm: set[int] = set()
    for piece, cost in pilot_pieces(plan, pilot_budget(plan)):
        if interrupts.REQUESTED.is_set():  # a stop asked for (its KeyboardInterrupt maybe swallowed): the run stops
            break
        if piece.model not in warm:
            warm.add(piece.model)
            begun = time.perf_counter()
            try:
                compute(piece, warm_up=True)
            except Exception:  # noqa: BLE001 - a family whose data cannot be drawn that small: no warm-up
                pass
            pilot.warm_up = max(pilot.warm_up, time.perf_counter() - begun)
        timed = _timed(compute, piece)
        if timed is None:
            break
        results, measured = timed
        pilot.results.extend(results)
        pilot.pieces.append((piece, cost, measured))
        _time_fixed_cost(plan, pilot, piece, cost, measured, compute, left=PILOT_SECONDS - (time.perf_counter() - started))
        if time.perf_counter() - started >= PILOT_SECONDS:
            break
    pilot.seconds = time.perf_counter() - started
    return pilot


def _timed(compute: Callable[..., list[tuple[Chunk, BlockResult]]], piece: Chunk
           ) -> tuple[list[tuple[Chunk, BlockResult]], float] | None:
    """``compute(piece)``'s results and seconds; None when it raised (the run computes and records it as any task)."""
    begun = time.perf_counter()
    try:
        results = compute(piece)
    except Exception:  # noqa: BLE001 - recorded by the run, not the pilot
        return None
    return results, time.perf_counter() - begun


#: Trials of the third piece that tells a task's fixed cost from its trials' (:func:`_time_fixed_cost`).
SECOND_PIECE_TRIALS = 3
#: A method's first piece of at most this many seconds is followed by one more trial (:func:`_time_fixed_cost`):
#: a first piece that long is mostly a set-up its process keeps (a consensus dataset's reference sets, the Gap
#: statistic's) or a plan whose pilot is a small share of it.
SET_UP_PIECE_SECONDS = 30.0


def _time_fixed_cost(plan: Plan, pilot: Pilot, piece: Chunk, cost: float, measured: float,
                     compute: Callable[..., list[tuple[Chunk, BlockResult]]], *, left: float) -> None:
    """Tell apart what a method's first piece (one trial, ``measured`` A seconds) paid once for this process, once
    for its task and for its trial. A second piece of the next trial of the chunk (B1 = F + c) takes out what the
    process keeps for later tasks (P = A - B1: reference sets built once per process, kernels' first calls); when
    :data:`SECOND_PIECE_TRIALS` more trials fit in the ``left`` seconds, a third piece of them (B3 = F + 3c) tells
    a task's fixed cost F (its block's set-up, its results' arrays) from a trial's c. Without the third piece F is
    taken as 0. A cheap trial would otherwise carry its task's or its process's whole set-up into every trial's
    estimate (a consensus resample of 49 items: 0.6 ms, its task's set-up 4-5 ms; of the colon set with 25 reference
    sets: 30 ms, the process's set-up 5 s)."""
    if piece.model in pilot.fixed or measured > SET_UP_PIECE_SECONDS:
        return
    # the trials after the piece's in its chunk (those with a cell of its ks to compute), read off the plan's mask
    first, size = piece.trial[0], plan.chunk_shape["trial"]
    slab = plan.wanted[piece.dataset, piece.n, piece.model][list(piece.k)]
    after = [t for t in range(first + 1, min((first // size + 1) * size, slab.shape[1])) if slab[:, t].any()]
    if not after:
        return
    begun = time.perf_counter()
    one = Chunk(piece.dataset, piece.n, piece.model, piece.k, (after[0],))
    timed = _timed(compute, one)
    if timed is None:
        return
    results, alone = timed
    pilot.results.extend(results)
    trial, fixed, pieces = alone, 0.0, [(one, cost, alone)]
    more = after[1:1 + SECOND_PIECE_TRIALS]
    if len(more) == SECOND_PIECE_TRIALS and alone * SECOND_PIECE_TRIALS <= left - (time.perf_counter() - begun):
        three = Chunk(piece.dataset, piece.n, piece.model, piece.k, tuple(more))
        timed = _timed(compute, three)
        if timed is not None:
            results, both = timed
            pilot.results.extend(results)
            trial = max((both - alone) / (SECOND_PIECE_TRIALS - 1), 0.0)
            fixed = max(alone - trial, 0.0)
            pieces = [(one, cost, trial), (three, cost * SECOND_PIECE_TRIALS, trial * SECOND_PIECE_TRIALS)]
    pilot.fixed[piece.model] = fixed
    pilot.process_set_up[piece.model] = max(measured - alone, 0.0)
    # the pieces' measured seconds as the trials' own: the ratio then scales the trials, the tasks add F each and
    # each process P once
    pilot.pieces[-1] = (piece, cost, trial)
    pilot.pieces.extend(pieces)


def ratios(pilot: Pilot, plan: Plan) -> tuple[dict[int, float], float]:
    """Measured / modelled seconds per method (index into the plan's models) and over the whole pilot."""
    by_model: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for piece, modelled, measured in pilot.pieces:
        by_model[piece.model].append((modelled, measured))
    out = {}
    for model, timed in by_model.items():
        out[model] = sum(m for _, m in timed) / max(sum(s for s, _ in timed), 1e-9)
    overall = (sum(m for _, _, m in pilot.pieces) / max(sum(s for _, s, _ in pilot.pieces), 1e-9)
               if pilot.pieces else 1.0)
    return out, overall


def estimate(plan: Plan, pilot: Pilot | None = None, *, note: str = "") -> Estimate:
    """The plan's compute on one core, the pilot's cells included: the pilot's measured seconds plus every other
    cell's modelled seconds times its method's ratio (:func:`ratios`; without a pilot, the static model alone)."""
    costs, coords = plan.cell_costs, plan.coords
    pilot = pilot or Pilot()
    per_model, overall = ratios(pilot, plan)
    timed = {piece: measured for piece, _, measured in pilot.pieces}
    modelled = work = 0.0
    chunks = 0
    by_model: dict[int, int] = defaultdict(int)
    for chunk in plan.iter_chunks():
        chunks += 1
        seconds = estimated_seconds(chunk, coords, costs)
        modelled += seconds
        rest = seconds
        for piece in (p for p in timed if p.dataset == chunk.dataset and p.n == chunk.n and p.model == chunk.model
                      and p.trial[0] in chunk.trial and p.k == chunk.k):
            rest -= estimated_seconds(piece, coords, costs)
            work += timed[piece]
        work += max(rest, 0.0) * per_model.get(chunk.model, overall)
        by_model[chunk.model] += 1
    tasks = plan.task_count(workers=usable_cores()) if pilot.fixed else 0
    if tasks:  # each task pays its block's set-up once (:func:`_time_fixed_cost`), shared out by the models' chunks
        fixed = sum(pilot.fixed.get(model, 0.0) * count for model, count in by_model.items()) / max(chunks, 1)
        work += tasks * fixed
    ratio = work / modelled if modelled else 1.0
    return Estimate(work=work, modelled=modelled, chunks=chunks, tasks=tasks, pilot_cells=pilot.cells,
                    pilot_seconds=pilot.seconds, pilot_work=sum(timed.values()), ratio=ratio, note=note,
                    warm_up=pilot.warm_up, slowdown=slowdown(), process_set_up=sum(pilot.process_set_up.values()))


def slowdown() -> float:
    """How much slower a new process runs than on an idle machine: the runnable processes per core (the 1-minute
    load average, this process's pilot among them), at least 1. Processes share the cores fairly."""
    import os

    try:
        load = os.getloadavg()[0]
    except OSError:  # not available on this platform
        return 1.0
    return max(1.0, load / usable_cores())


def without(plan: Plan, pilot: Pilot) -> Plan:
    """``plan`` less the pilot's cells (computed already: ``run`` stores them first)."""
    from dataclasses import replace

    if not pilot.pieces:
        return plan
    wanted = plan.wanted.copy()
    for piece, _, _ in pilot.pieces:
        for trial in piece.trial:
            wanted[piece.dataset, piece.n, piece.model, list(piece.k), trial] = False
    return replace(plan, wanted=wanted)
