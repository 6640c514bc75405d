"""The grid: cube coordinates, the planned cells of a config, and the chunks that make up the work.

Dimension names (chosen so that ``cube.sel(name=value)`` works for each one):
``dataset``, ``n`` (sample size), ``model`` (a config *method*: ``sel(method=...)`` is taken by
xarray), ``k`` and ``trial`` (a *resample*: ``Dataset.resample`` is a method).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the config's modules import the registries: not needed to read a cube
    from ordercube.pipeline.config.specs import Config

DIMS = ("dataset", "n", "model", "k", "trial")
MAX_TRIALS_PER_CHUNK = 100


@dataclass(frozen=True)
class Coords:
    """Coordinate labels of a cube, in storage order (extensions append at the end)."""

    dataset: tuple[str, ...]
    n: tuple[int, ...]
    model: tuple[str, ...]
    k: tuple[int, ...]
    trial: tuple[int, ...]

    def as_dict(self) -> dict[str, tuple]:
        return {dim: getattr(self, dim) for dim in DIMS}

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(getattr(self, dim)) for dim in DIMS)


def config_coords(config: Config) -> Coords:
    """The coordinates a config asks for, in config order (sample sizes sorted)."""
    return Coords(
        dataset=tuple(d.name for d in config.datasets),
        n=tuple(sorted({n for d in config.datasets for n in d.n})),
        model=tuple(m.name for m in config.methods),
        k=config.k,
        trial=tuple(range(config.resamples)),
    )


def merge_coords(old: Coords, wanted: Coords) -> Coords:
    """``old`` with the labels of ``wanted`` it lacks appended, dimension by dimension."""
    merged = {}
    for dim in DIMS:
        have = getattr(old, dim)
        merged[dim] = have + tuple(v for v in getattr(wanted, dim) if v not in have)
    return Coords(**merged)


def default_chunks(config: Config) -> dict[str, int]:
    """One chunk per (dataset, n, model) holding every k and up to 100 trials (with an adaptive rule: the trials
    between two looks, their greatest common divisor)."""
    from ordercube.pipeline.config.adaptive import chunk_trials

    trials = (config.execution.trials_per_chunk or chunk_trials(config.adaptive)
              or min(config.resamples, MAX_TRIALS_PER_CHUNK))
    return {"dataset": 1, "n": 1, "model": 1, "k": len(config.k), "trial": trials}


def planned_mask(plan: Mapping, coords: Coords) -> np.ndarray:
    """Boolean array of the cube's shape: which cells the plan (see :func:`plan_of`) asks for."""
    datasets = plan["datasets"]
    per_dataset = np.array([[name in datasets and n in datasets[name]["n"] for n in coords.n] for name in coords.dataset])
    model = np.array([m in plan["methods"] for m in coords.model])
    k = np.array([k in plan["k"] for k in coords.k])
    trial = np.array([t < plan["resamples"] for t in coords.trial])
    return (per_dataset[:, :, None, None, None] & model[None, None, :, None, None]
            & k[None, None, None, :, None] & trial[None, None, None, None, :])


def plan_of(config: Config) -> dict:
    """The JSON-able plan kept in the cube's attributes: which cells the config asks for (``methods``: the
    criteria each method computes in its trials), and under ``reduced`` (only when some method has one) the
    criteria each method reduces from its stored assignments, with their options (see :func:`reduced_of`)."""
    plan = {
        "datasets": {d.name: {"n": list(d.n), "true_k": d.true_k} for d in config.datasets},
        "methods": {m.name: list(m.criteria) for m in config.methods},
        "k": list(config.k),
        "resamples": config.resamples,
    }
    reduced = {m.name: {name: dict(m.criterion_options.get(name, {})) for name in m.reduced}
               for m in config.methods if m.reduced}
    if reduced:
        plan[REDUCED] = reduced
    return plan


REDUCED = "reduced"  # the plan's key of the criteria reduced from stored assignments


def reduced_of(plan: Mapping) -> dict[str, dict[str, dict]]:
    """The criteria each method of a cube's plan (its ``ordercube_plan`` attribute, decoded) reduces from its
    stored assignments, with the options the config gave them: ``{method: {criterion: {option: value}}}``."""
    return {str(model): dict(criteria) for model, criteria in dict(plan.get(REDUCED) or {}).items()}


@dataclass(frozen=True)
class Chunk:
    """The cells to compute in one storage chunk: k indices x trial indices into the cube."""

    dataset: int
    n: int
    model: int
    k: tuple[int, ...]
    trial: tuple[int, ...]

    @property
    def cells(self) -> int:
        return len(self.k) * len(self.trial)


