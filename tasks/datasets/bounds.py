"""How large (and how small) data values may be before squared distances stop being numbers.

Every algorithm and criterion works with squared Euclidean distances and sums of them: a k-means
inertia sums n of them, a pairwise dispersion (Gap's W_k, a distance matrix's total) up to n^2. With
values up to ``M`` in absolute value, one squared distance in d dimensions is at most ``d (2M)^2`` and a
sum over all pairs at most ``n^2 d (2M)^2``. Keeping that below ``SAFE_SUM = 1e300`` leaves eight
orders of magnitude under float64's largest number (1.8e308) for the products and further sums the
criteria form (a mean over trials, a variance times a count), so nothing overflows to inf and no
distance comparison turns into ``inf - inf = nan``.

At the other end, a squared difference below the smallest normal float64 (2.2e-308) becomes a denormal
or zero: when every feature spreads over less than ``MIN_SPREAD`` all points look identical. And when they
are identical (every column constant), every partition into k clusters is as good as any other: each
criterion then reads ties or noise (every k "stable", or every k "33% error") and the choice is the grid's
edge, not the data's; there is nothing to cluster.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import NDArray

SAFE_SUM = 1e300
MIN_SPREAD = 1e-150
#: The largest |value| a synthetic generator's location or scale parameter may take: with it, points of
#: 10^40 rows in 10^6 dimensions still stay under :func:`largest_magnitude`.
MAX_PARAMETER = 1e100


def largest_magnitude(n_rows: int, n_features: int) -> float:
    """The largest max |x| for which a sum of squared distances over all pairs of ``n_rows`` points in
    ``n_features`` dimensions stays below ``SAFE_SUM``: ``sqrt(SAFE_SUM / (4 n^2 d))``."""
    return math.sqrt(SAFE_SUM / (4.0 * max(n_rows, 1) ** 2 * max(n_features, 1)))


def first_nonfinite(X: NDArray[np.float64], *, nan: bool = True) -> tuple[int, int] | None:
    """(row, column) of the first value of ``X`` (2-D, row-major order) that is inf (or NaN when ``nan``)."""
    bad = ~np.isfinite(X) if nan else np.isinf(X)
    if not bad.any():
        return None
    row, column = np.unravel_index(int(np.argmax(bad)), X.shape)
    return int(row), int(column)


def too_large(X: NDArray[np.float64]) -> tuple[int, float, float] | None:
    """(column, its max |x|, the bound) for the column with the largest values of a finite 2-D ``X``,
    when they exceed :func:`largest_magnitude`; None when ``X`` is safe."""
    if X.size == 0:
        return None
    peaks = np.abs(X).max(axis=0)
    column = int(np.argmax(peaks))
    bound = largest_magnitude(*X.shape)
    return (column, float(peaks[column]), bound) if peaks[column] > bound else None


def too_small(X: NDArray[np.float64]) -> float | None:
    """The largest spread (max - min) of a column of a finite 2-D ``X`` when it is positive but below
    ``MIN_SPREAD`` (every squared distance underflows); None otherwise."""
    if X.size == 0:
        return None
    spread = float((X.max(axis=0) - X.min(axis=0)).max())
    return spread if 0.0 < spread < MIN_SPREAD else None


def rows_identical(X: NDArray[np.float64]) -> bool:
    """Whether the rows of a 2-D ``X`` (two or more) are all the same point: every column takes one value
    (NaN, a missing value, ignored; a column with no value at all counts as constant). False without
    columns: there is no point then, which is a different refusal."""
    if X.shape[0] < 2 or X.shape[1] == 0:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column's nanmax
        spread = np.nanmax(X, axis=0) - np.nanmin(X, axis=0)
    return not bool((spread > 0).any())
