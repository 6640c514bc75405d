"""The matrix-model family's trial: an order that is a rank (Frank, Chehreghani & Buhmann 2011, section 2.4-2.6).

A trial draws its noise and its rows once (:class:`ordercube.tasks.datasets.matrices.MatrixSource`, from the trial's
stream, shared by every method and k of the trial: paired comparisons); each criterion of the method then
computes every k of the trial with the computation it registers for the method's model
(``Criterion.computations``, :mod:`ordercube.tasks.criteria.matrix`), with BLAS held to one thread (a process runs one task
per core).
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from ordercube.tasks.algorithms.kinds import MatrixModel
from ordercube.tasks.criteria import get_criterion
from ordercube.tasks.datasets.matrices import MatrixSource
from ordercube.tasks.seeding import Purpose, stream
from ordercube.tasks.trial import BlockSpec, TrialOutcome, TrialRunner, scattered


def trial_runner(algorithm: MatrixModel, spec: BlockSpec, source: MatrixSource) -> TrialRunner:
    """``compute_trial(trial)``: a rank above min(training rows, features) is infeasible; a failing draw or fit
    raises (the engine fails the trial's cells)."""
    computations = []
    for name in spec.criteria:
        criterion = get_criterion(name)
        if algorithm.name not in criterion.computations:  # the config check refuses this
            raise ValueError(f"{name} has no computation for {algorithm.name}; it computes for "
                             f"{sorted(criterion.computations)}")
        computations.append((name, criterion.computations[algorithm.name]))

    def compute_trial(trial: int) -> TrialOutcome:
        data = source.draw_matrix(spec.n, stream(spec.root_seed, Purpose.DRAW, spec.dataset_id, spec.n, trial))
        most = min(data.first.shape)  # the training rows' SVD (or factors) has no rank beyond
        feasible = [k for k in spec.ks if algorithm.feasible(k, most)]
        computed = {}
        if feasible:
            rng = stream(spec.root_seed, Purpose.FIT, spec.dataset_id, spec.n, trial, spec.method_id, 0, 0)
            ranks = np.asarray(feasible, dtype=np.int64)
            with threadpool_limits(limits=1):
                computed = {name: compute(data, ranks, rng) for name, compute in computations}
        infeasible = {k: f"rank k = {k} exceeds the rank the trial's training rows allow, {most} "
                         f"({data.first.shape[0]} rows x {data.first.shape[1]} features; {spec.algorithm})"
                      for k in spec.ks if k not in feasible}
        return TrialOutcome(values=scattered(spec.ks, feasible, computed), infeasible=infeasible)

    return compute_trial
