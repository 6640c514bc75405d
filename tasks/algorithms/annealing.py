"""Deterministic-annealing k-means (Rose, Gurewitz & Fox 1990; the mass-constrained form of Rose 1998).

Seeds 000 and 002 cluster with it. At temperature T every point belongs to every cluster c with
probability

    p(c | x) = p_c exp(-||x - y_c||^2 / T) / sum_c' p_c' exp(-||x - y_c'||^2 / T),

the centroids are the p(c | x)-weighted means y_c and the masses p_c the mean of p(c | x). At high T all
centroids sit at the data mean; cooling splits them at the critical temperatures (the first at twice
the largest variance of the data), which is what lets the annealing avoid the poor local minima of
Lloyd's algorithm from one start. At the final temperature the soft assignments are hardened and
Lloyd's algorithm runs to convergence.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from tasks.algorithms.kmeans import lloyd, squared_distances


def _fixed_point(X, centers, masses, temperature, *, max_iter, tol):
    """Iterate the DA equations (module docstring) at one temperature until the centroids settle."""
    for _ in range(max_iter):
        logits = np.log(masses)[None, :] - squared_distances(X, centers) / temperature
        logits -= logits.max(axis=1, keepdims=True)
        responsibilities = np.exp(logits)
        responsibilities /= responsibilities.sum(axis=1, keepdims=True)
        weight = responsibilities.sum(axis=0)
        masses = np.maximum(weight / X.shape[0], 1e-300)
        moved = (responsibilities.T @ X) / np.maximum(weight, 1e-300)[:, None]
        settled = float(np.abs(moved - centers).max()) <= tol
        centers = moved
        if settled:
            break
    return centers, masses


def deterministic_annealing(
    X: NDArray[np.float64],
    k: int,
    rng: np.random.Generator,
    *,
    cooling: float = 0.9,
    final_temperature: float = 1e-3,
    max_iter: int = 100,
    tol: float = 1e-6,
) -> NDArray[np.int64]:
    """Labels of a deterministic-annealing k-means solution of ``X``.

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
        Only for the tiny perturbations of the twins.
    cooling : float
        T is multiplied by this factor after each temperature (0 < cooling < 1).
    final_temperature : float
        Relative to the starting temperature (just above the first critical temperature, twice the
        largest variance of the data): where annealing stops and Lloyd's algorithm takes over.
    max_iter, tol
        Fixed-point iterations per temperature and their tolerance on the centroids (relative to the
        data's scale).
    """
    X = np.asarray(X, dtype=np.float64)
    scale = np.sqrt(max(float(np.var(X, axis=0).sum()), 1e-300))
    start = 2.2 * float(np.linalg.eigvalsh(np.atleast_2d(np.cov(X.T, bias=True))).max()) + 1e-300
    centers, masses = X.mean(axis=0)[None, :], np.ones(1)
    temperature = start
    while temperature > final_temperature * start:
        m = centers.shape[0]
        if m < k:  # give every cluster a twin
            twins = centers + 1e-3 * scale * rng.standard_normal(centers.shape)
            centers, masses = np.concatenate([centers, twins]), np.concatenate([masses, masses]) / 2
        centers, masses = _fixed_point(X, centers, masses, temperature, max_iter=max_iter, tol=tol * scale)
        if m < k:
            gaps = np.linalg.norm(centers[:m] - centers[m:], axis=1)
            split = [i for i in np.argsort(-gaps) if gaps[i] > 1e-2 * scale][: k - m]
            merged = (centers[:m] * masses[:m, None] + centers[m:] * masses[m:, None]) / (masses[:m] + masses[m:])[:, None]
            keep_twin = np.zeros(m, dtype=bool)
            keep_twin[split] = True
            first = np.where(keep_twin[:, None], centers[:m], merged)
            first_mass = np.where(keep_twin, masses[:m], masses[:m] + masses[m:])
            centers = np.concatenate([first, centers[m:][keep_twin]])
            masses = np.concatenate([first_mass, masses[m:][keep_twin]])
        temperature *= cooling
    if centers.shape[0] < k:  # fewer transitions than k (e.g. duplicate points): add the farthest points
        distances = squared_distances(X, centers).min(axis=1)
        extra = X[np.argsort(-distances)[: k - centers.shape[0]]]
        centers = np.concatenate([centers, extra])
    labels, _, _ = lloyd(X, centers[None, :, :], max_iter=300, tol=1e-4)
    return labels[0]