def chunks_to_compute(mask: np.ndarray, todo: np.ndarray | None, chunks: Mapping[str, int]) -> Iterator[Chunk]:
    """The cells still to compute (planned in ``mask`` and not done in ``todo``; ``todo`` None: every cell of
    ``mask``), chunk by chunk, in grid order.

    Within a chunk the k values and trials that hold such a cell form the block to compute; for the
    ways a grid grows (more trials, k, n, datasets, methods) that block holds exactly the new cells.
    A generator, one (dataset, n, model) slab at a time: the chunks of a 10^7-cell grid are never all in
    memory at once, and each slab's blocks are found with one reshape, not a Python loop per chunk.
    """
    kc, tc = chunks["k"], chunks["trial"]
    D, N, M, K, T = mask.shape
    k_blocks, t_blocks = -(-K // kc), -(-T // tc)
    slab = np.zeros((k_blocks * kc, t_blocks * tc), dtype=bool)
    for d in range(D):
        for i in range(N):
            for m in range(M):
                wanted = mask[d, i, m] if todo is None else mask[d, i, m] & todo[d, i, m]
                if not wanted.any():
                    continue
                slab[:K, :T] = wanted
                blocks = slab.reshape(k_blocks, kc, t_blocks, tc)
                ks_in = blocks.any(axis=3)  # (k block, k within it, trial block)
                trials_in = blocks.any(axis=1)  # (k block, trial block, trial within it)
                for a, b in zip(*np.nonzero(ks_in.any(axis=1))):
                    ks = (a * kc + np.flatnonzero(ks_in[a, :, b])).tolist()
                    trials = (b * tc + np.flatnonzero(trials_in[a, b])).tolist()
                    yield Chunk(d, i, m, tuple(ks), tuple(trials))


#: The engine's own time per cell (drawing the trial, the predictor, the bookkeeping of its values), whatever the
#: method: the reduced shamir_tishby2007_fig1 grid of benchmarks/cost_model.py (1,638 cells of exact 1-D k-means
#: at n = 64 and 128) took 0.19 ms of CPU time a cell, fits included, on this project's 2-core machine.
CELL_SECONDS = 1.5e-4


@dataclass(frozen=True)
class CellCost:
    """The estimated compute of one cell of a method on a dataset, built by the sweep from the declarations of
    the method's algorithm and criteria (:func:`ordercube.pipeline.run.sweep.cell_cost`).

    A cell costs ``fixed`` seconds, plus ``per_point`` seconds times ``n ** points_power`` times k (``per_order``:
    a fit per k) or divided among the chunk's ks (one fit serves every k of a trial), plus ``criteria(n)``: the
    criteria's own seconds beyond their fits.
    """

    fixed: float
    per_point: float
    points_power: float = 1.0
    per_order: bool = True
    criteria: Callable[[int], float] | None = None


def estimated_seconds(chunk: Chunk, coords: Coords, costs: Mapping[tuple[str, str], CellCost]) -> float:
    """A rough cost model for grouping work into tasks and choosing where to compute: the chunk's cells at their
    (dataset, model)'s :class:`CellCost`, at the chunk's n and mean k."""
    cost = costs[coords.dataset[chunk.dataset], coords.model[chunk.model]]
    n = coords.n[chunk.n]
    if cost.per_order:
        fits = cost.per_point * n**cost.points_power * sum(coords.k[i] for i in chunk.k) / len(chunk.k)
    else:
        fits = cost.per_point * n**cost.points_power / len(chunk.k)
    own = cost.criteria(n) if cost.criteria is not None else 0.0
    return chunk.cells * (cost.fixed + fits + own)


def split_by_cost(chunk: Chunk, cost: float, target: float) -> list[Chunk]:
    """``chunk`` cut along its trials into pieces of about ``target`` seconds (at least one trial each).

    Every piece lies inside the chunk: the single writer stores it as a region of that chunk.
    """
    pieces = min(len(chunk.trial), max(1, int(np.ceil(cost / target))))
    if pieces == 1:
        return [chunk]
    return [Chunk(chunk.dataset, chunk.n, chunk.model, chunk.k, tuple(int(t) for t in part))
            for part in np.array_split(np.array(chunk.trial), pieces)]


def task_target(total: float, *, task_seconds: float, workers: int) -> float:
    """The compute a task is cut to, for work of ``total`` estimated seconds (see :func:`group_into_tasks`)."""
    return max(min(task_seconds, total / (3 * workers)) if workers else task_seconds, 1e-6)


def group_into_tasks(chunks: Sequence[Chunk], coords: Coords, *, costs: Mapping[tuple[str, str], CellCost],
                     task_seconds: float, workers: int) -> list[list[Chunk]]:
    """Blocks of one dataset grouped until a task is worth about ``task_seconds`` of compute.

    Small n gets many chunks per task (per-task overhead is ~1-5 ms), large n a chunk cut into several
    tasks; a small grid is cut finer, so that every worker gets about three tasks (``workers = 0``: not cut
    finer, for a round of an adaptive group, which shares the workers with the other groups' rounds).
    """
    total = sum(estimated_seconds(chunk, coords, costs) for chunk in chunks)
    return list(iter_task_groups(chunks, coords, costs=costs,
                                 target=task_target(total, task_seconds=task_seconds, workers=workers)))


def iter_task_groups(chunks: Iterable[Chunk], coords: Coords, *, costs: Mapping[tuple[str, str], CellCost],
                     target: float) -> Iterator[list[Chunk]]:
    """:func:`group_into_tasks` as a generator over a stream of chunks, each task cut to ``target`` seconds
    (:func:`task_target`): a run holds only the tasks in flight, whatever the grid's size."""
    current: list[Chunk] = []
    cost = 0.0
    for chunk in chunks:
        chunk_cost = estimated_seconds(chunk, coords, costs)
        for piece in split_by_cost(chunk, chunk_cost, target):
            piece_cost = chunk_cost * len(piece.trial) / len(chunk.trial)
            if current and (piece.dataset != current[0].dataset or cost + piece_cost > target):
                yield current
                current, cost = [], 0.0
            current.append(piece)
            cost += piece_cost
    if current:
        yield current
