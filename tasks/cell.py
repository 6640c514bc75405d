"""The one function a task calls: compute a block of (k, trial) cells for one dataset, n and method.

For each trial the sample is drawn and split once and shared by every k; for each (trial, k) the two
halves are clustered once and every criterion of the method reads the same fits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tasks.algorithms import get_algorithm
from tasks.criteria import TrialFits, get_criterion
from tasks.datasets.sources import Source
from tasks.predictors import get_predictor
from tasks.seeding import Purpose, stream


class Status(IntEnum):
    """Per-cell status codes as stored in the cube (0 is the fill value: not computed yet)."""

    PENDING = 0
    OK = 1
    FAILED = 2
    INFEASIBLE = 3


@dataclass(frozen=True)
class BlockSpec:
    """What to compute, by coordinate values; ids are stable hashes of the dataset and method names."""

    root_seed: int
    dataset_id: int
    n: int
    method_id: int
    algorithm: str
    algorithm_params: tuple[tuple[str, Any], ...]
    predictor: str
    criteria: tuple[str, ...]
    ks: tuple[int, ...]
    trials: tuple[int, ...]


@dataclass(frozen=True)
class BlockResult:
    """Per-cell outputs, each of shape (len(ks), len(trials)).

    ``values`` maps each criterion to its raw values (NaN where the cell is not ok); ``reason`` holds
    the failure or infeasibility message ('' where ok); ``seconds`` the compute time of each cell.
    """

    values: dict[str, NDArray[np.float64]]
    status: NDArray[np.int8]
    reason: NDArray[np.object_]
    seconds: NDArray[np.float64]


def describe(error: BaseException) -> str:
    """A one-line failure reason."""
    return f"{type(error).__name__}: {error}"


def run_block(spec: BlockSpec, source: Source) -> BlockResult:
    """Compute every (k, trial) cell of ``spec`` on points drawn from ``source``.

    An exception inside a cell is recorded as that cell's failure and the block goes on; a k that
    cannot be fitted on a half is recorded as infeasible.
    """
    algorithm = get_algorithm(spec.algorithm)
    params = dict(spec.algorithm_params)
    predictor = get_predictor(spec.predictor)
    criteria = [get_criterion(name) for name in spec.criteria]
    with_eval = any(criterion.needs_evaluation_sample for criterion in criteria)
    shape = (len(spec.ks), len(spec.trials))
    values = {criterion.name: np.full(shape, np.nan) for criterion in criteria}
    status = np.full(shape, Status.OK, dtype=np.int8)
    reason = np.full(shape, "", dtype=object)
    seconds = np.zeros(shape)
    ids = (spec.dataset_id, spec.n)
    for j, trial in enumerate(spec.trials):
        started = time.perf_counter()
        try:
            data = source.draw(spec.n, stream(spec.root_seed, Purpose.DRAW, *ids, trial),
                               stream(spec.root_seed, Purpose.EVAL, *ids, trial), with_eval=with_eval)
            pairing = None
            if data.evaluation is not None:
                pairing = stream(spec.root_seed, Purpose.PAIRING, *ids, trial).permutation(data.evaluation.shape[0])
        except Exception as error:  # a failing draw fails the trial's cells, not the block
            status[:, j], reason[:, j] = Status.FAILED, describe(error)
            continue
        draw_share = (time.perf_counter() - started) / len(spec.ks)
        half = data.first.shape[0]
        for i, k in enumerate(spec.ks):
            started = time.perf_counter()
            if not algorithm.feasible(k, half):
                status[i, j] = Status.INFEASIBLE
                reason[i, j] = (f"{algorithm.name} needs {algorithm.min_points_per_cluster} points per cluster: "
                                f"k={k} does not fit a half of {half} points")
                continue
            try:
                fits = TrialFits(
                    first=data.first,
                    second=data.second,
                    labels_first=algorithm.cluster(
                        data.first, k, stream(spec.root_seed, Purpose.FIT, *ids, trial, spec.method_id, k, 0), **params),
                    labels_second=algorithm.cluster(
                        data.second, k, stream(spec.root_seed, Purpose.FIT, *ids, trial, spec.method_id, k, 1), **params),
                    k=k, predictor=predictor, evaluation=data.evaluation, pairing=pairing,
                )
                for criterion in criteria:
                    values[criterion.name][i, j] = criterion.evaluate(fits)
            except Exception as error:  # a failing cell is data: recorded, and the block goes on
                status[i, j], reason[i, j] = Status.FAILED, describe(error)
                for criterion in criteria:
                    values[criterion.name][i, j] = np.nan
            seconds[i, j] = time.perf_counter() - started + draw_share
    return BlockResult(values=values, status=status, reason=reason, seconds=seconds)
