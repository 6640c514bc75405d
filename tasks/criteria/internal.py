"""Internal validity indices on the halves' own fits: the silhouette (Rousseeuw 1987), Calinski-Harabasz
(1974) and Davies-Bouldin (1979), by scikit-learn's metrics, as NbClust reports them beside resampling
criteria.

Each is computed on both halves with their own clustering (``labels_first`` on ``first``, ``labels_second``
on ``second``) and the two values averaged: no refitting, no prediction, the fits every other criterion of the
trial reads. The silhouette costs O(m^2) distances: on halves of more than ``max_points`` points it uses the
first ``max_points`` of each (the halves are random splits, so these are a random sample, the same for
every k of the trial). A half whose solution has fewer than two distinct labels, or one cluster per point,
has no index (NaN), nor does the trial when neither half has one.

Decisions: the silhouette and Calinski-Harabasz are largest at the best k (argmax of the mean over trials),
Davies-Bouldin smallest (argmin). None is defined for k = 1.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.criteria.base import Criterion, Decision, TrialFits
from ordercube.tasks.params import integer


def _per_half(index: Callable[[NDArray[np.float64], NDArray[np.int64]], float], fits: TrialFits,
              max_points: int | None = None) -> float:
    values = []
    for X, labels in ((fits.first, fits.labels_first), (fits.second, fits.labels_second)):
        if max_points is not None:
            X, labels = X[:max_points], labels[:max_points]
        distinct = np.unique(labels).size
        if 2 <= distinct <= labels.size - 1:
            values.append(float(index(X, labels)))
    return float(np.mean(values)) if values else float("nan")


def silhouette(fits: TrialFits, *, max_points: int = 2000) -> float:
    """The mean silhouette width of both halves' solutions (in [-1, 1], larger is better)."""
    from sklearn.metrics import silhouette_score

    return _per_half(silhouette_score, fits, max_points)


def calinski_harabasz(fits: TrialFits) -> float:
    """The Calinski-Harabasz variance ratio of both halves' solutions (larger is better)."""
    from sklearn.metrics import calinski_harabasz_score

    return _per_half(calinski_harabasz_score, fits)


def davies_bouldin(fits: TrialFits) -> float:
    """The Davies-Bouldin index of both halves' solutions (>= 0, smaller is better)."""
    from sklearn.metrics import davies_bouldin_score

    return _per_half(davies_bouldin_score, fits)


SILHOUETTE = Criterion(
    name="silhouette", citation="Rousseeuw 1987", evaluate=silhouette, min_k=2, decision=Decision(rule="largest"), needs_coordinates=True,
    options={"max_points": 2000}, ranges={"max_points": integer(3)},
    # scikit-learn's call, twice (a half each): 0.5 ms, and 30 ms on 1,500 points (O(m^2) distances)
    seconds_per_cell=lambda options, n: 2 * (5e-4 + 1.3e-8 * min(n // 2, options["max_points"]) ** 2),
    description="Rousseeuw's mean silhouette width of each half's own solution (scikit-learn), averaged over the halves",
    label="mean silhouette width",
)
CALINSKI_HARABASZ = Criterion(
    name="calinski_harabasz", citation="Calinski & Harabasz 1974", evaluate=calinski_harabasz, min_k=2, decision=Decision(rule="largest"),
    needs_coordinates=True,
    description="Calinski-Harabasz variance ratio of each half's own solution (scikit-learn), averaged over the halves",
    label="Calinski-Harabasz ratio",
)
DAVIES_BOULDIN = Criterion(
    name="davies_bouldin", citation="Davies & Bouldin 1979", evaluate=davies_bouldin, min_k=2, decision=Decision(rule="smallest", ties="smallest"),
    needs_coordinates=True,
    description="Davies-Bouldin index of each half's own solution (scikit-learn), averaged over the halves",
    label="Davies-Bouldin index",
)
INTERNAL_CRITERIA = (SILHOUETTE, CALINSKI_HARABASZ, DAVIES_BOULDIN)
