"""Label matching up to permutation (the Hungarian method, compiled in :mod:`ordercube.tasks.assignment`)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def confusion(a: NDArray[np.int64], b: NDArray[np.int64], k: int) -> NDArray[np.int64]:
    """``C[i, j]`` = number of points labelled ``i`` in ``a`` and ``j`` in ``b`` (labels in 0..k-1)."""
    return np.bincount(a * k + b, minlength=k * k).reshape(k, k)


def matched_disagreement(a: NDArray[np.int64], b: NDArray[np.int64], k: int) -> float:
    """Roth et al. (2002), eq. (2): the smallest fraction of points on which ``a`` and a relabeling of ``b`` differ.

    ``min over permutations pi of (1/n) sum_i 1{a_i != pi(b_i)}``, found by the Hungarian method on
    the confusion matrix in O(k^3) instead of trying all k! permutations. The value lies in
    ``[0, 1 - 1/k]``.
    """
    from ordercube.tasks.assignment import matched_weight  # numba: not for a status or a validate

    return 1.0 - matched_weight(confusion(a, b, k)) / a.shape[0]
