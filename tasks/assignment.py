"""The weight of a maximum-weight perfect matching of a square integer table (the Hungarian method, compiled).

The criteria need only the matched count of a k x k confusion table (the permutation itself is never
used), and that count is unique however ties between optimal permutations are broken, so this gives
exactly what ``scipy.optimize.linear_sum_assignment(table, maximize=True)`` gives (the tests compare them
on random, tied and degenerate tables). It exists for start-up time: importing ``scipy.optimize`` costs
0.13 s in a k-means sweep (whose numba kernels have loaded scipy.linalg already; 0.4-0.55 s in a fresh
process), paid by every process that matches labels, against 5 ms to load this kernel from numba's cache;
per table it is also 2-4x faster for k <= 10 (``benchmarks/bench_matching.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray


@njit(cache=True, nogil=True)
def _matched_weight(table: NDArray[np.int64]) -> np.int64:
    """Shortest augmenting paths with row and column potentials (Kuhn-Munkres, O(k^3)), on integers.

    Minimises ``-table``: every potential, reduced cost and slack stays an integer, so the result is
    exact. Row and column indices are 1-based inside, index 0 being the free root of each search.
    """
    k = table.shape[0]
    unbounded = np.iinfo(np.int64).max // 4
    row_potential = np.zeros(k + 1, dtype=np.int64)
    column_potential = np.zeros(k + 1, dtype=np.int64)
    row_of_column = np.zeros(k + 1, dtype=np.int64)  # 0: unmatched
    previous_column = np.zeros(k + 1, dtype=np.int64)
    slack = np.empty(k + 1, dtype=np.int64)
    visited = np.empty(k + 1, dtype=np.bool_)
    for row in range(1, k + 1):
        row_of_column[0] = row
        column = 0
        slack[:] = unbounded
        visited[:] = False
        while True:  # grow the tree of tight edges until it reaches an unmatched column
            visited[column] = True
            tree_row = row_of_column[column]
            step, next_column = unbounded, 0
            for j in range(1, k + 1):
                if not visited[j]:
                    reduced = -table[tree_row - 1, j - 1] - row_potential[tree_row] - column_potential[j]
                    if reduced < slack[j]:
                        slack[j] = reduced
                        previous_column[j] = column
                    if slack[j] < step:
                        step, next_column = slack[j], j
            for j in range(k + 1):
                if visited[j]:
                    row_potential[row_of_column[j]] += step
                    column_potential[j] -= step
                else:
                    slack[j] -= step
            column = next_column
            if row_of_column[column] == 0:
                break
        while column != 0:  # flip the augmenting path
            before = previous_column[column]
            row_of_column[column] = row_of_column[before]
            column = before
    total = np.int64(0)
    for j in range(1, k + 1):
        total += table[row_of_column[j] - 1, j - 1]
    return total


@njit(cache=True, nogil=True)
def _matched_weights(tables: NDArray[np.int64]) -> NDArray[np.int64]:
    weights = np.empty(tables.shape[0], dtype=np.int64)
    for i in range(tables.shape[0]):
        weights[i] = _matched_weight(tables[i])
    return weights


def matched_weight(table: NDArray[np.integer]) -> int:
    """The largest ``sum_i table[i, pi(i)]`` over permutations ``pi``.

    Parameters
    ----------
    table : ndarray of shape (k, k), integers
        Non-negative counts in practice (a confusion table); any integers up to 2**60 / k work.
    """
    return int(_matched_weight(np.ascontiguousarray(table, dtype=np.int64)))


def matched_weights(tables: NDArray[np.integer]) -> NDArray[np.int64]:
    """:func:`matched_weight` of each of ``tables`` (shape (draws, k, k)) in one compiled loop."""
    return _matched_weights(np.ascontiguousarray(tables, dtype=np.int64))
