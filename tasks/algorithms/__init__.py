"""Clustering algorithms, registered by name.

An algorithm is ``cluster(X, k, rng, **params) -> labels`` plus a feasibility rule; it never keeps
state between calls, so one registry entry serves every cell.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from importlib import import_module
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tasks.algorithms.estimators import cluster_with, estimator_class, is_import_path, template
from tasks.params import Param, ParamError, check_params, choice, integer, number, show, undeclared

LINKAGES = ("ward", "average", "complete", "single")


@dataclass(frozen=True)
class Deferred:
    """A kernel imported on its first call (``"module:function"``): the registry names every algorithm, and
    a config, a status or a k-means sweep need not import numba, scipy's hierarchy or the linear algebra of
    the others (each costs 0.1-0.3 s of a command's start). Pickles as its name, for Dask."""

    target: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module, _, name = self.target.partition(":")
        return getattr(import_module(module), name)(*args, **kwargs)


@dataclass(frozen=True)
class Algorithm:
    """A registered clustering algorithm.

    Attributes
    ----------
    cluster : callable
        ``cluster(X, k, rng, **params)`` → labels of shape (n_samples,) in ``0..k-1``.
    cluster_many : callable or None
        ``cluster_many(X, ks, rng, **params)`` → ``{k: labels}``, for algorithms that share work
        across k (sorting, prefix sums, dynamic-programming layers); used instead of ``cluster``.
    max_features : int or None
        The largest number of features the algorithm accepts (1 for one-dimensional methods).
    seconds_per_point : float
        Rough compute time of one cell (both halves and the criteria) per point and cluster, used only
        to size tasks.
    defaults : mapping
        The parameters it accepts, with their defaults.
    min_points_per_cluster : int
        ``k`` is infeasible on ``n`` points when ``k * min_points_per_cluster > n``.
    ranges : mapping
        The values each parameter accepts (:class:`tasks.params.Param`), checked when a config is read;
        every parameter with a default must have one.
    check : callable or None
        ``check(params)`` tests the given parameters together and raises ``ParamError``.
    pair_bytes : float
        Memory per pair of points of a half for algorithms that hold pairwise matrices (used only to
        estimate a cell's memory at config load).
    classify : callable or None
        For a classifier whose order k is chosen with labels (seed 003; ``cluster`` is then never called):
        ``classify(X_learn, y_learn, X_test, y_test, ks, target, **params, n0=, swap_rule=)`` →
        ``{variable: values of shape (len(ks),)}`` for every supervised criterion it can compute.
    releases_gil : bool
        Whether its kernels spend their time outside the GIL (numba ``nogil``, numpy's array loops), so that a
        sweep in one process may compute on one thread per core instead of starting a cluster.
    fit : callable or None
        ``fit(X, k, rng, **params)`` → ``(labels, model)``: the same labels as ``cluster`` and the fitted model
        they come from, for criteria that read the model (seed 004's transfer costs); called instead of
        ``cluster`` when a criterion of the method needs it, so nothing is fitted twice.
    model : str or None
        The kind of model ``fit`` returns, matched against ``Criterion.models``: ``"mixture"`` (with
        ``score_samples(X)``, the log-likelihood per point), ``"centroids"`` (with ``centers`` of shape
        (k, n_features)).
    objects : str
        What the rows of a half are: ``"points"`` (feature vectors), ``"graph"`` (nodes, each row its edge
        weights; :mod:`tasks.algorithms.correlation` gives the layout) or ``"matrix"`` (the rows of a matrix
        model's data: image patches, users); data and algorithm must agree.
    orders : callable or None
        For a matrix model whose order is a rank (seed 004 §2.4-2.6; ``cluster`` is then never called):
        ``orders(trial, ks, criteria, rng, **params)`` → ``{variable: values of shape (len(ks),)}`` for every
        criterion asked for, from one fit per trial (:mod:`tasks.algorithms.matrix_models`).
    matrix : str or None
        The matrix data a matrix model takes: ``"real"`` (any matrix: image patches, a Boolean matrix as reals)
        or ``"boolean"`` (0/1 entries only).
    points_beyond_k : int
        A classifier's k is feasible on a learning set of at least ``k + points_beyond_k`` points: kNN's
        leave-one-out needs k other points (1); at most k intervals on fewer than k points is the fit of
        k = n again (0).
    dissimilarity_many : callable or None
        The same method on objects given by dissimilarities (a ``distances`` dataset):
        ``dissimilarity_many(half, ks, rng, **params)`` → ``{k: labels}``, ``half`` in
        :func:`tasks.datasets.sources.node_halves`' layout (:mod:`tasks.algorithms.dissimilarity`).
    dissimilarity_ranges : mapping
        Narrower ranges of parameters on dissimilarities (agglomerative: no Ward linkage).
    """

    name: str
    cluster: Callable[..., NDArray[np.int64]]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    min_points_per_cluster: int = 2
    cluster_many: Callable[..., dict[int, NDArray[np.int64]]] | None = None
    max_features: int | None = None
    seconds_per_point: float = 2.5e-6
    ranges: Mapping[str, Param] = field(default_factory=dict)
    check: Callable[[Mapping[str, Any]], None] | None = None
    pair_bytes: float = 0.0
    classify: Callable[..., dict[str, NDArray[np.float64]]] | None = None
    points_beyond_k: int = 1  # a classifier's learning set holds at least k + this many points
    releases_gil: bool = False  # its compiled kernels run outside the GIL: threads in one process scale
    fit: Callable[..., tuple[NDArray[np.int64], Any]] | None = None
    model: str | None = None
    objects: str = "points"  # or "graph": the rows of a half are nodes (tasks.algorithms.correlation's layout)
    orders: Callable[..., dict[str, NDArray[np.float64]]] | None = None
    matrix: str | None = None  # a matrix model's data: "real" or "boolean"
    dissimilarity_many: Callable[..., dict[int, NDArray[np.int64]]] | None = None
    dissimilarity_ranges: Mapping[str, Param] = field(default_factory=dict)

    def on_dissimilarities(self) -> Algorithm:
        """This algorithm as it runs on a ``distances`` dataset's halves (every k from ``dissimilarity_many``)."""
        assert self.dissimilarity_many is not None  # the config admits only such algorithms for such data
        return replace(self, cluster=partial(_one_k, self.dissimilarity_many), cluster_many=self.dissimilarity_many,
                       fit=None, model=None, objects="dissimilarity")

    def __post_init__(self) -> None:
        missing = undeclared(self.defaults, self.ranges)
        if missing:  # fail at import: a parameter nobody checks would reach the kernels unchecked
            raise TypeError(f"algorithm {self.name!r}: parameter(s) {missing} lack a declared range that holds "
                            "their default (ranges={name: tasks.params.integer(...), ...})")

    def feasible(self, k: int, n_points: int) -> bool:
        """Whether ``k`` can be fitted on ``n_points`` (a half; a classifier's learning set, where
        leave-one-out needs k other points)."""
        if self.classify is not None:
            return 1 <= k and k + self.points_beyond_k <= n_points
        if self.orders is not None:  # a rank: n_points is min(training rows, features) for a matrix model
            return 1 <= k <= n_points
        return 1 <= k and k * self.min_points_per_cluster <= n_points

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` over the defaults; ``ParamError`` naming an unknown parameter or a value out of range."""
        check_params(params, self.ranges, check=self.check)
        return {**self.defaults, **params}


def _one_k(many: Callable[..., dict[int, NDArray[np.int64]]], X: NDArray[np.float64], k: int,
           rng: np.random.Generator, **params: Any) -> NDArray[np.int64]:
    return many(X, [k], rng, **params)[k]


# Shared by k-means and the mixture: more restarts or iterations than this is a typo, not a study.
RESTARTS, ITERATIONS = integer(1, 100_000), integer(1, 1_000_000)
MAX_TEMPERATURES = 10_000


def _annealing_schedule(params: Mapping[str, Any]) -> None:
    """The number of temperatures, log(final_temperature) / log(cooling), stays finite and affordable:
    ``cooling`` close to 1 would anneal (almost) forever."""
    cooling = params.get("cooling", 0.7)
    final = params.get("final_temperature", 1e-3)
    steps = np.log(final) / np.log(cooling)
    if steps > MAX_TEMPERATURES:
        raise ParamError("cooling", f"cooling = {show(cooling)} with final_temperature = {show(final)} anneals through "
                         f"{steps:,.0f} temperatures, more than {MAX_TEMPERATURES:,}",
                         "lower cooling (e.g. 0.9) or raise final_temperature")


def _gibbs_schedule(params: Mapping[str, Any]) -> None:
    """The Gibbs sampler anneals from ``start_temperature`` times the number of nodes (up to a million here) down to
    ``final_temperature``: that many sweeps must stay affordable too."""
    cooling, start, final = params.get("cooling", 0.9), params.get("start_temperature", 0.1), params.get(
        "final_temperature", 0.01)
    steps = np.log(final / (start * 1e6)) / np.log(cooling)
    if steps > MAX_TEMPERATURES:
        raise ParamError("cooling", f"cooling = {show(cooling)} from start_temperature = {show(start)} x nodes down to "
                         f"final_temperature = {show(final)} anneals through up to {steps:,.0f} sweeps, more than "
                         f"{MAX_TEMPERATURES:,}", "lower cooling (e.g. 0.9) or raise final_temperature")


ALGORITHMS: dict[str, Algorithm] = {
    # seconds_per_point: a Lange cell with 10 restarts took 0.5-0.75 us per point and cluster on one core here
    # (180 cells: 0.9 s at n = 1,000, 5.2 s at n = 10,000)
    "kmeans": Algorithm("kmeans", Deferred("tasks.algorithms.kmeans:kmeans_labels"), {"n_init": 10, "max_iter": 300, "tol": 1e-4},
                        ranges={"n_init": RESTARTS, "max_iter": ITERATIONS, "tol": number(0.0)}, seconds_per_point=6e-7,
                        releases_gil=True, fit=Deferred("tasks.algorithms.kmeans:kmeans_fit"), model="centroids"),
    # the global optimum of the k-means objective for 1-D data (deterministic: no restarts needed)
    "kmeans_1d_exact": Algorithm("kmeans_1d_exact", Deferred("tasks.algorithms.kmeans1d:exact_labels"), {},
                                 cluster_many=Deferred("tasks.algorithms.kmeans1d:kmeans_1d_exact_many"),
                                 max_features=1, seconds_per_point=1.5e-7, releases_gil=True),
    # use with the nearest_neighbor predictor (seed 000 section 3; seed 001 Fig. 2 rings)
    "spectral": Algorithm("spectral", Deferred("tasks.algorithms.spectral:spectral"), {"n_neighbors": 10},
                          cluster_many=Deferred("tasks.algorithms.spectral:spectral_many"), seconds_per_point=2e-5,
                          ranges={"n_neighbors": integer(1, 1_000_000)},
                          dissimilarity_many=Deferred("tasks.algorithms.dissimilarity:spectral_many")),
    # use with the gaussian_posterior predictor (the Bayes rule of the mixture; seed 000 section 3)
    "gaussian_mixture": Algorithm("gaussian_mixture", Deferred("tasks.algorithms.mixture:gaussian_mixture"),
                                  {"covariance_type": "full", "n_init": 1, "max_iter": 100, "reg_covar": 1e-6},
                                  seconds_per_point=2e-5, fit=Deferred("tasks.algorithms.mixture:gaussian_mixture_fit"),
                                  model="mixture",
                                  ranges={"covariance_type": choice("full", "tied", "diag", "spherical"),
                                          "n_init": RESTARTS, "max_iter": ITERATIONS, "reg_covar": number(0.0)}),
    # the same model with full covariances by a compiled EM (scikit-learn's steps from this project's k-means
    # initialisation; 11-21x faster at n = 250-500, d = 2: tasks.algorithms.mixture_em); use with gaussian_posterior
    "gaussian_mixture_em": Algorithm("gaussian_mixture_em", Deferred("tasks.algorithms.mixture_em:mixture_em_labels"),
                                     {"n_init": 1, "max_iter": 100, "tol": 1e-3, "reg_covar": 1e-6},
                                     seconds_per_point=1e-6, releases_gil=True,
                                     fit=Deferred("tasks.algorithms.mixture_em:mixture_em_fit"), model="mixture",
                                     ranges={"n_init": RESTARTS, "max_iter": ITERATIONS, "tol": number(0.0),
                                             "reg_covar": number(0.0, low_open=True)}),
    # one tree cut at every k; linkage: ward, average, complete or single;
    # use with nearest_centroid (ward) or nearest_neighbor (single). scipy's linkage holds the condensed
    # distance matrix of a half (8 bytes per pair) and a copy.
    "agglomerative": Algorithm("agglomerative", Deferred("tasks.algorithms.hierarchical:agglomerative"), {"linkage": "ward"},
                               cluster_many=Deferred("tasks.algorithms.hierarchical:agglomerative_many"),
                               seconds_per_point=2e-6, ranges={"linkage": choice(*LINKAGES)}, pair_bytes=16.0,
                               dissimilarity_many=Deferred("tasks.algorithms.dissimilarity:agglomerative_many"),
                               dissimilarity_ranges={"linkage": choice("average", "complete", "single")}),
    # Rose et al.'s deterministic-annealing k-means (seeds 000 and 002), compiled, beside 10 k-means++ restarts (the
    # lower objective wins: never worse than kmeans with the same seed); use with nearest_centroid
    "deterministic_annealing": Algorithm("deterministic_annealing",
                                         Deferred("tasks.algorithms.annealing:deterministic_annealing"),
                                         {"cooling": 0.7, "final_temperature": 1e-3, "settle": 5, "max_iter": 10,
                                          "tol": 1e-3, "n_init": 10},
                                         seconds_per_point=4e-6, releases_gil=True,
                                         ranges={"cooling": number(0.0, 1.0, low_open=True, high_open=True),
                                                 "final_temperature": number(0.0, 1.0, low_open=True, high_open=True),
                                                 "settle": integer(0, MAX_TEMPERATURES), "max_iter": ITERATIONS,
                                                 "tol": number(0.0), "n_init": integer(0, 100_000)},
                                         check=_annealing_schedule),
    # Fischer & Buhmann's path-based clustering, agglomerative optimisation; use with nearest_neighbor.
    # It holds three square matrices of a half (minimax distances, cross sums, merge costs).
    "path_based": Algorithm("path_based", Deferred("tasks.algorithms.hierarchical:path_based"), {},
                            cluster_many=Deferred("tasks.algorithms.hierarchical:path_based_many"),
                            seconds_per_point=2e-4, pair_bytes=24.0,
                            dissimilarity_many=Deferred("tasks.algorithms.dissimilarity:path_based_many")),
    # Correlation clustering of a signed graph by annealed Gibbs sampling (seed 004 section 3, spec §2.7): k is the
    # largest number of clusters, some may stay empty (criterion k_effective); use with graph_transfer
    "correlation_gibbs": Algorithm("correlation_gibbs", Deferred("tasks.algorithms.correlation:gibbs_on_half"),
                                   {"restarts": 10, "start_temperature": 0.1, "cooling": 0.9, "final_temperature": 0.01},
                                   ranges={"restarts": RESTARTS, "start_temperature": number(0.0, low_open=True),
                                           "cooling": number(0.0, 1.0, low_open=True, high_open=True),
                                           "final_temperature": number(0.0, low_open=True)},
                                   fit=Deferred("tasks.algorithms.correlation:gibbs_fit_on_half"), model="graph_partition",
                                   objects="graph", min_points_per_cluster=1, seconds_per_point=2e-5, releases_gil=True,
                                   check=_gibbs_schedule),
    # Classifiers of seed 003 (every k of a trial from one neighbour sort / one dynamic-programming pass).
    # genes: the g genes of largest |t| on the learning set only (0: all); odd_only: refuse even k (ties).
    "knn": Algorithm("knn", Deferred("tasks.classifiers.kernels:not_a_clusterer"), {"genes": 0, "odd_only": False},
                     classify=Deferred("tasks.classifiers.kernels:knn_trial"), seconds_per_point=1.6e-7, releases_gil=True,
                     ranges={"genes": integer(0, 10_000_000), "odd_only": choice(False, True)}),
    "interval_erm": Algorithm("interval_erm", Deferred("tasks.classifiers.kernels:not_a_clusterer"), {},
                              classify=Deferred("tasks.classifiers.kernels:interval_trial"), max_features=1,
                              seconds_per_point=1.2e-7, points_beyond_k=0, releases_gil=True),
    # Matrix models whose order is a rank (seed 004 §2.4-2.6): every k of a trial from one SVD / one GreConD run.
    "truncated_svd": Algorithm("truncated_svd", Deferred("tasks.classifiers.kernels:not_a_clusterer"), {},
                               orders=Deferred("tasks.algorithms.matrix_models:truncated_svd_orders"),
                               objects="matrix", matrix="real", seconds_per_point=1e-8,
                               releases_gil=True),  # 1.4 ms a cell: camera, 4096 rows, k 1..64
    "boolean_svd": Algorithm("boolean_svd", Deferred("tasks.classifiers.kernels:not_a_clusterer"), {},
                             orders=Deferred("tasks.algorithms.matrix_models:boolean_svd_orders"),
                             objects="matrix", matrix="boolean", seconds_per_point=4e-6,
                             releases_gil=True),  # 2.5 ms a cell: hc, every criterion, k 1..20
    "boolean_mf": Algorithm("boolean_mf", Deferred("tasks.classifiers.kernels:not_a_clusterer"), {},
                            orders=Deferred("tasks.algorithms.matrix_models:boolean_mf_orders"),
                            objects="matrix", matrix="boolean", seconds_per_point=2e-7, releases_gil=True),
}


@dataclass(frozen=True)
class SklearnAlgorithm(Algorithm):
    """A scikit-learn clusterer named by import path (see :mod:`tasks.algorithms.estimators`)."""

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        # ParamError for a value that is not plain data (a path, a cache, an object), ValueError for a
        # parameter the class lacks
        template(self.name, params, "clusterer")
        return dict(params)


def get_algorithm(name: str) -> Algorithm:
    """The registered algorithm ``name``, or the scikit-learn clusterer at import path ``name``
    (``sklearn.cluster.Birch``); an unknown name lists the valid ones."""
    if is_import_path(name):
        estimator_class(name, "clusterer")  # raises ValueError for anything but a scikit-learn clusterer
        return SklearnAlgorithm(name, partial(cluster_with, name), seconds_per_point=2e-5)
    try:
        return ALGORITHMS[name]
    except KeyError:
        from tasks.plugins import load_on_miss  # a plug-in's name where none is loaded yet (a worker)

        if load_on_miss():
            return get_algorithm(name)
        raise ValueError(f"unknown algorithm {name!r}; expected one of {sorted(ALGORITHMS)} "
                         "or a scikit-learn clusterer by import path (sklearn.cluster.Birch)") from None
