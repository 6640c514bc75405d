"""Clustering objects given only by their dissimilarities (a ``distances`` dataset), as fpc's
``nselectboot(distances=TRUE)`` does.

A half arrives in :func:`ordercube.tasks.datasets.sources.node_halves`' layout: its rows are its objects, its first m
columns their dissimilarities among themselves (the block clustered here), the rest those to the other half
(read by the ``nearest_object`` predictor). Each algorithm is the same method as on points, on that block:

- ``agglomerative``: scipy's linkage of the condensed block (average, complete or single; Ward's criterion is
  defined for Euclidean coordinates only), cut at every k;
- ``path_based``: Fischer & Buhmann's effective (minimax) dissimilarities of the block, then the same
  agglomerative optimisation as on points (:func:`ordercube.tasks.algorithms.hierarchical.path_based_on`);
- ``spectral``: the symmetrised graph of each object's ``n_neighbors`` nearest objects (itself included) by
  the block (scikit-learn's ``kneighbors_graph(metric="precomputed")``), then the same embedding and
  ``cluster_qr`` (:func:`ordercube.tasks.algorithms.spectral.spectral_of_graph`).

On a block of Euclidean distances each gives what it gives on the points themselves (tested).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform

from ordercube.tasks.algorithms.hierarchical import cuts, path_based_on

LINKAGES = ("average", "complete", "single")


def own_block(half: NDArray[np.float64]) -> NDArray[np.float64]:
    """The dissimilarities among a half's own objects."""
    return half[:, : half.shape[0]]


def _condensed(half: NDArray[np.float64]) -> NDArray[np.float64]:
    return squareform(own_block(half), checks=False)


def agglomerative_many(half: NDArray[np.float64], ks: Sequence[int], rng: np.random.Generator, *,
                       linkage: str = "average") -> dict[int, NDArray[np.int64]]:
    return cuts(hierarchy.linkage(_condensed(half), method=linkage), ks)


def path_based_many(half: NDArray[np.float64], ks: Sequence[int], rng: np.random.Generator) -> dict[int, NDArray[np.int64]]:
    minimax = squareform(hierarchy.cophenet(hierarchy.linkage(_condensed(half), method="single")))
    return path_based_on(minimax, ks)


def spectral_many(half: NDArray[np.float64], ks: Sequence[int], rng: np.random.Generator, *,
                  n_neighbors: int = 10) -> dict[int, NDArray[np.int64]]:
    from sklearn.neighbors import kneighbors_graph

    from ordercube.tasks.algorithms.spectral import spectral_of_graph

    block = own_block(half)
    connectivity = kneighbors_graph(block, n_neighbors=min(n_neighbors, block.shape[0] - 1), metric="precomputed",
                                    include_self=True)
    return spectral_of_graph(connectivity, ks, rng)
