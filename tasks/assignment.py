"""The weight of a maximum-weight perfect matching of a square integer table (the Hungarian method, compiled).

The criteria need only the matched count of a k x k confusion table (the permutation itself is never
used), and that count is unique however ties between optimal permutations are broken, so this gives
exactly what ``scipy.optimize.linear_sum_assignment(table, maximize=True)`` gives (the tests compare them
on random, tied and degenerate tables). It exists for start-up time: importing ``scipy.optimize`` costs
0.4-0.55 s in a fresh process, paid by every process that matches labels, against well under a
millisecond to load this compiled module (``_hungarian.pyx``, Cython; formerly numba, whose import
and first dispatch cost 0.75 s, and still the fallback where it was not built: ``tasks/kernels.py``); per
table it is also 2-4x faster for k <= 10 (``benchmarks/bench_matching.py``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.kernels import load

_matched_weights = load("ordercube.tasks._hungarian").matched_weights


def matched_weight(table: NDArray[np.integer]) -> int:
    """The largest ``sum_i table[i, pi(i)]`` over permutations ``pi``.

    Parameters
    ----------
    table : ndarray of shape (k, k), integers
        Non-negative counts in practice (a confusion table); any integers up to 2**60 / k work.
    """
    table = np.asarray(table)
    return int(matched_weights(table.reshape((1, *table.shape)))[0])


def matched_weights(tables: NDArray[np.integer]) -> NDArray[np.int64]:
    """:func:`matched_weight` of each of ``tables`` (shape (draws, k, k)) in one compiled loop."""
    tables = np.ascontiguousarray(tables, dtype=np.int64)
    if tables.ndim != 3 or tables.shape[1] != tables.shape[2]:
        raise ValueError(f"matched_weights needs square tables, shape (draws, k, k); got shape {tables.shape}")
    weights = np.empty(tables.shape[0], dtype=np.int64)
    _matched_weights(tables, weights)
    return weights
