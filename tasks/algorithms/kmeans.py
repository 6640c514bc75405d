"""k-means by Lloyd's algorithm from k-means++ seeds, with the kernel chosen by problem size.

Up to ``COMPILED_MAX_WORK`` (n * k * d) every restart runs in one compiled loop (``_lloyd.pyx``, Cython,
built by ``pip install``; it was numba before: the same bits, without numba's import and first
dispatch, 0.3 + 0.45 s per process, which a small sweep paid in full; numba's is still the fallback where
the compiled one was not built, ``tasks/kernels.py``): at the sample
sizes of a stability sweep (tens to thousands of points) this removes the per-call and per-array
overhead that dominates both a loop of scikit-learn fits and batched numpy array operations. Above it,
scikit-learn's compiled Lloyd iterations (chunked matrix products) run from the same seeds, one restart
at a time, with one thread, so that results never depend on the machine's thread count. Both follow
the same rule (stop when the squared centre shift falls to ``tol`` times the mean feature variance;
an empty cluster keeps its centre); the tests check them against each other and against
:class:`sklearn.cluster.KMeans`.

Measured on this project's 2-core machine (10 restarts from the same seeds, one thread), the compiled
loop (numba then; the Cython port is within 5% of it) vs the batched numpy layers it replaced vs
scikit-learn: n = 50, k = 10, d = 2: 0.15 vs 1.4 vs 21 ms; n = 500, k = 8: 1.2 vs 6.6 vs 31 ms;
n = 5000, k = 8: 21 vs 163 vs 58 ms; n = 50,000, k = 10: 373 ms vs 325 ms (scikit-learn); n = 20,000,
k = 8, d = 77: 4.5 s vs 2.0 s (scikit-learn).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from ordercube.tasks.kernels import load

_lloyd = load("ordercube.tasks.algorithms._lloyd")
lloyd_restarts, plusplus = _lloyd.lloyd_restarts, _lloyd.plusplus

COMPILED_MAX_WORK = 1_000_000  # n * k * d above which scikit-learn's chunked matrix products win


@dataclass(frozen=True)
class KMeansResult:
    """The best of the restarts.

    Attributes
    ----------
    labels : ndarray of shape (n_samples,)
    centers : ndarray of shape (k, n_features)
    inertia : float
        Sum of squared distances of the points to their centres.
    """

    labels: NDArray[np.int64]
    centers: NDArray[np.float64]
    inertia: float


def squared_distances(X: NDArray[np.float64], centers: NDArray[np.float64]) -> NDArray[np.float64]:
    """Squared Euclidean distances, ``X`` of shape (n, d) to ``centers`` of shape (..., k, d) → (..., n, k)."""
    cross = np.matmul(X, np.swapaxes(centers, -1, -2))
    d2 = (X * X).sum(axis=1)[:, None] - 2.0 * cross + (centers * centers).sum(axis=-1)[..., None, :]
    return np.maximum(d2, 0.0)


def kmeans_plusplus(
    X: NDArray[np.float64], k: int, rng: np.random.Generator, n_init: int
) -> NDArray[np.float64]:
    """``n_init`` independent k-means++ seedings (Arthur & Vassilvitskii), shape (n_init, k, d)."""
    first = rng.integers(X.shape[0], size=n_init)
    u = rng.random((k - 1, n_init))
    seeds = np.empty((n_init, k, X.shape[1]))
    plusplus(np.ascontiguousarray(X, dtype=np.float64), first, u, seeds)
    return seeds


def lloyd(
    X: NDArray[np.float64], centers: NDArray[np.float64], *, max_iter: int = 300, tol: float = 1e-4
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """Lloyd iterations from ``centers`` of shape (n_init, k, d), compiled, every restart in one call.

    Stops a restart when the squared shift of its centres falls to ``tol`` times the mean feature
    variance (scikit-learn's rule); an empty cluster keeps its previous centre.

    Returns
    -------
    labels : ndarray of shape (n_init, n)
    centers : ndarray of shape (n_init, k, d)
    inertia : ndarray of shape (n_init,)
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    threshold = tol * float(np.mean(np.var(X, axis=0)))
    final = np.array(centers, dtype=np.float64, order="C")
    labels = np.empty(final.shape[:1] + X.shape[:1], dtype=np.int64)
    inertia = np.empty(final.shape[0])
    lloyd_restarts(X, final, labels, inertia, max_iter, threshold)
    return labels, final, inertia


def lloyd_sklearn(
    X: NDArray[np.float64], centers: NDArray[np.float64], *, max_iter: int = 300, tol: float = 1e-4
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """:func:`lloyd` through scikit-learn's compiled iterations, one restart at a time, one thread.

    ``copy_x=True``: scikit-learn centres the data it is given in place and adds the mean back, which moves the
    last bits of ``X`` (at 10^5 x 10, 139,125 of 10^6 values changed by one fit). Given the worker's data array,
    each fit changed the data of every later task of the process, so a cube's bits depended on which tasks a
    worker ran before (two workers then saw two different Gap reference boxes); and the restarts of one call saw
    different data. A copy per restart costs one pass over ``X``."""
    from sklearn.cluster import KMeans  # here, not at the top: importing it costs 0.75 s per process

    n_init, k, _ = centers.shape
    labels = np.empty((n_init, X.shape[0]), dtype=np.int64)
    final = np.empty_like(centers)
    inertia = np.empty(n_init)
    with threadpool_limits(limits=1):
        for r in range(n_init):
            fitted = KMeans(n_clusters=k, init=centers[r], n_init=1, algorithm="lloyd", max_iter=max_iter, tol=tol,
                            copy_x=True).fit(X)
            labels[r], final[r], inertia[r] = fitted.labels_, fitted.cluster_centers_, fitted.inertia_
    return labels, final, inertia


Lloyd = Callable[..., tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]]


def lloyd_for(X: NDArray[np.float64], k: int) -> Lloyd:
    """The Lloyd kernel for ``k`` clusters of ``X``: compiled up to ``COMPILED_MAX_WORK``, scikit-learn's above."""
    return lloyd if X.shape[0] * k * X.shape[1] <= COMPILED_MAX_WORK else lloyd_sklearn


def kmeans(
    X: NDArray[np.float64], k: int, rng: np.random.Generator, *, n_init: int = 10, max_iter: int = 300,
    tol: float = 1e-4,
) -> KMeansResult:
    """The best of ``n_init`` k-means++-seeded Lloyd runs on ``X`` of shape (n_samples, n_features)."""
    labels, centers, inertia = lloyd_for(X, k)(X, kmeans_plusplus(X, k, rng, n_init), max_iter=max_iter, tol=tol)
    best = int(np.argmin(inertia))
    return KMeansResult(labels=labels[best], centers=centers[best], inertia=float(inertia[best]))


def kmeans_fit(
    X: NDArray[np.float64], k: int, rng: np.random.Generator, *, n_init: int = 10, max_iter: int = 300,
    tol: float = 1e-4,
) -> tuple[NDArray[np.int64], KMeansResult]:
    """The labels of :func:`kmeans` with the fit they come from (its centres: the transfer costs of Frank et al. 2011)."""
    result = kmeans(X, k, rng, n_init=n_init, max_iter=max_iter, tol=tol)
    return result.labels, result


def kmeans_labels(
    X: NDArray[np.float64], k: int, rng: np.random.Generator, *, n_init: int = 10, max_iter: int = 300,
    tol: float = 1e-4,
) -> NDArray[np.int64]:
    """The labels of :func:`kmeans` (the registry's ``cluster`` for ``kmeans``)."""
    return kmeans(X, k, rng, n_init=n_init, max_iter=max_iter, tol=tol).labels
