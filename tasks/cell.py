"""The one function a task calls: compute a block of (k, trial) cells for one dataset, n and method.

For each trial the sample is drawn and split once and shared by every k; for each (trial, k) the two
halves are clustered once and every criterion of the method reads the same fits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from enum import IntEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tasks.algorithms import Algorithm, get_algorithm
from tasks.criteria import TrialFits, TrialSample, get_criterion
from tasks.datasets.sources import Source
from tasks.predictors import get_predictor
from tasks.seeding import Purpose, stream


class Status(IntEnum):
    """Per-cell status codes as stored in the cube (0 is the fill value: not computed yet)."""

    PENDING = 0
    OK = 1
    FAILED = 2
    INFEASIBLE = 3
    CRASHED = 4  # its worker process died computing it, every time (isolated by the driver)
    SKIPPED = 5  # not needed by the adaptive rule (pipeline.rounds): the reason names the look; a later run may fill it


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
    criterion_options: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    # A classifier's learning set (Daudin & Mary-Huard 2008): tasks.supervised.LEARN_HALF (0), LEARN_ALL (-1) or a number of
    # points, shared among the classes in proportion; or explicit counts per class code.
    learning: int = 0
    learning_per_class: tuple[int, ...] = ()

    @property
    def variables(self) -> list[str]:
        """The cube variables the block writes: every output of every criterion of the method."""
        return [variable for name in self.criteria for variable in get_criterion(name).variables]


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


@dataclass(frozen=True)
class TrialOutcome:
    """One trial of a kernel that computes every k at once (a classifier, a matrix model).

    ``values`` maps every variable to its values at the ``feasible`` ks, in their order; ``infeasible(k)`` says
    why another k of the block could not be computed in this trial.
    """

    feasible: list[int]
    values: dict[str, NDArray[np.float64]]
    infeasible: Callable[[int], str]


def run_joint_block(spec: BlockSpec, compute_trial: Callable[[int], TrialOutcome]) -> BlockResult:
    """Every (k, trial) cell of ``spec`` from one ``compute_trial(trial)`` per trial; a trial that raises fails its
    cells (the reason recorded) and the block goes on; its time is shared equally by its cells."""
    shape = (len(spec.ks), len(spec.trials))
    values = {variable: np.full(shape, np.nan) for variable in spec.variables}
    status = np.full(shape, Status.OK, dtype=np.int8)
    reason = np.full(shape, "", dtype=object)
    seconds = np.zeros(shape)
    for j, trial in enumerate(spec.trials):
        started = time.perf_counter()
        try:
            outcome = compute_trial(trial)
            missing = [variable for variable in values if outcome.feasible and variable not in outcome.values]
            if missing:  # the config checks refuse this
                raise ValueError(f"{spec.algorithm} did not compute {missing} for this trial")
        except Exception as error:  # a failing trial is data: its cells record why, the block goes on
            status[:, j], reason[:, j] = Status.FAILED, describe(error)
            seconds[:, j] = (time.perf_counter() - started) / len(spec.ks)
            continue
        for i, k in enumerate(spec.ks):
            if k not in outcome.feasible:
                status[i, j], reason[i, j] = Status.INFEASIBLE, outcome.infeasible(k)
                continue
            at = outcome.feasible.index(k)
            for variable in values:
                values[variable][i, j] = outcome.values[variable][at]
        seconds[:, j] = (time.perf_counter() - started) / len(spec.ks)
    return BlockResult(values=values, status=status, reason=reason, seconds=seconds)


Labels = NDArray[np.int64]


def _fit_stream(spec: BlockSpec, trial: int, k: int, part: int) -> np.random.Generator:
    """The algorithm's randomness for one half (``part`` 0 or 1) of one trial, for one k (0: all k)."""
    return stream(spec.root_seed, Purpose.FIT, spec.dataset_id, spec.n, trial, spec.method_id, k, part)


Fit = tuple[Labels, Labels, Any, Any]  # each half's labels, then each half's fitted model (None: not asked for)


def _fit_halves(
    algorithm: Algorithm, params: dict[str, Any], first: NDArray[np.float64], second: NDArray[np.float64],
    ks: list[int], rng_for: Callable[[int, int], np.random.Generator], *, with_models: bool = False,
) -> tuple[dict[int, Fit | Exception], dict[int, float]]:
    """Both halves clustered for every k: per k, or all k at once when the algorithm can share work.

    Returns the labels and models (or the exception that stopped the fit) and the fit time charged to
    each k. ``with_models``: a criterion reads the fitted models, so the algorithm's ``fit`` gives labels
    and model together (the same labels as ``cluster``, from the same stream). An algorithm's randomness
    for one k comes from ``rng_for(k, half)``; a joint fit of all k uses ``rng_for(0, half)``.
    """
    fitted: dict[int, Fit | Exception] = {}
    seconds: dict[int, float] = {}
    if algorithm.cluster_many is not None and ks:
        started = time.perf_counter()
        try:
            on_first = algorithm.cluster_many(first, ks, rng_for(0, 0), **params)
            on_second = algorithm.cluster_many(second, ks, rng_for(0, 1), **params)
            fitted = {k: (on_first[k], on_second[k], None, None) for k in ks}
        except Exception as error:  # every k of the joint fit fails with it
            fitted = {k: error for k in ks}
        seconds = dict.fromkeys(ks, (time.perf_counter() - started) / len(ks))
        return fitted, seconds
    for k in ks:
        started = time.perf_counter()
        try:
            if with_models and algorithm.fit is not None:
                (labels_first, model_first), (labels_second, model_second) = (
                    algorithm.fit(first, k, rng_for(k, 0), **params), algorithm.fit(second, k, rng_for(k, 1), **params))
                fitted[k] = (labels_first, labels_second, model_first, model_second)
            else:
                fitted[k] = (algorithm.cluster(first, k, rng_for(k, 0), **params),
                             algorithm.cluster(second, k, rng_for(k, 1), **params), None, None)
        except Exception as error:
            fitted[k] = error
        seconds[k] = time.perf_counter() - started
    return fitted, seconds


