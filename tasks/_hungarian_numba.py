"""The numba twin of ``_hungarian.pyx``, used when the compiled kernels were not built (see ``tasks/kernels.py``).

The same integer operations in the same order, so the same matched weights; the tests compare the two
on random, tied and degenerate tables.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray


@njit(cache=True, nogil=True)
def _matched(table: NDArray[np.int64], work: NDArray[np.int64]) -> np.int64:
    """``matched`` of ``_hungarian.pyx``: shortest augmenting paths with row and column potentials on integers."""
    k = table.shape[0]
    unbounded = np.int64(0x7FFFFFFFFFFFFFFF // 4)
    row_potential = work[0]
    column_potential = work[1]
    row_of_column = work[2]  # 0: unmatched
    previous_column = work[3]
    slack = work[4]
    visited = work[5]
    for j in range(k + 1):
        row_potential[j] = 0
        column_potential[j] = 0
        row_of_column[j] = 0
        previous_column[j] = 0
    for row in range(1, k + 1):
        row_of_column[0] = row
        column = 0
        for j in range(k + 1):
            slack[j] = unbounded
            visited[j] = 0
        while True:  # grow the tree of tight edges until it reaches an unmatched column
            visited[column] = 1
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
def _matched_weights(tables: NDArray[np.int64], weights: NDArray[np.int64]) -> None:
    k = tables.shape[1]
    work = np.empty((6, k + 1), dtype=np.int64)
    for i in range(tables.shape[0]):
        weights[i] = _matched(tables[i], work) if k > 0 else 0


def matched_weights(tables: NDArray[np.int64], weights: NDArray[np.int64]) -> None:
    """The matched weight of each of ``tables`` (draws, k, k), int64 and C-contiguous, into ``weights``."""
    _matched_weights(tables, weights)
