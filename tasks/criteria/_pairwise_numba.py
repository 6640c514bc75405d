"""The pairwise criterion's count in one compiled pass (imported when the criterion first runs: numba is heavy)."""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray


@njit(cache=True, nogil=True)
def split_pairs(on_first: NDArray[np.int64], on_second: NDArray[np.int64], pairing: NDArray[np.int64], m: int) -> int:
    """How many of the pairs ``(pairing[i], pairing[m + i])``, ``i < m``, one solution puts together and the other
    apart: ``np.sum((a[l] == a[r]) != (b[l] == b[r]))`` without its four gathered copies."""
    count = 0
    for i in range(m):
        left, right = pairing[i], pairing[m + i]
        count += (on_first[left] == on_first[right]) != (on_second[left] == on_second[right])
    return count
