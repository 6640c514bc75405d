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

__all__ = ["BlockResult", "BlockSpec", "Status", "TrialOutcome", "assignment_shape", "describe", "run_block",
           "variables_of"]


def variables_of(spec: BlockSpec) -> list[str]:
    """The cube variables the block writes: every output of every criterion of the method computed in its trials
    (a criterion reduced from stored assignments, ``Criterion.reduce``, stores none)."""
    return [variable for name in spec.criteria for variable in get_criterion(name).variables
            if get_criterion(name).reduce is None]


def assignment_shape(spec: BlockSpec, source: Any) -> tuple[int, int] | None:
    """(parts, items) of each cell's stored assignments: the clusterings its scheme stores per trial and k
    (``Scheme.part_roles``) by the source's fixed items; None when the block stores none."""
    if not spec.assignments:
        return None
    from ordercube.tasks.schemes import scheme_of

    scheme, params = scheme_of(spec)
    items = getattr(source, "items", None)
    if items is None:  # the config refuses this: a generator's fresh points are not items
        raise ValueError("assignments are stored for datasets of fixed items only; this source draws fresh points")
    return len(scheme.part_roles(params)), int(items)


def run_block(spec: BlockSpec, source: Any) -> BlockResult:
    """Compute every (k, trial) cell of ``spec`` on data drawn from ``source``.

    A trial whose runner raises fails its cells (the reason recorded) and the block goes on; a k the runner
    reports infeasible or failed is recorded as such, its values NaN (a failed k keeps a value the runner
    computed apart from its failure, as a whole-sample criterion's). A trial's time is its ks' ``seconds``, or
    shared equally among them. A block whose method stores assignments (``spec.assignments``) gathers each ok
    cell's (``TrialOutcome.assignments``; an ok cell without them fails), -1 elsewhere.
    """
    algorithm = get_algorithm(spec.algorithm).on(getattr(source, "objects", None))
    compute_trial = algorithm.trial_runner(spec, source)
    variables = variables_of(spec)
    shape = (len(spec.ks), len(spec.trials))
    values = {variable: np.full(shape, np.nan) for variable in variables}
    status = np.full(shape, Status.OK, dtype=np.int8)
    reason = np.full(shape, "", dtype=object)
    seconds = np.zeros(shape)
    parts_items = assignment_shape(spec, source)
    assignments = None if parts_items is None else np.full((*shape, *parts_items), -1, dtype=np.int16)
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
            if assignments is not None and status[i, j] == Status.OK:
                _gather(assignments, i, j, k, outcome, status, reason, values)
        if outcome.seconds is None:
            seconds[:, j] = (time.perf_counter() - started) / len(spec.ks)
        else:
            seconds[:, j] = [outcome.seconds.get(k, 0.0) for k in spec.ks]
    return BlockResult(values=values, status=status, reason=reason, seconds=seconds, assignments=assignments)


def _gather(assignments: np.ndarray, i: int, j: int, k: int, outcome: TrialOutcome, status: np.ndarray,
            reason: np.ndarray, values: dict[str, np.ndarray]) -> None:
    """Cell (i, j)'s assignments from the trial's outcome into the block's; a cell whose assignments are missing or
    of the wrong shape fails (its values NaN): what is stored for an ok cell is always its clusterings."""
    given = None if outcome.assignments is None else outcome.assignments.get(k)
    expected = assignments.shape[2:]
    if given is not None and np.shape(given) == expected:
        assignments[i, j] = given
        return
    got = "none" if given is None else f"shape {np.shape(given)}"
    status[i, j] = Status.FAILED
    reason[i, j] = f"ValueError: the trial gave no assignments of shape {expected} at k={k} (got {got})"
    for variable in values:
        values[variable][i, j] = np.nan