def _whole_sample(spec: BlockSpec, trial: int, data: Any, ks: list[int], fits: dict[int, TrialFits],
                  algorithm: Algorithm, params: dict[str, Any]) -> TrialSample:
    """The trial's whole sample, with the method's algorithm and streams, for Gap, Clest, BIC and AIC."""
    ids = (spec.dataset_id, spec.n, trial)

    def fit_rng(k: int, key: tuple[int, int, int, int]) -> np.random.Generator:
        return stream(spec.root_seed, Purpose.SAMPLE_FIT, *ids, spec.method_id, k, *key)

    def cluster(X: NDArray[np.float64], wanted: list[int], key: tuple[int, int, int, int]) -> dict[int, Labels]:
        if algorithm.cluster_many is not None:
            return algorithm.cluster_many(X, wanted, fit_rng(0, key), **params)
        return {k: algorithm.cluster(X, k, fit_rng(k, key), **params) for k in wanted}

    return TrialSample(X=np.concatenate([data.first, data.second]), ks=ks, fits=fits, cluster=cluster,
                       rng=lambda key: stream(spec.root_seed, Purpose.REFERENCE, *ids, *key), fit_rng=fit_rng,
                       algorithm=spec.algorithm, params=params)


def run_block(spec: BlockSpec, source: Source) -> BlockResult:
    """Compute every (k, trial) cell of ``spec`` on points drawn from ``source``.

    An exception inside a cell is recorded as that cell's failure and the block goes on; a k that
    cannot be fitted on a half is recorded as infeasible. A criterion on the whole sample that fails
    fails the trial's cells.
    """
    algorithm = get_algorithm(spec.algorithm)
    if getattr(source, "objects", "points") == "dissimilarity":  # a distances dataset: the method on dissimilarities
        algorithm = algorithm.on_dissimilarities()
    if algorithm.classify is not None:  # a classifier: labels are the response, not halves to cluster
        from tasks.supervised import run_supervised_block

        return run_supervised_block(spec, source)
    if algorithm.orders is not None:  # a matrix model: every rank of a trial from one fit
        from tasks.matrix import run_matrix_block

        return run_matrix_block(spec, source)  # type: ignore[arg-type]
    params = dict(spec.algorithm_params)
    predictor = get_predictor(spec.predictor)
    criteria = [get_criterion(name) for name in spec.criteria]
    per_k = [criterion for criterion in criteria if criterion.evaluate is not None]
    per_trial = [criterion for criterion in criteria if criterion.evaluate_trial is not None]
    options = {name: dict(values) for name, values in spec.criterion_options}
    with_eval = any(criterion.needs_evaluation_sample for criterion in criteria)
    with_models = any(criterion.models is not None for criterion in criteria)
    shape = (len(spec.ks), len(spec.trials))
    values = {variable: np.full(shape, np.nan) for variable in spec.variables}
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
        feasible = [k for k in spec.ks if algorithm.feasible(k, half)]
        fitted, fit_seconds = _fit_halves(algorithm, params, data.first, data.second, feasible,
                                          partial(_fit_stream, spec, trial), with_models=with_models)
        fits_by_k: dict[int, TrialFits] = {}
        for i, k in enumerate(spec.ks):
            started = time.perf_counter()
            if k not in fitted:
                status[i, j] = Status.INFEASIBLE
                reason[i, j] = (f"{algorithm.name} needs {algorithm.min_points_per_cluster} points per cluster: "
                                f"k={k} does not fit a half of {half} points")
                continue
            try:
                outcome = fitted[k]
                if isinstance(outcome, BaseException):
                    raise outcome
                fits = TrialFits(first=data.first, second=data.second, labels_first=outcome[0],
                                 labels_second=outcome[1], k=k, predictor=predictor, evaluation=data.evaluation,
                                 pairing=pairing, truth=data.truth, model_first=outcome[2], model_second=outcome[3],
                                 model_kind=algorithm.model, paired=data.paired)
                fits_by_k[k] = fits
                for criterion in per_k:
                    if k >= criterion.min_k:  # below it the value stays NaN: not applicable
                        values[criterion.name][i, j] = criterion.evaluate(fits, **options.get(criterion.name, {}))
            except Exception as error:  # a failing cell is data: recorded, and the block goes on
                status[i, j], reason[i, j] = Status.FAILED, describe(error)
                for variable in values:
                    values[variable][i, j] = np.nan
            seconds[i, j] = time.perf_counter() - started + draw_share + fit_seconds.get(k, 0.0)
        if per_trial and feasible:
            started = time.perf_counter()
            sample = _whole_sample(spec, trial, data, feasible, fits_by_k, algorithm, params)
            rows = [i for i, k in enumerate(spec.ks) if k in feasible]
            try:
                for criterion in per_trial:
                    for variable, by_k in criterion.evaluate_trial(sample, **options.get(criterion.name, {})).items():
                        for i in rows:
                            k = spec.ks[i]
                            if k >= criterion.min_k and k in by_k:
                                values[variable][i, j] = by_k[k]
            except Exception as error:  # the trial's whole-sample criteria failed: so do its cells
                for i in rows:
                    if status[i, j] == Status.OK:
                        status[i, j], reason[i, j] = Status.FAILED, describe(error)
                        for variable in values:
                            values[variable][i, j] = np.nan
            seconds[rows, j] += (time.perf_counter() - started) / len(rows)
    return BlockResult(values=values, status=status, reason=reason, seconds=seconds)
