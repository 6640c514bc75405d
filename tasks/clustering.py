"""The clustering family's trial: a sample drawn and split into two halves, each half clustered once per k, and
every criterion of the method read from the same fits (Lange, Braun, Roth & Buhmann 2002; 2004).

For each trial the sample is drawn and split once and shared by every k; for each (trial, k) the two halves
are clustered once (with their fitted models when a criterion reads them) and every per-k criterion reads the
same :class:`~ordercube.tasks.criteria.base.TrialFits`; criteria on the whole sample (Gap, Clest, BIC, AIC) get a
:class:`~ordercube.tasks.criteria.base.TrialSample` once per trial. The runner is
:meth:`ordercube.tasks.algorithms.kinds.Clusterer.trial_runner`'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.algorithms.kinds import Clusterer
from ordercube.tasks.criteria import TrialFits, TrialSample, get_criterion
from ordercube.tasks.datasets.sources import Source, TrialData
from ordercube.tasks.predictors import get_predictor
from ordercube.tasks.seeding import Purpose, stream
from ordercube.tasks.trial import BlockSpec, TrialOutcome, TrialRunner, describe

Labels = NDArray[np.int64]
Fit = tuple[Labels, Labels, Any, Any]  # each half's labels, then each half's fitted model (None: not asked for)


def _fit_stream(spec: BlockSpec, trial: int, k: int, part: int) -> np.random.Generator:
    """The algorithm's randomness for one half (``part`` 0 or 1) of one trial, for one k (0: all k)."""
    return stream(spec.root_seed, Purpose.FIT, spec.dataset_id, spec.n, trial, spec.method_id, k, part)


