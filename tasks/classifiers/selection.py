"""Gene (column) selection by the two-sample t statistic, for kNN on microarray data (Daudin & Mary-Huard 2008, Sec. 4.2).

For two classes, ranking columns by |t| with pooled variance gives the same order as the BSS/WSS ratio of
Dudoit, Fridlyand & Speed (2002) and plsgenomics' ``variable.selection``: with class sizes n0, n1 and
pooled variance s^2, ``BSS/WSS = (n0 n1 / n) (mean1 - mean0)^2 / ((n - 2) s^2) = t^2 / (n - 2)``, an
increasing function of |t|.

Select on a trial's LEARNING set only: ranking genes on the whole file would use the test tissues' labels
and make the test error optimistic.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def t_statistics(X: NDArray[np.float64], y: NDArray[np.int64]) -> NDArray[np.float64]:
    """Two-sample t statistic with pooled variance for each column, class 1 against class 0.

    ``t = (mean1 - mean0) / sqrt(s^2 (1/n1 + 1/n0))`` with
    ``s^2 = (sum_class0 (x - mean0)^2 + sum_class1 (x - mean1)^2) / (n0 + n1 - 2)``, as
    ``scipy.stats.ttest_ind(X[y == 1], X[y == 0], equal_var=True)``.

    A column constant on the learning set gets ``t = 0``: it cannot separate the classes, and 0 keeps it
    last in the ranking where scipy's NaN would have no order. A column constant within each class but
    with different class values has zero pooled variance and a perfect split: it gets ``+-inf`` (scipy's
    value too) and ranks first. These zero-variance cases are detected from the values themselves (every
    value of a class equal), not from a computed variance, whose rounding can leave 1e-34 instead of 0
    and turn a constant column into a huge t.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
        Labels in {0, 1}; each class non-empty and ``n0 + n1 - 2 >= 1``.

    Returns
    -------
    ndarray of shape (p,)

    Raises
    ------
    ValueError
        If the labels are not in {0, 1}, a class is empty, or the pooled variance has no degree of freedom.
    """
    X, y = _validated(X, y)
    x0, x1 = X[y == 0], X[y == 1]
    n0, n1 = x0.shape[0], x1.shape[0]
    mean0, mean1 = x0.mean(axis=0), x1.mean(axis=0)
    pooled = (((x0 - mean0) ** 2).sum(axis=0) + ((x1 - mean1) ** 2).sum(axis=0)) / (n0 + n1 - 2)
    flat = np.ptp(x0, axis=0) == 0
    flat &= np.ptp(x1, axis=0) == 0
    # a class constant in a column has that value as its exact mean; the computed mean may be off by an ulp
    gap = np.where(flat, x1[0] - x0[0], mean1 - mean0)
    pooled[flat] = 0.0
    scale = np.sqrt(pooled * (1.0 / n0 + 1.0 / n1))
    t = np.zeros(X.shape[1], dtype=np.float64)
    np.divide(gap, scale, out=t, where=scale > 0)
    zero_variance_split = (scale == 0) & (gap != 0)
    t[zero_variance_split] = np.copysign(np.inf, gap[zero_variance_split])
    return t


def top_by_t(X: NDArray[np.float64], y: NDArray[np.int64], g: int) -> NDArray[np.int64]:
    """Indices of the ``g`` columns with the largest |t| (:func:`t_statistics`), largest first.

    Equal |t| keep column order (stable sort). With ``g >= p`` every column is returned, in that order.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        The learning set only (see the module docstring).
    y : ndarray of shape (n,)
        Labels in {0, 1}.
    g : int
        Number of columns to keep, ``>= 1``.

    Returns
    -------
    ndarray of shape (min(g, p),), dtype int64
    """
    if isinstance(g, bool) or not isinstance(g, int | np.integer) or g < 1:
        raise ValueError(f"g: expected a number of genes >= 1, got {g!r}")
    magnitude = np.abs(t_statistics(X, y))
    return np.argsort(-magnitude, kind="stable")[:g].astype(np.int64)


def _validated(X: NDArray[np.float64], y: NDArray[np.int64]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """``X`` as float64 (n, p) and ``y`` as int64 (n,) with two usable classes, or a ``ValueError``."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"expected X of shape (n, p) and y of shape (n,), got {X.shape} and {y.shape}")
    values = np.unique(y)
    if not np.isin(values, (0, 1)).all():
        raise ValueError(f"y: expected labels in {{0, 1}}, got labels {values.tolist()}; recode the classes as 0 and 1")
    y = y.astype(np.int64)
    n1 = int(y.sum())
    n0 = y.size - n1
    if n0 == 0 or n1 == 0:
        raise ValueError(f"the t statistic needs both classes, got {n0} points of class 0 and {n1} of class 1; "
                         f"select genes on a learning set that holds both classes")
    if n0 + n1 - 2 < 1:
        raise ValueError(f"the pooled variance needs n0 + n1 - 2 >= 1, got n0 = {n0}, n1 = {n1}; "
                         f"use a larger learning set")
    return X, y
