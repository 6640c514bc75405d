"""Algorithms, registered by name: clusterers, classifiers and matrix models (:mod:`ordercube.tasks.algorithms.kinds`).

A record never keeps state between calls, so one registry entry serves every cell; its kernels are named by
import path (:class:`~ordercube.tasks.deferred.Deferred`) and imported on their first call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from ordercube.tasks.algorithms.estimators import cluster_with, estimator_class, is_import_path, template
from ordercube.tasks.algorithms.kinds import BaseAlgorithm, Classifier, Clusterer, MatrixModel
from ordercube.tasks.deferred import Deferred
from ordercube.tasks.params import ParamError, choice, integer, number, show

LINKAGES = ("ward", "average", "complete", "single")
Algorithm = Clusterer  # the name a clusterer's record had before the kinds were split


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


ALGORITHMS: dict[str, BaseAlgorithm] = {
    # costs (CPU time of one fit, best of 3, on this project's 2-core machine, for each algorithm below): 10
    # restarts took 0.08 ms at n = 31, k = 5 and 0.3 us + 0.02-0.09 us per feature per point and cluster beyond
    # (d = 2 to 2,000; 2 us at d = 20)
    "kmeans": Clusterer("kmeans", Deferred("ordercube.tasks.algorithms.kmeans:kmeans_labels"),
                        defaults={"n_init": 10, "max_iter": 300, "tol": 1e-4},
                        ranges={"n_init": RESTARTS, "max_iter": ITERATIONS, "tol": number(0.0)}, seconds_per_point=3e-7,
                        seconds_per_feature=7e-8, seconds_per_fit=5e-5, fit_scale=lambda params: params["n_init"] / 10,
                        releases_gil=True, fit=Deferred("ordercube.tasks.algorithms.kmeans:kmeans_fit"), model="centroids"),
    # the global optimum of the k-means objective for 1-D data (deterministic: no restarts needed)
    "kmeans_1d_exact": Clusterer("kmeans_1d_exact", Deferred("ordercube.tasks.algorithms.kmeans1d:exact_labels"),
                                 cluster_many=Deferred("ordercube.tasks.algorithms.kmeans1d:kmeans_1d_exact_many"),
                                 # every k of a trial at once: 0.14 ms at n = 64, 1.9 ms at n = 4,096
                                 max_features=1, seconds_per_point=4.5e-7, seconds_per_fit=1e-4, releases_gil=True),
    # use with the nearest_neighbor predictor (Lange et al. 2002, section 3; Shamir & Tishby 2007, Fig. 2 rings)
    "spectral": Clusterer("spectral", Deferred("ordercube.tasks.algorithms.spectral:spectral"), defaults={"n_neighbors": 10},
                          cluster_many=Deferred("ordercube.tasks.algorithms.spectral:spectral_many"), seconds_per_point=5e-5,
                          # every k of a trial at once: 12.5 ms at n = 100, 42-47 ms at 1,000, 0.55 s at 10,000
                          seconds_per_fit=7.5e-3,
                          ranges={"n_neighbors": integer(1, 1_000_000)},
                          ).with_dissimilarity_variant(Deferred("ordercube.tasks.algorithms.dissimilarity:spectral_many")),
    # use with the gaussian_posterior predictor (the Bayes rule of the mixture; Lange et al. 2002, section 3);
    # a fit (k = 2-4, d = 2, medians of 36): 8.3 ms at 30-480 points, 10.6 ms at 1,920, 21.7 ms at 7,680 (it was
    # declared 2 ms + 20 us per point: the conformance kit's cost check found it growing 2.4x faster than measured)
    "gaussian_mixture": Clusterer("gaussian_mixture", Deferred("ordercube.tasks.algorithms.mixture:gaussian_mixture"),
                                  defaults={"covariance_type": "full", "n_init": 1, "max_iter": 100, "reg_covar": 1e-6},
                                  seconds_per_point=2e-6, seconds_per_fit=8e-3, fit_scale=lambda params: params["n_init"],
                                  fit=Deferred("ordercube.tasks.algorithms.mixture:gaussian_mixture_fit"),
                                  model="mixture",
                                  ranges={"covariance_type": choice("full", "tied", "diag", "spherical"),
                                          "n_init": RESTARTS, "max_iter": ITERATIONS, "reg_covar": number(0.0)}),
    # the same model with full covariances by a compiled EM (scikit-learn's steps from this project's k-means
    # initialisation; 11-21x faster at n = 250-500, d = 2: ordercube.tasks.algorithms.mixture_em); use with gaussian_posterior
    "gaussian_mixture_em": Clusterer("gaussian_mixture_em", Deferred("ordercube.tasks.algorithms.mixture_em:mixture_em_labels"),
                                     defaults={"n_init": 1, "max_iter": 100, "tol": 1e-3, "reg_covar": 1e-6},
                                     # 0.1 ms + 0.15-0.45 us per point and component at n = 50-800
                                     seconds_per_point=3e-7, seconds_per_fit=1e-4, releases_gil=True,
                                     fit_scale=lambda params: params["n_init"],
                                     fit=Deferred("ordercube.tasks.algorithms.mixture_em:mixture_em_fit"), model="mixture",
                                     ranges={"n_init": RESTARTS, "max_iter": ITERATIONS, "tol": number(0.0),
                                             "reg_covar": number(0.0, low_open=True)}),
    # one tree cut at every k; linkage: ward, average, complete or single;
    # use with nearest_centroid (ward) or nearest_neighbor (single). scipy's linkage holds the condensed
    # distance matrix of a half (8 bytes per pair) and a copy.
    "agglomerative": Clusterer("agglomerative", Deferred("ordercube.tasks.algorithms.hierarchical:agglomerative"),
                               defaults={"linkage": "ward"},
                               cluster_many=Deferred("ordercube.tasks.algorithms.hierarchical:agglomerative_many"),
                               on_distances=Deferred("ordercube.tasks.algorithms.hierarchical:agglomerative_on_distances"),
                               # every k of a trial at once: 2.3 ms at n = 50, 33 ms at n = 800
                               seconds_per_point=4e-5, seconds_per_fit=2e-3, ranges={"linkage": choice(*LINKAGES)},
                               pair_bytes=16.0,
                               ).with_dissimilarity_variant(
                                   Deferred("ordercube.tasks.algorithms.dissimilarity:agglomerative_many"),
                                   {"linkage": choice("average", "complete", "single")}),
    # Rose et al.'s deterministic-annealing k-means (Lange et al. 2002 and 2004), compiled, beside 10 k-means++
    # restarts (the lower objective wins: never worse than kmeans with the same seed); use with nearest_centroid
    "deterministic_annealing": Clusterer("deterministic_annealing",
                                         Deferred("ordercube.tasks.algorithms.annealing:deterministic_annealing"),
                                         defaults={"cooling": 0.7, "final_temperature": 1e-3, "settle": 5,
                                                   "max_iter": 10, "tol": 1e-3, "n_init": 10},
                                         # 1.1 us per point and cluster at n = 800
                                         seconds_per_point=1.1e-6, seconds_per_fit=1e-4, releases_gil=True,
                                         fit_scale=lambda params: (1 + params["n_init"]) / 11,
                                         ranges={"cooling": number(0.0, 1.0, low_open=True, high_open=True),
                                                 "final_temperature": number(0.0, 1.0, low_open=True, high_open=True),
                                                 "settle": integer(0, MAX_TEMPERATURES), "max_iter": ITERATIONS,
                                                 "tol": number(0.0), "n_init": integer(0, 100_000)},
                                         check=_annealing_schedule),
    # Fischer & Buhmann's path-based clustering, agglomerative optimisation; use with nearest_neighbor.
    # It holds three square matrices of a half (minimax distances, cross sums, merge costs).
    "path_based": Clusterer("path_based", Deferred("ordercube.tasks.algorithms.hierarchical:path_based"),
                            cluster_many=Deferred("ordercube.tasks.algorithms.hierarchical:path_based_many"),
                            # every k of a trial at once, cubic in n: 2.2 ms at n = 50, 26 ms at 200, 166 ms at 400, 1.33 s
                            # at 800
                            seconds_per_point=2.6e-9, points_power=3.0, seconds_per_fit=2e-3, pair_bytes=24.0,
                            ).with_dissimilarity_variant(Deferred("ordercube.tasks.algorithms.dissimilarity:path_based_many")),
    # Correlation clustering of a signed graph by annealed Gibbs sampling (Frank, Chehreghani & Buhmann 2011,
    # section 3): k is the largest number of clusters, some may stay empty (criterion k_effective); use with
    # graph_transfer
    "correlation_gibbs": Clusterer("correlation_gibbs", Deferred("ordercube.tasks.algorithms.correlation:gibbs_on_half"),
                                   defaults={"restarts": 10, "start_temperature": 0.1, "cooling": 0.9,
                                             "final_temperature": 0.01},
                                   ranges={"restarts": RESTARTS, "start_temperature": number(0.0, low_open=True),
                                           "cooling": number(0.0, 1.0, low_open=True, high_open=True),
                                           "final_temperature": number(0.0, low_open=True)},
                                   fit=Deferred("ordercube.tasks.algorithms.correlation:gibbs_fit_on_half"), model="graph_partition",
                                   takes="graph", min_points_per_cluster=1, seconds_per_point=2e-5, releases_gil=True,
                                   fit_scale=lambda params: params["restarts"] / 10,
                                   check=_gibbs_schedule),
    # Classifiers of Daudin & Mary-Huard 2008 (every k of a trial from one neighbour sort / one dynamic-programming
    # pass). genes: the g genes of largest |t| on the learning set only (0: all); odd_only: refuse even k (ties).
    "knn": Classifier("knn", Deferred("ordercube.tasks.classifiers.kernels:knn_trial"), defaults={"genes": 0, "odd_only": False},
                      seconds_per_point=1.6e-7, releases_gil=True,
                      ranges={"genes": integer(0, 10_000_000), "odd_only": choice(False, True)}),
    "interval_erm": Classifier("interval_erm", Deferred("ordercube.tasks.classifiers.kernels:interval_trial"), max_features=1,
                               seconds_per_point=1.2e-7, points_beyond_k=0, releases_gil=True),
    # Matrix models whose order is a rank (Frank, Chehreghani & Buhmann 2011, section 2.4-2.6): every k of a trial
    # from one SVD / one GreConD run; what each computes is its criteria's (ordercube.tasks.criteria.matrix).
    # their costs per matrix cell (row and column) and rank: the CPU time of benchmarks/cost_model.py's reduced
    # frank_svd_image (camera, 4,096 x 64) and frank_bmf (3,000 x 500) runs over their ranks
    "truncated_svd": MatrixModel("truncated_svd", seconds_per_point=0.0, seconds_per_feature=1.4e-9,
                                 releases_gil=True),
    "boolean_svd": MatrixModel("boolean_svd", needs=("boolean",), seconds_per_point=4e-6,
                               releases_gil=True),  # 2.5 ms a cell: hc, every criterion, k 1..20
    "boolean_mf": MatrixModel("boolean_mf", needs=("boolean",), seconds_per_point=0.0, seconds_per_feature=9e-11,
                              releases_gil=True),
}


# The predictor matched to each clusterer's principle (Lange et al. 2002, Sec. 3), a method's default when its config
# names none. Agglomerative clustering has none: its match depends on the linkage (ward: nearest_centroid, single:
# nearest_neighbor), so its methods name one.
MATCHED_PREDICTORS = {"kmeans": "nearest_centroid", "kmeans_1d_exact": "nearest_centroid", "spectral": "nearest_neighbor",
                      "gaussian_mixture": "gaussian_posterior", "gaussian_mixture_em": "gaussian_posterior",
                      "deterministic_annealing": "nearest_centroid", "path_based": "nearest_neighbor",
                      "correlation_gibbs": "graph_transfer"}
for _name, _predictor in MATCHED_PREDICTORS.items():
    ALGORITHMS[_name] = replace(ALGORITHMS[_name], predictor=_predictor)


@dataclass(frozen=True)
class SklearnAlgorithm(Clusterer):
    """A scikit-learn clusterer named by import path (see :mod:`ordercube.tasks.algorithms.estimators`)."""

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        # ParamError for a value that is not plain data (a path, a cache, an object), ValueError for a
        # parameter the class lacks
        template(self.name, params, "clusterer")
        return dict(params)


def get_algorithm(name: str) -> BaseAlgorithm:
    """The registered algorithm ``name``, or the scikit-learn clusterer at import path ``name``
    (``sklearn.cluster.Birch``); an unknown name lists the valid ones."""
    if is_import_path(name):
        estimator_class(name, "clusterer")  # raises ValueError for anything but a scikit-learn clusterer
        return SklearnAlgorithm(name, partial(cluster_with, name), seconds_per_point=2e-5)
    from ordercube.tasks.misses import lookup  # a plug-in's name where none is loaded yet (a worker)

    return lookup(ALGORITHMS, "algorithm", name,
                  alternatives=" or a scikit-learn clusterer by import path (sklearn.cluster.Birch)")
