"""Per-cluster stability of a partition: Hennig's (2007) clusterwise Jaccard, as fpc::clusterboot reports it."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def clusterwise_jaccard(labels: NDArray[np.int64], k: int, rows: NDArray[np.int64],
                        resample_labels: NDArray[np.int64]) -> NDArray[np.float64]:
    """Each cluster's Jaccard similarity to its most similar cluster of one resample's clustering.

    Hennig (2007), eq. 2.1 and section 2.2: with C* the points of cluster C (of ``labels``, codes 0..k-1) that are in
    the resample (``rows``, clustered into ``resample_labels``), gamma_C = max over the resample's clusters D of
    |C* ∩ D| / |C* ∪ D|. NaN for a cluster with no point in the resample. Returns an array of shape (k,).
    """
    mine = labels[rows]
    theirs = np.unique(resample_labels, return_inverse=True)[1]
    both = np.zeros((k, int(theirs.max()) + 1 if theirs.size else 0), dtype=np.int64)
    np.add.at(both, (mine, theirs), 1)
    present, sizes = both.sum(axis=1), both.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        jaccard = both / (present[:, None] + sizes[None, :] - both)
    best = jaccard.max(axis=1) if both.shape[1] else np.full(k, np.nan)
    return np.where(present > 0, best, np.nan)
