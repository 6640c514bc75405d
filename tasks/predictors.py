"""Predictors: the extension operators that transfer a clustering solution to new points.

Lange et al. (2002), Sec. 3: the predictor must match the clustering principle (nearest centroid for
k-means, nearest neighbour for path-based and spectral clustering).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from functools import partial

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.algorithms.estimators import estimator_class, is_import_path, predict_with

Predictor = Callable[[NDArray[np.float64], NDArray[np.int64], int, NDArray[np.float64]], NDArray[np.int64]]


def nearest_centroid(
    X_train: NDArray[np.float64], labels: NDArray[np.int64], k: int, X_new: NDArray[np.float64]
) -> NDArray[np.int64]:
    """Label of the closest cluster mean; empty clusters never win.

    Parameters
    ----------
    X_train : ndarray of shape (n_train, n_features)
    labels : ndarray of shape (n_train,)
        Values in ``0..k-1``.
    k : int
    X_new : ndarray of shape (n_new, n_features)

    Returns
    -------
    ndarray of shape (n_new,)
    """
    if (X_train.shape[1] == 1 and X_train.dtype == X_new.dtype == np.float64 and labels.dtype.kind in "iu"
            and "numba" in sys.modules):
        # compiled, one pass over the new points: when numba is loaded already (by the exact 1-D k-means), so that a
        # sweep of Cython kernels never pays its import (0.3 s, 0.45 s to first dispatch)
        from ordercube.tasks.algorithms.kmeans1d import nearest_centre_1d

        found = nearest_centre_1d(X_train[:, 0], labels, k, X_new[:, 0])
        if found is not None:
            return found
    counts = np.bincount(labels, minlength=k)
    sums = np.stack([np.bincount(labels, weights=column, minlength=k) for column in X_train.T], axis=1)
    present = np.flatnonzero(counts)
    centers = sums[present] / counts[present, None]
    if X_train.shape[1] == 1:  # in 1-D the cells of the centres are intervals: a binary search per point
        order = np.argsort(centers[:, 0], kind="stable")
        ends = (centers[order[1:], 0] + centers[order[:-1], 0]) / 2
        return present[order[np.searchsorted(ends, X_new[:, 0])]]
    from ordercube.tasks.algorithms.kmeans import squared_distances  # numba, imported by the first prediction only

    return present[squared_distances(X_new, centers).argmin(axis=1)]


def nearest_neighbor(
    X_train: NDArray[np.float64], labels: NDArray[np.int64], k: int, X_new: NDArray[np.float64]
) -> NDArray[np.int64]:
    """Label of the closest training point (ties to the lowest index, as cKDTree returns)."""
    from scipy.spatial import cKDTree

    _, index = cKDTree(X_train).query(X_new, k=1)
    return labels[index]


def gaussian_posterior(
    X_train: NDArray[np.float64], labels: NDArray[np.int64], k: int, X_new: NDArray[np.float64], *,
    reg_covar: float = 1e-6,
) -> NDArray[np.int64]:
    """The Bayes rule of the Gaussian mixture the labelled training half estimates.

    Each non-empty cluster c gets its share of points w_c, mean mu_c and full covariance Sigma_c (the
    maximum-likelihood estimates, ``reg_covar`` added to the diagonal as scikit-learn's
    ``GaussianMixture`` does); a new point goes to argmax_c log w_c + log N(x; mu_c, Sigma_c).
    """
    present = np.flatnonzero(np.bincount(labels, minlength=k))
    scores = np.empty((X_new.shape[0], present.size))
    for column, c in enumerate(present):
        members = X_train[labels == c]
        mean = members.mean(axis=0)
        centred = members - mean
        covariance = centred.T @ centred / members.shape[0] + reg_covar * np.eye(X_train.shape[1])
        cholesky = np.linalg.cholesky(covariance)
        solved = np.linalg.solve(cholesky, (X_new - mean).T)
        log_det = 2.0 * np.log(np.diag(cholesky)).sum()
        scores[:, column] = np.log(members.shape[0] / labels.size) - 0.5 * (log_det + (solved * solved).sum(axis=0))
    return present[scores.argmax(axis=1)]


def linear_discriminant(
    X_train: NDArray[np.float64], labels: NDArray[np.int64], k: int, X_new: NDArray[np.float64]
) -> NDArray[np.int64]:
    """Fisher's linear discriminant analysis (scikit-learn's ``LinearDiscriminantAnalysis``, SVD solver):
    Gaussian classes with one shared covariance, the classifier Clest uses in Lange et al. (2002).

    With a single non-empty cluster every new point gets its label.
    """
    present = np.unique(labels)
    if present.size < 2:
        return np.full(X_new.shape[0], present[0], dtype=np.int64)
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis  # imported when used: ~0.6 s

    with warnings.catch_warnings():  # collinear features (more dimensions than points) are expected
        warnings.simplefilter("ignore", UserWarning)
        model = LinearDiscriminantAnalysis(solver="svd").fit(X_train, labels)
        return model.predict(X_new).astype(np.int64)


def graph_transfer(
    X_train: NDArray[np.float64], labels: NDArray[np.int64], k: int, X_new: NDArray[np.float64]
) -> NDArray[np.int64]:
    """Frank et al.'s (2011) eqs. (9)-(10) for nodes of a graph: each new node to the training cluster it has the most
    weight to (:func:`ordercube.tasks.algorithms.correlation.graph_transfer`; use with ``correlation_gibbs``)."""
    from ordercube.tasks.algorithms.correlation import graph_transfer as transfer  # numba: for graph sweeps only

    return transfer(X_train, labels, k, X_new)


def nearest_object(
    X_train: NDArray[np.float64], labels: NDArray[np.int64], k: int, X_new: NDArray[np.float64]
) -> NDArray[np.int64]:
    """For objects given by dissimilarities (:func:`ordercube.tasks.datasets.sources.node_halves`' layout): the label of the
    least dissimilar training object, read from the new half's columns of the training half's objects (ties to the
    lowest index, as ``nearest_neighbor``). On Euclidean distances it is ``nearest_neighbor``."""
    return labels[np.argmin(X_new[:, X_new.shape[0]:], axis=1)]


PREDICTORS: dict[str, Predictor] = {
    "nearest_centroid": nearest_centroid,
    "nearest_neighbor": nearest_neighbor,
    "gaussian_posterior": gaussian_posterior,
    "linear_discriminant": linear_discriminant,
    "graph_transfer": graph_transfer,
    "nearest_object": nearest_object,
}
# The objects each predictor reads, when not points (ordercube.tasks.capabilities): a graph's edges, dissimilarities.
PREDICTOR_TAKES: dict[str, str] = {"graph_transfer": "graph", "nearest_object": "dissimilarity"}
GRAPH_PREDICTORS = tuple(name for name, takes in PREDICTOR_TAKES.items() if takes == "graph")
DISSIMILARITY_PREDICTORS = tuple(name for name, takes in PREDICTOR_TAKES.items() if takes == "dissimilarity")


def predictor_takes(name: str) -> str:
    """The objects the predictor ``name`` reads (``points`` unless registered otherwise in ``PREDICTOR_TAKES``; a
    scikit-learn classifier reads points)."""
    return PREDICTOR_TAKES.get(name, "points")


def get_predictor(name: str) -> Predictor:
    """The registered predictor ``name``, or the scikit-learn classifier at import path ``name``
    (``sklearn.svm.SVC``, fitted on the labelled half); an unknown name lists the valid ones."""
    if is_import_path(name):
        estimator_class(name, "classifier")  # raises ValueError for anything but a scikit-learn classifier
        return partial(predict_with, name)
    from ordercube.tasks.misses import lookup  # a plug-in's name where none is loaded yet (a worker)

    return lookup(PREDICTORS, "predictor", name,
                  alternatives=" or a scikit-learn classifier by import path (sklearn.svm.SVC)")
