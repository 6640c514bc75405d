"""Shamir & Tishby's pairwise co-membership instability (Shamir & Tishby 2007, Theorem 3)."""

from __future__ import annotations

import sys

import numpy as np

from ordercube.tasks.criteria.base import Criterion, TrialFits


def pairwise_instability(fits: TrialFits) -> float:
    """Shamir & Tishby (2007), Theorem 3: the estimate theta_{k,4m} of ``stab(A_k, D, m)``.

    ``S1`` and ``S2`` are the two halves of m points, ``S3`` the independent evaluation sample of
    2m points. With ``(x_1, ..., x_2m)`` a random permutation of ``S3``,
    ``theta = (1/m) sum_{i<=m} 1{ A_k(S1)(x_i, x_{m+i}) != A_k(S2)(x_i, x_{m+i}) }``, where
    ``A(S)(x, y)`` is 1 when the solution fitted on ``S`` puts x and y in the same cluster.
    It is invariant to relabeling either solution and lies in [0, 1].
    """
    on_first, on_second = fits.evaluation_labels
    assert fits.pairing is not None  # drawn together with the evaluation sample
    m = fits.pairing.shape[0] // 2
    if m and on_first.dtype == on_second.dtype == fits.pairing.dtype == np.int64 and (
            on_first.shape == on_second.shape == fits.pairing.shape) and "numba" in sys.modules:
        # compiled when numba is loaded already (by the exact 1-D k-means): a sweep of Cython kernels never imports it
        from ordercube.tasks.criteria._pairwise_numba import split_pairs

        # np.mean of m booleans: their exact count (a float64 sum of 0s and 1s) divided by m, as here
        return float(np.float64(split_pairs(on_first, on_second, fits.pairing, m)) / np.float64(m))
    left, right = fits.pairing[:m], fits.pairing[m : 2 * m]
    together_first = on_first[left] == on_first[right]
    together_second = on_second[left] == on_second[right]
    return float(np.mean(together_first != together_second))


PAIRWISE = Criterion(
    name="pairwise", citation="Shamir & Tishby 2007",
    evaluate=pairwise_instability,
    min_k=2,
    needs_evaluation_sample=True,
    description="Shamir-Tishby pairwise co-membership instability on an independent sample",
    label="pairwise instability theta_k",
    sqrt_n_scaling=True,
)
