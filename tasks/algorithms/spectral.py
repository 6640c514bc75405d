"""Spectral clustering (Ng, Jordan & Weiss) on a k-nearest-neighbour graph, through scikit-learn.

Seed 001 uses it for the ring data of its Figure 2, where k-means is the wrong model; its natural
predictor is the nearest neighbour (a solution defined by a graph extends to a new point through
the closest fitted point). The random state is drawn from the cell's generator and scikit-learn runs
with one thread, so results do not depend on the machine.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits


def spectral(
    X: NDArray[np.float64], k: int, rng: np.random.Generator, *, n_neighbors: int = 10
) -> NDArray[np.int64]:
    """Labels of ``X`` (n_samples, n_features) in ``k`` clusters of the symmetrised kNN graph.

    The embedding is discretised with ``cluster_qr`` (deterministic, no k-means restarts).
    """
    from sklearn.cluster import SpectralClustering  # imported on use: it is slow to import

    with threadpool_limits(limits=1), warnings.catch_warnings():
        # well-separated clusters give a disconnected kNN graph: that is the case the method is for
        warnings.filterwarnings("ignore", "Graph is not fully connected", UserWarning)
        model = SpectralClustering(n_clusters=k, affinity="nearest_neighbors", n_neighbors=min(n_neighbors, X.shape[0] - 1),
                                   assign_labels="cluster_qr", random_state=int(rng.integers(2**31 - 1)))
        return model.fit_predict(X).astype(np.int64)
