"""A block of cells for a matrix model whose order is a rank (Frank et al. 2011, Secs. 4-5).

A trial draws its noise and its rows once (:class:`tasks.datasets.matrices.MatrixSource`, from the trial's
stream, shared by every method and k of the trial: paired comparisons); the method's model then computes
every criterion for every k of the trial from one fit (:mod:`tasks.algorithms.matrix_models`), with BLAS held
to one thread (a process runs one task per core).
"""

from __future__ import annotations

from threadpoolctl import threadpool_limits

from tasks.algorithms import get_algorithm
from tasks.cell import BlockResult, BlockSpec, TrialOutcome, run_joint_block
from tasks.datasets.matrices import MatrixSource
from tasks.seeding import Purpose, stream


def run_matrix_block(spec: BlockSpec, source: MatrixSource) -> BlockResult:
    """Every (k, trial) cell of ``spec``. A rank above min(training rows, features) is infeasible; a failing draw
    or fit fails the trial's cells, and the block goes on."""
    algorithm = get_algorithm(spec.algorithm)
    params = dict(spec.algorithm_params)

    def compute_trial(trial: int) -> TrialOutcome:
        data = source.draw_matrix(spec.n, stream(spec.root_seed, Purpose.DRAW, spec.dataset_id, spec.n, trial))
        most = min(data.first.shape)  # the training rows' SVD (or factors) has no rank beyond
        feasible = [k for k in spec.ks if algorithm.feasible(k, most)]
        computed = {}
        if feasible:
            rng = stream(spec.root_seed, Purpose.FIT, spec.dataset_id, spec.n, trial, spec.method_id, 0, 0)
            with threadpool_limits(limits=1):
                computed = algorithm.orders(data, feasible, spec.criteria, rng, **params)
        return TrialOutcome(feasible, computed, lambda k: f"rank k = {k} exceeds the rank the trial's training rows "
                                                          f"allow, {most} ({data.first.shape[0]} rows x "
                                                          f"{data.first.shape[1]} features; {spec.algorithm})")

    return run_joint_block(spec, compute_trial)
