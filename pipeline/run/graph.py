"""From planned chunks to task payloads, and the function a Dask worker runs for one task.

Building the work (which chunks, which seeds) is kept apart from running it (``ordercube.pipeline.run.sweep``):
a task is a list of whole chunks of one dataset, each described by coordinate values only.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.pipeline.config.specs import Config
from ordercube.pipeline.cube.grid import Chunk, Coords
from ordercube.pipeline.system.memory import keep_freed_memory
from ordercube.pipeline.system.shared_store import share_within_machine
from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.cell import BlockSpec, run_block
from ordercube.tasks.datasets import ArraySource, SyntheticSource
from ordercube.tasks.datasets.matrices import MatrixSource
from ordercube.tasks.seeding import label_id


@dataclass(frozen=True)
class Task:
    """One unit of Dask work: chunks of a single dataset, with what each one computes."""

    dataset: str
    blocks: tuple[tuple[Chunk, BlockSpec], ...]
    objects: str = "points"  # the dataset's rows: points, or the nodes of a graph

    @property
    def cells(self) -> int:
        return sum(chunk.cells for chunk, _ in self.blocks)


def block_spec(config: Config, coords: Coords, chunk: Chunk) -> BlockSpec:
    """The coordinate values and method settings of one chunk."""
    dataset = coords.dataset[chunk.dataset]
    method = next(m for m in config.methods if m.name == coords.model[chunk.model])
    spec = next(d for d in config.datasets if d.name == dataset)
    return BlockSpec(
        root_seed=config.seed,
        dataset_id=label_id(dataset),
        n=coords.n[chunk.n],
        method_id=label_id(method.name),
        algorithm=method.algorithm,
        algorithm_params=tuple(sorted(method.params.items())),
        predictor=method.predictor,
        criteria=method.criteria,
        ks=tuple(coords.k[i] for i in chunk.k),
        trials=tuple(coords.trial[i] for i in chunk.trial),
        criterion_options=tuple((name, tuple(sorted(options.items())))
                                for name, options in sorted(method.criterion_options.items())),
        family_options=spec.family_options,
        scheme=method.scheme,
        scheme_params=tuple(sorted(method.scheme_params.items())),
        assignments=method.assignments,
    )


def build_tasks(config: Config, coords: Coords, groups: list[list[Chunk]]) -> list[Task]:
    objects = {d.name: d.objects for d in config.datasets}
    return [Task(dataset=coords.dataset[group[0].dataset],
                 blocks=tuple((chunk, block_spec(config, coords, chunk)) for chunk in group),
                 objects=objects.get(coords.dataset[group[0].dataset], "points"))
            for group in groups]


def isolate(task: Task) -> list[Task]:
    """``task`` cut into the smallest tasks that compute the same cells with the same bits: one cell
    each, or one trial (every k) for an algorithm that fits all k at once (its fit depends on the ks)."""
    pieces = []
    for chunk, spec in task.blocks:
        joint = get_algorithm(spec.algorithm).shares_fit_across_k
        k_groups = [tuple(zip(chunk.k, spec.ks))] if joint else [((i, k),) for i, k in zip(chunk.k, spec.ks)]
        for trial_index, trial in zip(chunk.trial, spec.trials):
            for group in k_groups:
                piece = Chunk(chunk.dataset, chunk.n, chunk.model, tuple(i for i, _ in group), (trial_index,))
                pieces.append(Task(task.dataset, ((piece, replace(spec, ks=tuple(k for _, k in group),
                                                                  trials=(trial,))),), task.objects))
    return pieces


class Computed(list):
    """The ``(chunk, result)`` pairs of one task as its worker computed them, with the task's own ``wall`` and
    ``cpu`` seconds there (its thread's, from the call to the return: the cells' kernels and the worker's
    bookkeeping around them: the source, run_block's gathering). A list, so callers that only want the
    results use it as one; it pickles with its two floats."""

    wall: float = 0.0
    cpu: float = 0.0

    @property
    def kernel(self) -> float:
        """The cells' own seconds (``BlockResult.seconds``): the kernels' share of ``wall``."""
        return float(sum(result.seconds.sum() for _, result in self))


def execute_task(task: Task, synthetic: SyntheticSource | MatrixSource | None, data: NDArray[np.float64] | None,
                 labels: NDArray[np.int64] | None = None) -> Computed:
    """Run on a worker: every block of ``task`` on its dataset (a generator, or a scattered array with
    its known classes, if any); timed as a whole (:class:`Computed`), twice per task, never per cell.
    The first task of a process sets its allocator to reuse freed arrays (:mod:`ordercube.pipeline.system.memory`)."""
    keep_freed_memory()
    share_within_machine()  # a local cluster's workers share what all of them would compute (Gap's references)
    started, cpu = time.perf_counter(), time.thread_time()
    if isinstance(synthetic, MatrixSource):  # a matrix dataset's recipe, with its clean matrix scattered as the array
        source: Any = replace(synthetic, clean=np.asarray(data))
    else:
        source = synthetic if synthetic is not None else ArraySource(np.asarray(data), labels, task.objects)
    computed = Computed((chunk, run_block(spec, source)) for chunk, spec in task.blocks)
    computed.wall, computed.cpu = time.perf_counter() - started, time.thread_time() - cpu
    return computed
