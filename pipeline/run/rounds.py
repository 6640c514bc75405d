"""What a sweep's executors take their tasks from: all at once, or round by round for an adaptive rule.

:class:`FixedFeed` hands out a plan's tasks. :class:`AdaptiveFeed` (:mod:`ordercube.tasks.adaptive`) submits the trials of
every adaptive group (dataset, n, method) in rounds: round l computes the trials before look r_l of the k's
still in play. Once every cell of a round is in the cube, the group's races (one per criterion,
:func:`ordercube.tasks.adaptive.race_by`: PSE-t, or Prediction Strength's threshold race) are run on the trial-index
prefix 0..r_l - 1 as stored, never on the order in which cells arrived: k's eliminated by every criterion get
no more trials, and a group whose every race has stopped (decided, settled, or unsettled at the budget)
stops. A criterion reduced from stored clusterings (``Criterion.reduce``) has no per-trial values: its look
reads the group's stored clusterings of the prefix, reduces them to the curve and to the curves of a bootstrap
over those resamples (:func:`ordercube.tasks.adaptive.bootstrap_look`), and keeps every k in play until k̂ is
settled; the look only reads, so no stored bit of a computed cell changes. Other groups' rounds keep the
workers busy meanwhile: there is no barrier across groups, and the rounds of the groups with the most work
ahead are handed out first (the plan's other tasks fill in). The cells a stopped group never needs are stored as
``skipped``, with the look and reason, and the decision record of the group is kept in the cube's attributes
(``ordercube_adaptive``).

Decisions depend on stored values only, so the cells computed, the decisions and the cube are the same for any
number of workers, any cut of the work into tasks, and an interrupted run resumed: a resumed run replays the
races on the stored prefixes and carries on where the cells run out. Algorithms that fit every k of a trial at
once (``cluster_many``) are given every k of a round: their fits depend on the k's asked for, and elimination
would save nothing.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from itertools import islice
from typing import Any, Protocol

import numpy as np

from ordercube.pipeline.config.adaptive import AdaptiveSpec, score_ranges
from ordercube.pipeline.config.specs import Config
from ordercube.pipeline.cube.owner import BlockWriter, Cube
from ordercube.pipeline.run.graph import Task
from ordercube.pipeline.cube.grid import Chunk, Coords, chunks_to_compute, plan_of, planned_mask
from ordercube.pipeline.cube.attrs import BASELINE
from ordercube.tasks.adaptive import BOUNDED, Race, bootstrap_look, race_by
from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.cell import BlockResult, Status
from ordercube.tasks.criteria import get_criterion, is_reduced

ADAPTIVE_ATTRIBUTE = "ordercube_adaptive"


def forget_records(cube: Cube, config: Config) -> None:
    """Drop the decision records of the methods ``config`` runs without an adaptive rule: it fills their skipped
    cells, and the cube then holds the fixed budget's cells for them."""
    records = json.loads(str(cube.attrs.get(ADAPTIVE_ATTRIBUTE, "{}")))
    kept = {key: record for key, record in records.items() if record["method"] in config.adaptive}
    if kept != records:
        cube.attrs[ADAPTIVE_ATTRIBUTE] = json.dumps(kept)


class Feed(Protocol):
    """Tasks ready now (``take``), and what the executor tells after storing results (``stored``: returns the
    cells stored as skipped meanwhile); ``total``: the cells it may hand out, at most; ``datasets``: the names of
    the datasets its tasks may read (a cluster receives their arrays once)."""

    total: int
    datasets: set[str]

    def take(self, count: int) -> list[Task]: ...

    def stored(self, done: Iterable[tuple[Chunk, BlockResult]]) -> int: ...


