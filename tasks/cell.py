"""The one function a task calls: compute a block of (k, trial) cells for one dataset, n and method.

The block's algorithm record gives the trial runner of its family (:mod:`ordercube.tasks.trial`); this loop runs it once
per trial and lays its outcome into the cube's arrays. It knows no family: clusterers
(:mod:`ordercube.tasks.clustering`), classifiers (:mod:`ordercube.tasks.supervised`), matrix models
(:mod:`ordercube.tasks.matrix`) and a plug-in's own kinds all pass through it.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import ordercube.tasks.plugins  # noqa: F401  (installs the plug-in loader: a worker's lookups find plug-ins)
from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.criteria import get_criterion
from ordercube.tasks.trial import BlockResult, BlockSpec, Status, TrialOutcome, describe

__all__ = ["BlockResult", "BlockSpec", "Status", "TrialOutcome", "describe", "run_block", "variables_of"]


def variables_of(spec: BlockSpec) -> list[str]:
    """The cube variables the block writes: every output of every criterion of the method."""
    return [variable for name in spec.criteria for variable in get_criterion(name).variables]


def run_block(spec: BlockSpec, source: Any) -> BlockResult:
    """Compute every (k, trial) cell of ``spec`` on data drawn from ``source``.

    A trial whose runner raises fails its cells (the reason recorded) and the block goes on; a k the runner
    reports infeasible or failed is recorded as such, its values NaN (a failed k keeps a value the runner
    computed apart from its failure, as a whole-sample criterion's). A trial's time is its ks' ``seconds``, or
    shared equally among them.
    """
    algorithm = get_algorithm(spec.algorithm).on(getattr(source, "objects", None))
    compute_trial = algorithm.trial_runner(spec, source)
    variables = variables_of(spec)
    shape = (len(spec.ks), len(spec.trials))
    values = {variable: np.full(shape, np.nan) for variable in variables}
    status = np.full(shape, Status.OK, dtype=np.int8)
    reason = np.full(shape, "", dtype=object)
    seconds = np.zeros(shape)
    for j, trial in enumerate(spec.trials):
        started = time.perf_counter()
        try:
            outcome: TrialOutcome = compute_trial(trial)
            computed = any(k not in outcome.failed and k not in outcome.infeasible for k in spec.ks)
            missing = [variable for variable in variables if computed and variable not in outcome.values]
            if missing:  # the config checks refuse this
                raise ValueError(f"{spec.algorithm} did not compute {missing} for this trial")
        except Exception as error:  # a failing trial is data: its cells record why, the block goes on
            status[:, j], reason[:, j] = Status.FAILED, describe(error)
            seconds[:, j] = (time.perf_counter() - started) / len(spec.ks)
            continue
        for i, k in enumerate(spec.ks):
            if k in outcome.infeasible:
                status[i, j], reason[i, j] = Status.INFEASIBLE, outcome.infeasible[k]
                continue
            if k in outcome.failed:
                status[i, j], reason[i, j] = Status.FAILED, outcome.failed[k]
            for variable in variables:
                if variable in outcome.values:
                    values[variable][i, j] = outcome.values[variable][i]
        if outcome.seconds is None:
            seconds[:, j] = (time.perf_counter() - started) / len(spec.ks)
        else:
            seconds[:, j] = [outcome.seconds.get(k, 0.0) for k in spec.ks]
    return BlockResult(values=values, status=status, reason=reason, seconds=seconds)