def fit_halves(
    algorithm: Clusterer, params: dict[str, Any], first: NDArray[np.float64], second: NDArray[np.float64],
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


def _read_only(*arrays: Any) -> tuple[Any, ...]:
    """``arrays`` made read-only where they are arrays: a trial's halves and sample are read by every k's fit and
    every criterion in turn, so a kernel that changed them in place (scikit-learn's ``KMeans(copy_x=False)``
    centres its input and adds the mean back, moving its last bits) would change what the next one reads. Such a
    kernel now fails its cell, naming the read-only array, instead."""
    for array in arrays:
        if isinstance(array, np.ndarray):
            array.flags.writeable = False
    return arrays


def _whole_sample(spec: BlockSpec, trial: int, data: Any, ks: list[int], fits: dict[int, TrialFits],
                  algorithm: Clusterer, params: dict[str, Any]) -> TrialSample:
    """The trial's whole sample, with the method's algorithm and streams, for Gap, Clest, BIC and AIC."""
    ids = (spec.dataset_id, spec.n, trial)

    def fit_rng(k: int, key: tuple[int, int, int, int]) -> np.random.Generator:
        return stream(spec.root_seed, Purpose.SAMPLE_FIT, *ids, spec.method_id, k, *key)

    def cluster(X: NDArray[np.float64], wanted: list[int], key: tuple[int, int, int, int]) -> dict[int, Labels]:
        if algorithm.cluster_many is not None:
            return algorithm.cluster_many(X, wanted, fit_rng(0, key), **params)
        return {k: algorithm.cluster(X, k, fit_rng(k, key), **params) for k in wanted}

    def shared_cluster(X: NDArray[np.float64], wanted: list[int], key: tuple[int, int, int, int]) -> dict[int, Labels]:
        def rng(k: int) -> np.random.Generator:
            return stream(spec.root_seed, Purpose.SHARED_FIT, spec.dataset_id, spec.n, spec.method_id, k, *key)

        if algorithm.cluster_many is not None:
            return algorithm.cluster_many(X, wanted, rng(0), **params)
        return {k: algorithm.cluster(X, k, rng(k), **params) for k in wanted}

    scope = (spec.root_seed, spec.dataset_id, spec.n, spec.method_id, spec.algorithm, repr(sorted(params.items())))
    return TrialSample(X=_read_only(np.concatenate([data.first, data.second]))[0], ks=ks, fits=fits, cluster=cluster,
                       rng=lambda key: stream(spec.root_seed, Purpose.REFERENCE, *ids, *key), fit_rng=fit_rng,
                       algorithm=spec.algorithm, params=params,
                       shared_rng=lambda key: stream(spec.root_seed, Purpose.SHARED_REFERENCE, spec.dataset_id, spec.n,
                                                     *key),
                       shared_cluster=shared_cluster, scope=scope, fits_each_k=algorithm.cluster_many is None)


def trial_runner(algorithm: Clusterer, spec: BlockSpec, source: Source) -> TrialRunner:
    """``compute_trial(trial)`` for a clusterer: a failing fit or per-k criterion fails its k; a k that cannot be
    fitted on a half is infeasible; a criterion on the whole sample that fails fails the trial's fitted ks (a
    failing draw raises: the engine fails the trial's cells)."""
    params = dict(spec.algorithm_params)
    predictor = get_predictor(spec.predictor)
    criteria = [get_criterion(name) for name in spec.criteria]
    per_k = [criterion for criterion in criteria if criterion.evaluate is not None]
    per_trial = [criterion for criterion in criteria if criterion.evaluate_trial is not None]
    options = {name: dict(values) for name, values in spec.criterion_options}
    with_eval = any(criterion.needs_evaluation_sample for criterion in criteria)
    with_models = any(criterion.models is not None for criterion in criteria)
    variables = [variable for criterion in criteria for variable in criterion.variables]
    ids = (spec.dataset_id, spec.n)
    items = getattr(source, "items", None) if spec.assignments else None
    if spec.assignments and items is None:  # the config refuses this: a generator's points are not items
        raise ValueError("assignments are stored for datasets of fixed items only; this source draws fresh points")

    def compute_trial(trial: int) -> TrialOutcome:
        started = time.perf_counter()
        data = source.draw(spec.n, stream(spec.root_seed, Purpose.DRAW, *ids, trial),
                           stream(spec.root_seed, Purpose.EVAL, *ids, trial), with_eval=with_eval)
        _read_only(data.first, data.second, data.evaluation)
        pairing = None
        if data.evaluation is not None:
            pairing = stream(spec.root_seed, Purpose.PAIRING, *ids, trial).permutation(data.evaluation.shape[0])
        draw_share = (time.perf_counter() - started) / len(spec.ks)
        half = data.first.shape[0]
        feasible = [k for k in spec.ks if algorithm.feasible(k, half)]
        fitted, fit_seconds = fit_halves(algorithm, params, data.first, data.second, feasible,
                                         partial(_fit_stream, spec, trial), with_models=with_models)
        values = {variable: np.full(len(spec.ks), np.nan) for variable in variables}
        failed: dict[int, str] = {}
        infeasible: dict[int, str] = {}
        seconds: dict[int, float] = {}
        fits_by_k: dict[int, TrialFits] = {}
        for i, k in enumerate(spec.ks):
            started = time.perf_counter()
            if k not in fitted:
                infeasible[k] = algorithm.infeasible_reason(k, half)
                seconds[k] = 0.0
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
                        values[criterion.name][i] = criterion.evaluate(fits, **options.get(criterion.name, {}))
            except Exception as error:  # a failing cell is data: recorded, and the block goes on
                failed[k] = describe(error)
                for variable in values:
                    values[variable][i] = np.nan
            seconds[k] = time.perf_counter() - started + draw_share + fit_seconds.get(k, 0.0)
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
                                values[variable][i] = by_k[k]
            except Exception as error:  # the trial's whole-sample criteria failed: so do its fitted cells
                for i in rows:
                    k = spec.ks[i]
                    if k not in failed:
                        failed[k] = describe(error)
                        for variable in values:
                            values[variable][i] = np.nan
            share = (time.perf_counter() - started) / len(rows)
            for k in feasible:
                seconds[k] += share
        stored = None if items is None else halves_assignments(data, fitted, items)
        return TrialOutcome(values=values, failed=failed, infeasible=infeasible, seconds=seconds, assignments=stored)

    return compute_trial


def halves_assignments(data: TrialData, fitted: dict[int, Fit | Exception], items: int) -> dict[int, NDArray[np.int16]]:
    """Each fitted k's two clusterings as assignments of the dataset's ``items`` items (shape (2, items)): row 0
    the first half's cluster at its rows, row 1 the second half's at its rows, -1 at every item not in that half."""
    if data.first_rows is None or data.second_rows is None:
        raise ValueError("the source did not say which of its rows the halves hold")
    out = {}
    for k, outcome in fitted.items():
        if isinstance(outcome, BaseException):
            continue
        labels = np.full((2, items), -1, dtype=np.int16)
        labels[0, data.first_rows] = outcome[0]
        labels[1, data.second_rows] = outcome[1]
        out[k] = labels
    return out
