"""Exact k-means in one dimension: the global optimum of the k-means objective, for several k at once.

On sorted points an optimal clustering is a partition into contiguous runs, and the cost of a run is
read from prefix sums in O(1). With ``F_c(i)`` the best cost of splitting the suffix ``x[i:]`` into
``c`` runs, ``F_1(i) = C(i, n)`` and ``F_c(i) = min_{j > i} C(i, j) + F_{c-1}(j)``. The argmin is
monotone in ``i`` (the 1-D cost satisfies the quadrangle inequality), so each layer is solved by
divide and conquer in O(n log n), here level-synchronously as array operations, not per index.
Sorting and prefix sums are done once per sample and every layer serves every k up to the largest:
this is what Shamir & Tishby's estimator (seed 001, Thm. 3) needs ("k-means solutions that reach the
optimum"), where Lloyd's algorithm from a poor start does not.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray


def _run_cost(S1: NDArray[np.float64], S2: NDArray[np.float64], i: NDArray[np.int64], j: NDArray[np.int64]
              ) -> NDArray[np.float64]:
    """Sum of squared deviations from the mean of the sorted run ``x[i:j]`` (arrays of i < j)."""
    total = S1[j] - S1[i]
    return (S2[j] - S2[i]) - total * total / (j - i)


def _layer(S1: NDArray[np.float64], S2: NDArray[np.float64], previous: NDArray[np.float64], n: int, c: int
           ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """``F_c(i)`` and its leftmost argmin ``j`` for every ``i`` in ``[0, n - c]`` (``previous`` is F_{c-1})."""
    best = np.full(n - c + 1, np.inf)
    split = np.zeros(n - c + 1, dtype=np.int64)
    lo, hi = np.array([0]), np.array([n - c])
    jlo, jhi = np.array([1]), np.array([n - c + 1])
    while lo.size:
        mid = (lo + hi) // 2
        start = np.maximum(mid + 1, jlo)
        counts = jhi - start + 1
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        j = np.arange(counts.sum()) - np.repeat(offsets - start, counts)
        values = _run_cost(S1, S2, np.repeat(mid, counts), j) + previous[j]
        minima = np.minimum.reduceat(values, offsets)
        hits = np.flatnonzero(values == np.repeat(minima, counts))
        chosen = j[hits[np.searchsorted(hits, offsets)]]
        best[mid], split[mid] = minima, chosen
        left, right = lo <= mid - 1, mid + 1 <= hi
        lo, hi, jlo, jhi = (np.concatenate([lo[left], mid[right] + 1]), np.concatenate([mid[left] - 1, hi[right]]),
                            np.concatenate([jlo[left], chosen[right]]), np.concatenate([chosen[left], jhi[right]]))
    return best, split


def kmeans_1d_exact(x: NDArray[np.float64], ks: Sequence[int]) -> dict[int, NDArray[np.int64]]:
    """Optimal k-means labels of the 1-D points ``x`` for every k in ``ks``.

    Parameters
    ----------
    x : ndarray of shape (n,) or (n, 1)
    ks : sequence of int
        Each with ``1 <= k <= n``.

    Returns
    -------
    dict mapping k to labels of shape (n,)
        Clusters are numbered from left to right.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    n = x.size
    order = np.argsort(x, kind="stable")
    centred = x[order] - x.mean()  # smaller prefix sums, fewer digits lost in the differences
    S1 = np.concatenate([[0.0], np.cumsum(centred)])
    S2 = np.concatenate([[0.0], np.cumsum(centred * centred)])
    suffix_cost = _run_cost(S1, S2, np.arange(n), np.full(n, n))  # F_1(i) for i in [0, n - 1]
    splits: dict[int, NDArray[np.int64]] = {}  # layer c: the optimal first split of x[i:] into c runs
    top = max(ks)
    for c in range(2, top + 1):
        previous = np.append(suffix_cost, np.inf)  # F_{c-1} is defined up to n - c + 1
        if c < top:
            suffix_cost, splits[c] = _layer(S1, S2, previous, n, c)
        else:  # the last layer is only ever read at i = 0: one O(n) scan instead of a full layer
            j = np.arange(1, n - c + 2)
            splits[c] = np.array([1 + int(np.argmin(_run_cost(S1, S2, np.zeros_like(j), j) + previous[j]))])
    labels = {}
    for k in ks:
        bounds, i = [0], 0
        for c in range(k, 1, -1):
            i = int(splits[c][i])
            bounds.append(i)
        sorted_labels = np.repeat(np.arange(k), np.diff([*bounds, n]))
        labels[k] = np.empty(n, dtype=np.int64)
        labels[k][order] = sorted_labels
    return labels


def within_cluster_sum_of_squares(x: NDArray[np.float64], labels: NDArray[np.int64]) -> float:
    """The k-means objective of ``labels`` on the 1-D points ``x``."""
    x = np.asarray(x, dtype=np.float64).ravel()
    counts = np.bincount(labels)
    sums = np.bincount(labels, weights=x)
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    return float(((x - means[labels]) ** 2).sum())
