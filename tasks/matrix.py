"""A block of cells for a matrix model whose order is a rank (seed 004 §2.4-2.6).

A trial draws its noise and its rows once (:class:`tasks.datasets.matrices.MatrixSource`, from the trial's
stream, shared by every method and k of the trial: paired comparisons); the method's model then computes
every criterion for every k of the trial from one fit (:mod:`tasks.algorithms.matrix_models`), with BLAS held
to one thread (a process runs one task per core).
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from tasks.algorithms import get_algorithm
from tasks.cell import BlockResult, BlockSpec, Status, describe
from tasks.datasets.matrices import MatrixSource
from tasks.seeding import Purpose, stream


def run_matrix_block(spec: BlockSpec, source: MatrixSource) -> BlockResult:
    """Every (k, trial) cell of ``spec``. A rank above min(training rows, features) is infeasible; a failing draw
    or fit fails the trial's cells, and the block goes on."""
    algorithm = get_algorithm(spec.algorithm)
    params = dict(spec.algorithm_params)
    shape = (len(spec.ks), len(spec.trials))
    values = {variable: np.full(shape, np.nan) for variable in spec.variables}
    status = np.full(shape, Status.OK, dtype=np.int8)
    reason = np.full(shape, "", dtype=object)
    seconds = np.zeros(shape)
    for j, trial in enumerate(spec.trials):
        started = time.perf_counter()
        try:
            data = source.draw_matrix(spec.n, stream(spec.root_seed, Purpose.DRAW, spec.dataset_id, spec.n, trial))
            most = min(data.first.shape)  # the training rows' SVD (or factors) has no rank beyond
            feasible = [k for k in spec.ks if algorithm.feasible(k, most)]
            computed = {}
            if feasible:
                rng = stream(spec.root_seed, Purpose.FIT, spec.dataset_id, spec.n, trial, spec.method_id, 0, 0)
                with threadpool_limits(limits=1):
                    computed = algorithm.orders(data, feasible, spec.criteria, rng, **params)
                missing = [variable for variable in values if variable not in computed]
                if missing:  # the config check refuses this
                    raise ValueError(f"{spec.algorithm} did not compute {missing} for this trial")
        except Exception as error:  # a failing trial is data: its cells record why, the block goes on
            status[:, j], reason[:, j] = Status.FAILED, describe(error)
            seconds[:, j] = (time.perf_counter() - started) / len(spec.ks)
            continue
        for i, k in enumerate(spec.ks):
            if k not in feasible:
                status[i, j] = Status.INFEASIBLE
                reason[i, j] = (f"rank k = {k} exceeds the rank the trial's training rows allow, {most} "
                                f"({data.first.shape[0]} rows x {data.first.shape[1]} features; {spec.algorithm})")
                continue
            at = feasible.index(k)
            for variable in values:
                values[variable][i, j] = computed[variable][at]
        seconds[:, j] = (time.perf_counter() - started) / len(spec.ks)
    return BlockResult(values=values, status=status, reason=reason, seconds=seconds)