class FixedFeed:
    """A plan's tasks, handed out in order: a list, or a stream (:meth:`ordercube.pipeline.run.sweep.Plan.iter_tasks`)
    whose ``total`` cells, ``count`` tasks and ``datasets`` the plan counts beforehand, so that only the tasks
    taken are ever built."""

    def __init__(self, tasks: Iterable[Task], *, total: int | None = None, count: int | None = None,
                 datasets: set[str] | None = None) -> None:
        if total is None or count is None or datasets is None:
            tasks = list(tasks)
            total = sum(task.cells for task in tasks)
            count = len(tasks)
            datasets = {task.dataset for task in tasks}
        self._pending = iter(tasks)
        self.total = total
        self.tasks = count
        self.datasets = datasets

    def take(self, count: int) -> list[Task]:
        return list(islice(self._pending, max(count, 0)))

    def stored(self, done: Iterable[tuple[Chunk, BlockResult]]) -> int:
        """Nothing to decide: no cells are skipped."""
        return 0


@dataclass(eq=False)
class _Group:
    """One adaptive (dataset, n, method): the look awaited, the k's in play (cube indices), the cells of the
    round still to arrive, and the races as of the last look."""

    index: tuple[int, int, int]
    spec: AdaptiveSpec
    criteria: tuple[str, ...]
    planned: tuple[int, ...]
    joint: bool
    look: int = 0
    in_play: tuple[int, ...] = ()
    outstanding: int = 0
    stopped: bool = False
    queued: deque = field(default_factory=deque)  # the round's tasks not handed out yet
    cost: tuple[float, int] = (0.0, 0)  # seconds and cells of its computed cells (the results' own seconds)
    races: dict[str, tuple[Race, tuple[int, ...]]] = field(default_factory=dict)
    curves: dict[str, dict[str, Any]] = field(default_factory=dict)  # reduced criteria: the curve at the last look


