"""Deterministic-annealing k-means (Rose, Gurewitz & Fox 1990; the mass-constrained form of Rose 1998).

Lange et al. (2002) and Roth et al. (2002) cluster with it. At temperature T every point belongs to every cluster c with
probability

    p(c | x) = p_c exp(-||x - y_c||^2 / T) / sum_c' p_c' exp(-||x - y_c'||^2 / T),

the centroids are the p(c | x)-weighted means y_c and the masses p_c the mean of p(c | x). At high T all
centroids sit at the data mean; cooling splits them at the critical temperatures (the first at twice
the largest variance of the data, Rose 1998 eq. 33), which is what lets the annealing avoid the poor
local minima of Lloyd's algorithm from one start. The annealing runs compiled (``_annealing.pyx``, or its
numba twin where it was not built); once k clusters exist it cools ``settle`` more temperatures, then the soft
assignments are hardened and Lloyd's algorithm runs to convergence.

Annealing follows one path of phase transitions and can be led past the optimum (measured in
``benchmarks/bench_annealing.py``: on uniform data in 100 dimensions it splits very unevenly). So the
annealed solution is one candidate beside ``n_init`` k-means++ restarts of Lloyd, the very restarts
``kmeans`` draws from the same stream, and the lower objective wins (the annealed one on ties): the result
is never worse than ``kmeans`` with the same seed and ``n_init``, and better wherever annealing finds a
deeper minimum. ``n_init = 0`` gives pure annealing.

Measured (``benchmarks/bench_annealing.py``, 96 fits: three and eight Gaussians and uniform data, d = 1,
2, 10, 100, n = 100, 400, k = 2, 3, 5, 8), against 10-restart k-means with the same seed: the shipped
combination is better in 24 fits and never worse, at a median 2.9x the time of 10-restart k-means (90th
percentile 4.8x, largest 7.0x; the numpy annealing it replaces: 23-460x); pure annealing is better in 24
and worse in 46 (by up to +32%: a path that splits a cluster off early and never recovers). The defaults
(cooling 0.7, 10 fixed-point iterations per temperature, tolerance 1e-3) were chosen on that benchmark:
slower schedules make pure annealing better on its own (0.9, 100, 1e-6, annealed to the end: within 5e-5
of the exact 1-D optimum in the median fit, tests/test_algorithms.py) but not the combination (0.8, 20,
1e-4: better in 23 fits, 5.2x; 0.9, 100, 1e-6: better in 12, 26x), because the restarts already cover
the fits where it is better.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.algorithms.kmeans import kmeans, lloyd_for, squared_distances
from ordercube.tasks.kernels import load

anneal = load("ordercube.tasks.algorithms._annealing").anneal


def annealed_centers(
    X: NDArray[np.float64], k: int, noise: NDArray[np.float64], *, cooling: float = 0.7,
    final_temperature: float = 1e-3, settle: int = 5, max_iter: int = 10, tol: float = 1e-3,
) -> tuple[NDArray[np.float64], int]:
    """The k centres where annealing ends (before Lloyd's polish) and the fixed-point iterations it took.

    ``noise`` of shape (k, d) gives the directions of the twins' perturbations. If the data go through
    fewer than k phase transitions (duplicate points), the farthest points are added as centres.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    scale = np.sqrt(max(float(np.var(X, axis=0).sum()), 1e-300))
    largest_variance = float(np.linalg.eigvalsh(np.atleast_2d(np.cov(X.T, bias=True)))[-1])
    start = 2.2 * largest_variance + 1e-300  # just above the first critical temperature
    centers = np.empty((k, X.shape[1]))
    found, iterations = anneal(X, k, np.ascontiguousarray(noise, dtype=np.float64), start, cooling,
                               final_temperature * start, settle, max_iter, tol * scale, scale, centers)
    if found < k:
        distances = squared_distances(X, centers[:found]).min(axis=1)
        centers[found:] = X[np.argsort(-distances, kind="stable")[: k - found]]
    return centers, iterations


def deterministic_annealing(
    X: NDArray[np.float64],
    k: int,
    rng: np.random.Generator,
    *,
    cooling: float = 0.7,
    final_temperature: float = 1e-3,
    settle: int = 5,
    max_iter: int = 10,
    tol: float = 1e-3,
    n_init: int = 10,
) -> NDArray[np.int64]:
    """Labels of a deterministic-annealing k-means solution of ``X``, never worse than ``n_init`` restarts.

    Every effective cluster carries a twin, a slightly perturbed copy. After the fixed point at each
    temperature, twins that stayed together are merged back; twins that moved apart (the cluster went
    through its phase transition) become two clusters, the widest-apart first while fewer than k exist.
    So clusters split one phase transition at a time, as in Rose's algorithm, instead of k coincident
    centroids dividing at random at the first transition.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    k : int
    rng : numpy.random.Generator
        First the k-means++ seeds of the ``n_init`` restarts (as ``kmeans`` draws them), then the
        directions of the twins' perturbations.
    cooling : float
        T is multiplied by this factor after each temperature (0 < cooling < 1).
    final_temperature : float
        Relative to the starting temperature (just above the first critical temperature, twice the
        largest variance of the data): where annealing stops at the latest.
    settle : int
        Temperatures annealed once k clusters exist, before Lloyd's algorithm takes over.
    max_iter, tol
        Fixed-point iterations per temperature and their tolerance on the centroids (relative to the
        data's scale).
    n_init : int
        k-means++ restarts of Lloyd's algorithm competing with the annealed solution (0: none).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    restarts = kmeans(X, k, rng, n_init=n_init) if n_init else None
    centers, _ = annealed_centers(X, k, rng.standard_normal((k, X.shape[1])), cooling=cooling,
                                  final_temperature=final_temperature, settle=settle, max_iter=max_iter, tol=tol)
    labels, _, inertia = lloyd_for(X, k)(X, centers[None, :, :], max_iter=300, tol=1e-4)
    if restarts is not None and restarts.inertia < inertia[0]:
        return restarts.labels
    return labels[0]
