"""Spectral clustering (Ng, Jordan & Weiss) on a k-nearest-neighbour graph, for several k at once.

Shamir & Tishby (2007) use it for the ring data of their Figure 2, where k-means is the wrong model; its natural
predictor is the nearest neighbour (a solution defined by a graph extends to a new point through
the closest fitted point). The graph is scikit-learn's ``SpectralClustering(affinity=
"nearest_neighbors")`` graph (the symmetrised connectivity of each point's ``n_neighbors`` nearest
points, itself included), embedded by :func:`sklearn.manifold.spectral_embedding` and discretised by
``cluster_qr`` (Damle, Minden & Ying 2019: deterministic, no k-means restarts).

The graph and its eigenvectors are computed once for the largest k; the k-cluster solution reads the
first k of them. ``cluster_qr`` depends only on the subspace the vectors span (it is invariant to a
rotation of the embedding), so this equals a separate fit per k up to the eigensolver's tolerance,
at a sixth of the cost for k = 2..7. The eigensolver's random start comes from the cell's generator
and everything runs with one thread, so results do not depend on the machine.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import qr, svd
from threadpoolctl import threadpool_limits


def cluster_qr(vectors: NDArray[np.float64]) -> NDArray[np.int64]:
    """Damle, Minden & Ying (2019), Algorithm 1: the partition closest to the embedding ``vectors`` (n, k).

    Column-pivoted QR of ``vectors.T`` picks k well-separated rows; the orthogonal polar factor of
    their block rotates the embedding so that each cluster lies along one axis.
    """
    k = vectors.shape[1]
    _, _, pivots = qr(vectors.T, pivoting=True, mode="economic")
    left, _, right = svd(vectors[pivots[:k], :].T)
    return np.abs(vectors @ (left @ right)).argmax(axis=1).astype(np.int64)


def spectral_many(
    X: NDArray[np.float64], ks: Sequence[int], rng: np.random.Generator, *, n_neighbors: int = 10
) -> dict[int, NDArray[np.int64]]:
    """Labels of ``X`` (n_samples, n_features) in k clusters of the symmetrised kNN graph, for every k in ``ks``."""
    from sklearn.neighbors import kneighbors_graph  # imported on use: scikit-learn is slow to import

    with threadpool_limits(limits=1):
        connectivity = kneighbors_graph(X, n_neighbors=min(n_neighbors, X.shape[0] - 1), include_self=True)
    return spectral_of_graph(connectivity, ks, rng)


def spectral_of_graph(connectivity: Any, ks: Sequence[int], rng: np.random.Generator) -> dict[int, NDArray[np.int64]]:
    """:func:`spectral_many` from the kNN connectivity (a sparse (n, n) 0/1 matrix) already computed."""
    from sklearn.manifold import spectral_embedding

    with threadpool_limits(limits=1), warnings.catch_warnings():
        # well-separated clusters give a disconnected kNN graph: that is the case the method is for
        warnings.filterwarnings("ignore", "Graph is not fully connected", UserWarning)
        affinity = 0.5 * (connectivity + connectivity.T)
        embedding = spectral_embedding(affinity, n_components=max(ks), drop_first=False,
                                       random_state=int(rng.integers(2**31 - 1)))
    return {k: cluster_qr(embedding[:, :k]) for k in ks}


def spectral(
    X: NDArray[np.float64], k: int, rng: np.random.Generator, *, n_neighbors: int = 10
) -> NDArray[np.int64]:
    """Labels of ``X`` (n_samples, n_features) in ``k`` clusters of the symmetrised kNN graph."""
    return spectral_many(X, [k], rng, n_neighbors=n_neighbors)[k]