class AdaptiveFeed:
    """The adaptive groups' rounds (module docstring) and the tasks of the plan's other cells (``fixed``).

    ``todo``: which cells may be computed (pending, skipped, and with ``--retry-failed`` failed or crashed);
    ``make_tasks`` cuts chunks into tasks; ``cube``: the cube, open for writing, or for a cube not created yet
    the function that creates it (the one the executor calls once the first tasks are submitted: a new cube's
    first rounds need nothing from it, so its creation overlaps them as a fixed run's does).
    """

    def __init__(self, config: Config, coords: Coords, chunk_shape: dict[str, int], todo: np.ndarray,
                 cube: Cube | Callable[[], Cube], make_tasks: Callable[[list[Chunk]], list[Task]],
                 fixed: list[Task]) -> None:
        self.config, self.coords, self.chunk_shape = config, coords, chunk_shape
        self._cube, self._open = (cube, None) if isinstance(cube, Cube) else (None, cube)
        self.make_tasks = make_tasks
        self.ready: deque[Task] = deque(fixed)  # the plan's other cells: they fill the workers between rounds
        self.waiting: list[_Group] = []  # the groups whose round has tasks not handed out yet
        self.mask = planned_mask(plan_of(config), coords)
        self.todo = todo & self.mask
        methods = self.methods = {m.name: m for m in config.methods}
        self.groups: dict[tuple[int, int, int], _Group] = {}
        adaptive_models = [j for j, name in enumerate(coords.model) if name in config.adaptive]
        for d in range(len(coords.dataset)):
            for i in range(len(coords.n)):
                for m in adaptive_models:
                    planned = tuple(int(k) for k in np.flatnonzero(self.mask[d, i, m].any(axis=1)))
                    if not planned:
                        continue
                    method = methods[coords.model[m]]
                    self.groups[(d, i, m)] = _Group((d, i, m), config.adaptive[method.name], method.all_criteria, planned,
                                                    joint=get_algorithm(method.algorithm).shares_fit_across_k,
                                                    in_play=planned)
        self.total = sum(task.cells for task in fixed) + int(sum(self.todo[index].sum() for index in self.groups))
        self.datasets = {task.dataset for task in fixed} | {coords.dataset[d] for d, _, _ in self.groups}
        self.skipped = self._reported = 0
        for state in self.groups.values():
            self._advance(state)

    @property
    def cube(self) -> Cube:
        """The cube, opened (created) on first use, with its writer, baseline and decision records."""
        if self._cube is None:
            self._cube = self._open()  # type: ignore[misc]
        return self._cube

    @cached_property
    def arrays(self) -> BlockWriter:
        return self.cube.writer()

    @cached_property
    def baseline(self) -> np.ndarray | None:
        return self.cube.read(BASELINE) if BASELINE in self.cube else None

    @cached_property
    def records(self) -> dict[str, Any]:
        return json.loads(str(self.cube.attrs.get(ADAPTIVE_ATTRIBUTE, "{}")))

    # -- what the executors call -------------------------------------------------------------------------------

    def take(self, count: int) -> list[Task]:
        """Up to ``count`` tasks: the rounds of the groups with the most work ahead first (longest first, so that
        the groups that run longest start their next round as soon as they can and the cheap ones fill in around
        them), then the plan's other tasks, which wait on nothing. The order changes no cell and no decision."""
        taken: list[Task] = []
        while len(taken) < count:
            if self.waiting:
                state = max(self.waiting, key=self._work_ahead)
                taken.append(state.queued.popleft())
                if not state.queued:
                    self.waiting.remove(state)
            elif self.ready:
                taken.append(self.ready.popleft())
            else:
                break
        return taken

    def _work_ahead(self, state: _Group) -> tuple[float, float]:
        """How much a group may still compute: the cells of its k's in play up to its budget, at the seconds per
        cell its computed cells took (before any result, by its sample size: larger first)."""
        cells = len(state.in_play) * (state.spec.looks[-1] - (state.spec.looks[state.look - 1] if state.look else 0))
        seconds, computed = state.cost
        if not computed:
            return (float("inf"), cells * float(self.coords.n[state.index[1]]))
        return (cells * seconds / computed, 0.0)

    def stored(self, done: Iterable[tuple[Chunk, BlockResult]]) -> int:
        """Count the cells that reached the cube and decide the groups whose round is complete. Returns the cells
        stored as skipped since the last call (the first call also counts those of groups already decided)."""
        for chunk, result in done:
            state = self.groups.get((chunk.dataset, chunk.n, chunk.model))
            if state is None or state.stopped:
                continue
            state.outstanding -= chunk.cells
            state.cost = (state.cost[0] + float(np.sum(result.seconds)), state.cost[1] + chunk.cells)
            if state.outstanding <= 0:
                self._advance(state)
        reported, self._reported = self.skipped - self._reported, self.skipped
        return reported

    # -- the rounds --------------------------------------------------------------------------------------------

    def _advance(self, state: _Group) -> None:
        """Submit the cells of the current round the cube lacks; when it lacks none, decide at this look and go on
        to the next (a resumed run replays its decisions here), or stop the group."""
        d, i, m = state.index
        while True:
            todo = self._round_todo(state)
            if todo.any():
                chunks = [Chunk(d, i, m, chunk.k, chunk.trial) for chunk in
                          chunks_to_compute(todo[None, None, None], np.ones((1, 1, 1, *todo.shape), dtype=bool),
                                            self.chunk_shape)]
                self.todo[d, i, m][todo] = False
                state.outstanding = sum(chunk.cells for chunk in chunks)
                state.queued.extend(self.make_tasks(chunks))
                self.waiting.append(state)
                return
            self._decide(state)
            if state.stopped:
                self._finish(state)
                return
            state.look += 1

    def _round_todo(self, state: _Group) -> np.ndarray:
        """The cells of the current round not in the cube yet, shape (k, trial)."""
        d, i, m = state.index
        need = np.zeros(self.mask.shape[3:], dtype=bool)
        need[list(state.in_play), : state.spec.looks[state.look]] = True
        return need & self.todo[d, i, m]

    def _values(self, state: _Group, criterion: str, r: int) -> np.ndarray:
        """The criterion's scores of trials 0..r-1, shape (r, planned k's): NaN where a cell is not ok; Lange's
        divided by the random-labeling baseline (the score the report decides on, reduce.criterion_scores)."""
        d, i, m = state.index
        ks = list(state.planned)
        raw = np.asarray(self.arrays[criterion][d, i, m, :, :r])[ks]
        ok = np.asarray(self.arrays["status"][d, i, m, :, :r])[ks] == Status.OK
        values = np.where(ok, raw, np.nan)
        if get_criterion(criterion).normalised_by_random_labels and self.baseline is not None:
            values = values / self.baseline[i, ks][:, None]
        return values.T

    def _reduced_look(self, state: _Group, criterion: str, r: int) -> tuple[Race, tuple[int, ...]] | None:
        """The bootstrap look of a criterion reduced from stored clusterings, on the clusterings of trials
        0..r-1 whose cells are ok at every k (as the report reads them): its race at this look and its arms
        (cube k indices); None when no clustering is stored. The bootstrap is the report's
        (:func:`ordercube.pipeline.reduce.assignments.group_reduction`, the same stream): at the last look the
        share recorded is the share the report gives."""
        from ordercube.pipeline.reduce.assignments import LEVEL, centred_interval, clusterings_of, group_reduction

        d, i, m = state.index
        record = get_criterion(criterion)
        prefix = self.cube.dataset().isel(trial=slice(0, r))
        clusterings = clusterings_of(prefix, self.coords.dataset[d], int(self.coords.n[i]), self.coords.model[m])
        if not clusterings.ks:
            return None
        options = record.resolve(self.methods[self.coords.model[m]].criterion_options.get(criterion, {}))
        # the output its rule reads (Decision.output: a relative change of the curve, say, rather than the curve)
        curve, replicates = group_reduction(clusterings, {criterion: options}, state.spec.replicates)[record.decided_on]
        k_list = [int(k) for k in self.coords.k]
        arms = tuple(k_list.index(int(k)) for k in clusterings.ks)
        low, high = centred_interval(curve, replicates.T, LEVEL)  # the report's interval of each k
        state.curves[criterion] = {"rule": "bootstrap", "replicates": state.spec.replicates, "interval": LEVEL,
                                   "output": record.decided_on,
                                   "k": [int(k) for k in clusterings.ks],
                                   **{name: [None if np.isnan(v) else float(v) for v in values]
                                      for name, values in (("curve", curve), ("lo", low), ("hi", high))}}
        outcome = bootstrap_look(curve, replicates, record.decision, state.spec.looks, state.look,
                                 delta=state.spec.delta, epsilon=state.spec.epsilon)
        return outcome, arms

    def _decide(self, state: _Group) -> None:
        r = state.spec.looks[state.look]
        first = state.spec.looks[0]
        in_play: set[int] = set()
        for criterion in state.criteria:
            if is_reduced(criterion):
                if criterion in state.races and state.races[criterion][0].reason != "running":
                    continue  # stopped at an earlier look (other criteria go on): its stop stands
                look = self._reduced_look(state, criterion, r)
                if look is None:
                    continue
                state.races[criterion] = look
                if look[0].reason == "running":
                    in_play |= {look[1][a] for a in look[0].active}
                continue
            values = self._values(state, criterion, r)
            arms = tuple(k for k, column in zip(state.planned, values[:first].T) if not np.isnan(column).all())
            columns = [state.planned.index(k) for k in arms]
            if not arms:
                continue
            outcome = race_by(get_criterion(criterion).decision, values[:, columns], state.spec.looks,
                              delta=state.spec.delta, epsilon=state.spec.epsilon, upto=r,
                              mode=state.spec.mode,
                              ranges=score_ranges(criterion, None if self.baseline is None else
                                                  self.baseline[state.index[1], list(arms)], len(arms))
                              if state.spec.mode in BOUNDED else None)
            state.races[criterion] = (outcome, arms)
            if outcome.reason == "running":
                in_play |= {arms[a] for a in outcome.active}
        if in_play and state.joint:
            in_play = set(state.planned)
        state.stopped = not in_play
        state.in_play = tuple(sorted(in_play))

    def _finish(self, state: _Group) -> None:
        """Store the cells the group never needs as skipped and its decision record."""
        d, i, m = state.index
        r_stop = state.spec.looks[state.look]
        leftover = self.todo[d, i, m] & self.mask[d, i, m]
        ks = self.coords.k
        reasons = ", ".join(f"{name} {outcome.reason}" for name, (outcome, _) in state.races.items())
        variables = [v for name in state.criteria if not is_reduced(name) for v in get_criterion(name).variables]
        rows = tuple(int(k) for k in np.flatnonzero(leftover.any(axis=1)))
        trials = tuple(int(t) for t in np.flatnonzero(leftover.any(axis=0)))
        if rows:
            # one block over the rows and trials concerned, the cells it holds that were computed written back
            # as they are: one write per storage chunk (a write per k row read and rewrote each chunk per k)
            selection = (d, i, m, list(rows), list(trials))
            current = {name: np.asarray(self.arrays[name].get_orthogonal_selection(selection))
                       for name in (*variables, "status", "reason", "seconds")}
            skip = leftover[np.ix_(rows, trials)]
            reason = current["reason"].astype(object)
            for j, row in enumerate(rows):
                left = [outcome.trials[arms.index(row)] for outcome, arms in state.races.values()
                        if row in arms and outcome.trials[arms.index(row)] < r_stop]
                reason[j, skip[j]] = (f"adaptive: k = {ks[row]} eliminated at r = {max(left)}"
                                      if left and len(left) == len(state.races)
                                      else f"adaptive: stopped at r = {r_stop} ({reasons})")
            self.arrays.write(Chunk(d, i, m, rows, trials), BlockResult(
                values={name: np.where(skip, np.nan, current[name]) for name in variables},
                status=np.where(skip, Status.SKIPPED, current["status"]).astype(np.int8), reason=reason,
                seconds=np.where(skip, 0.0, current["seconds"])))
            self.skipped += int(skip.sum())
        self.todo[d, i, m] = False
        self.records[f"{self.coords.dataset[d]}|{self.coords.n[i]}|{self.coords.model[m]}"] = self._record(state, r_stop)
        self.cube.attrs[ADAPTIVE_ATTRIBUTE] = json.dumps(self.records)

    def _record(self, state: _Group, r_stop: int) -> dict[str, Any]:
        d, i, m = state.index
        ks = self.coords.k
        status = np.asarray(self.arrays["status"][d, i, m])
        planned = self.mask[d, i, m]
        criteria = {}
        for name, (outcome, arms) in state.races.items():
            k_hat = int(ks[arms[outcome.choice]]) if outcome.choice >= 0 else -1  # -1: no k above the threshold
            criteria[name] = {"reason": outcome.reason, "r_stop": outcome.stop, "k_hat": k_hat,
                              "in_play": [int(ks[arms[a]]) for a in outcome.active],
                              "eliminated": [[int(ks[arms[a]]) for a in gone] for gone in outcome.eliminated]}
            if name in state.curves:  # a reduced criterion: the bootstrap's share of k̂, and the curve's interval
                criteria[name].update({"k_hat_share": outcome.share, "level": outcome.level, **state.curves[name]})
        return {**state.spec.record(), "dataset": self.coords.dataset[d], "n": int(self.coords.n[i]),
                "method": self.coords.model[m], "r_stop": r_stop,
                "cells": int((planned & (status != Status.PENDING) & (status != Status.SKIPPED)).sum()),
                "budget": int(planned.sum()), "criteria": criteria}
