"""The numba twin of ``_lloyd.pyx``, used when the compiled kernels were not built (see ``tasks/kernels.py``).

The same loops in the same order, every sum in index order, nothing reassociated (numba's default, no
``fastmath``), so the same bits as the compiled kernel; the tests compare the two on random, tied and
degenerate inputs.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray


@njit(cache=True, nogil=True, error_model="numpy")
def _squared_distance(X: NDArray[np.float64], i: int, centers: NDArray[np.float64], c: int) -> float:
    total = 0.0
    for f in range(X.shape[1]):
        diff = X[i, f] - centers[c, f]
        total += diff * diff
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def _plusplus(X: NDArray[np.float64], first: NDArray[np.int64], u: NDArray[np.float64],
              seeds: NDArray[np.float64]) -> None:
    n, d = X.shape
    n_init, k = seeds.shape[0], seeds.shape[1]
    closest = np.empty(max(n, 1))
    for r in range(n_init):
        for f in range(d):
            seeds[r, 0, f] = X[first[r], f]
        for i in range(n):
            closest[i] = _squared_distance(X, i, seeds[r], 0)
        for j in range(1, k):
            total = 0.0
            for i in range(n):
                total += closest[i]
            threshold = u[j - 1, r] * total
            pick, cumulative = n - 1, 0.0
            for i in range(n):
                cumulative += closest[i]
                if cumulative > threshold:
                    pick = i
                    break
            for f in range(d):
                seeds[r, j, f] = X[pick, f]
            for i in range(n):
                distance = _squared_distance(X, i, seeds[r], j)
                if distance < closest[i]:
                    closest[i] = distance


@njit(cache=True, nogil=True, error_model="numpy")
def _assign(X: NDArray[np.float64], centers: NDArray[np.float64], labels: NDArray[np.int64]) -> float:
    inertia = 0.0
    for i in range(X.shape[0]):
        best, chosen = math.inf, 0
        for c in range(centers.shape[0]):
            distance = _squared_distance(X, i, centers, c)
            if distance < best:
                best, chosen = distance, c
        labels[i] = chosen
        inertia += best
    return inertia


@njit(cache=True, nogil=True, error_model="numpy")
def _lloyd_restarts(X: NDArray[np.float64], centers: NDArray[np.float64], labels: NDArray[np.int64],
                    inertia: NDArray[np.float64], max_iter: int, threshold: float) -> None:
    n, d = X.shape
    k = centers.shape[1]
    sums = np.empty(max(k * d, 1))
    counts = np.empty(max(k, 1))
    for r in range(centers.shape[0]):
        for _ in range(max_iter):
            _assign(X, centers[r], labels[r])
            for c in range(k * d):
                sums[c] = 0.0
            for c in range(k):
                counts[c] = 0.0
            for i in range(n):
                c = labels[r, i]
                counts[c] += 1.0
                for f in range(d):
                    sums[c * d + f] += X[i, f]
            shift = 0.0
            for c in range(k):
                if counts[c] > 0:
                    for f in range(d):
                        updated = sums[c * d + f] / counts[c]
                        step = updated - centers[r, c, f]
                        shift += step * step
                        centers[r, c, f] = updated
            if shift <= threshold:
                break
        inertia[r] = _assign(X, centers[r], labels[r])


def plusplus(X: NDArray[np.float64], first: NDArray[np.int64], u: NDArray[np.float64],
             seeds: NDArray[np.float64]) -> None:
    """Fill ``seeds`` (n_init, k, d) as ``_lloyd.plusplus`` does: restart r starts at ``X[first[r]]``; its j-th
    centre is the first point whose cumulative squared distance to the chosen centres exceeds ``u[j - 1, r]``
    of the total."""
    _plusplus(X, first, u, seeds)


def lloyd_restarts(X: NDArray[np.float64], centers: NDArray[np.float64], labels: NDArray[np.int64],
                   inertia: NDArray[np.float64], max_iter: int, threshold: float) -> None:
    """Lloyd iterations of every restart in place, as ``_lloyd.lloyd_restarts``: ``centers`` (n_init, k, d),
    ``labels`` (n_init, n), ``inertia`` (n_init,)."""
    _lloyd_restarts(X, centers, labels, inertia, int(max_iter), float(threshold))
