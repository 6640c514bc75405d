"""Exact least-squares segmentation of a series into k segments, every k at once, and its held-out error.

The segment-neighbourhood dynamic programme (Auger & Lawrence 1989): the best cost of the first j points in k
segments is the smallest, over the start i of the last segment, of the best cost of the first i points in k - 1
segments plus the squared error of points i..j-1 about their mean, in O(k_max m^2). The held-out error of a
segmentation fitted on one half of a sample is the mean squared error of the other half's points about the means
of the segments their times fall in (the sample-splitting selection of Zou, Wang & Li 2020, section 2).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def segment_all(y: NDArray[np.float64], k_max: int) -> dict[int, NDArray[np.int64]]:
    """The least-squares segmentation of ``y`` (ordered) into k segments for every k = 1..k_max.

    Parameters
    ----------
    y : ndarray of shape (m,)
    k_max : int
        At most m.

    Returns
    -------
    dict
        k → the start indices of segments 2..k, of shape (k - 1,), increasing (ties: the earliest split).
    """
    m = len(y)
    first = np.concatenate([[0.0], np.cumsum(y)])
    second = np.concatenate([[0.0], np.cumsum(y * y)])
    start, end = np.arange(m + 1)[:, None], np.arange(m + 1)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = second[end] - second[start] - (first[end] - first[start]) ** 2 / (end - start)
    cost[start >= end] = np.inf  # cost[i, j]: points i..j-1 as one segment
    best = cost[0].copy()  # best[j]: the first j points in k segments
    back = []
    for _ in range(2, k_max + 1):
        total = best[:, None] + cost
        back.append(np.argmin(total, axis=0))
        best = total[back[-1], np.arange(m + 1)]
    out = {1: np.zeros(0, dtype=np.int64)}
    for k in range(2, k_max + 1):
        starts, j = [], m
        for layer in range(k - 2, -1, -1):
            j = int(back[layer][j])
            starts.append(j)
        out[k] = np.asarray(starts[::-1], dtype=np.int64)
    return out


def heldout_error(t_fit: NDArray[np.float64], y_fit: NDArray[np.float64], starts: NDArray[np.int64],
                  t_test: NDArray[np.float64], y_test: NDArray[np.float64]) -> float:
    """Mean squared error of the test points about the fitted segments' means.

    ``t_fit`` is increasing and ``starts`` the segments' start indices into it (:func:`segment_all`); a segment
    ends halfway between its last fitted time and the next segment's first.
    """
    bounds = np.concatenate([[0], starts, [len(y_fit)]])
    means = np.add.reduceat(y_fit, bounds[:-1]) / np.diff(bounds)
    cuts = (t_fit[starts - 1] + t_fit[starts]) / 2
    predicted = means[np.searchsorted(cuts, t_test, side="right")]
    return float(np.mean((y_test - predicted) ** 2))
