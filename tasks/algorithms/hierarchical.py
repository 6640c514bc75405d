"""Hierarchical clusterings, every k from one tree: agglomerative linkages and path-based clustering.

Path-based clustering (Fischer, Zöllner & Buhmann 2001; Lange et al. 2002, Sec. 4, use it for the 3 rings):
objects are compared by their *effective* (minimax) dissimilarity, the smallest possible largest step
on a path between them, D_ij = min over paths p from i to j of max over edges (u, v) of p of d_uv.
On Euclidean data it is the largest edge on the path between i and j in a minimum spanning tree, i.e.
the cophenetic distance of single linkage. The pairwise-clustering cost on these dissimilarities,

    H(c) = sum over clusters v of (1 / n_v) * sum over i, j in v of D_ij,

is optimised by the agglomerative heuristic of Lange et al. (2002): from singletons, repeatedly merge the two
clusters whose merge raises H least. Both the tree and the cost are shared by every k.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from scipy.cluster import hierarchy
from scipy.spatial.distance import squareform


def _numbered_by_first_appearance(labels: NDArray[np.int64]) -> NDArray[np.int64]:
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    return np.argsort(np.argsort(first))[inverse].astype(np.int64)


def cuts(tree: NDArray[np.float64], ks: Sequence[int]) -> dict[int, NDArray[np.int64]]:
    """The partitions of a scipy linkage matrix ``tree`` (n - 1 merges of n objects) into k clusters for every k of
    ``ks`` (each at most n - 1): the clusters left after its first n - k merges, numbered by first appearance.

    These are scipy's ``cut_tree`` partitions, which take it 2 ms for 49 objects and 45 ms for 640 (a Python loop
    over every merge). Here each object's cluster after the first n - max(ks) merges is found by pointer jumping
    over the tree's parent links, and the smaller k follow by doing the remaining merges on those few clusters
    (0.1-0.2 ms). ``cut_tree`` takes the merges in the order of their heights, equal heights in an order of its
    own: a tree with equal (or decreasing) heights is cut at each k by
    :func:`ordercube.tasks.consensus.partition.cut_clusters`, which keeps that order.
    """
    n = tree.shape[0] + 1
    if not np.all(np.diff(tree[:, 2]) > 0):
        from ordercube.tasks.consensus.partition import cut_clusters

        return {k: _numbered_by_first_appearance(cut_clusters(tree, k)) for k in ks}
    wanted = set(ks)
    largest = max(wanted)
    done = n - largest  # merges 0 .. done - 1 made the clusters at the largest k
    merges = tree[:, :2].astype(np.int64)
    up = np.arange(2 * n - 1)
    up[merges[:done].ravel()] = np.repeat(np.arange(n, n + done), 2)
    while True:  # each node's furthest ancestor among the done merges: log2(depth) rounds
        further = up[up]
        if np.array_equal(further, up):
            break
        up = further
    nodes, first, inverse = np.unique(up[:n], return_index=True, return_inverse=True)
    group = np.arange(nodes.size)  # each cluster at the largest k -> the cluster it is in now
    current = {int(node): i for i, node in enumerate(nodes)}
    labels: dict[int, NDArray[np.int64]] = {}
    for k in range(largest, min(wanted) - 1, -1):
        if k in wanted:
            starts = np.full(nodes.size, n)
            np.minimum.at(starts, group, first)  # each cluster's first object, at its representative
            rank = np.empty(nodes.size, dtype=np.int64)
            present = np.flatnonzero(starts < n)
            rank[present[np.argsort(starts[present])]] = np.arange(present.size)
            labels[k] = rank[group][inverse.ravel()]
        if k > 1:  # merge n - k makes node 2n - k of two clusters of this level
            a, b = (current.pop(int(child)) for child in merges[n - k])
            group[group == b] = a
            current[2 * n - k] = a
    return {k: labels[k] for k in ks}


def agglomerative_many(
    X: NDArray[np.float64], ks: Sequence[int], rng: np.random.Generator, *, linkage: str = "ward",
) -> dict[int, NDArray[np.int64]]:
    """Agglomerative clustering of ``X`` cut at every k in ``ks``: one scipy tree, no randomness.

    ``linkage`` is one of ``LINKAGES`` (Ward's minimum variance on Euclidean distances, or the average,
    complete or single linkage of Euclidean distances).
    """
    return cuts(hierarchy.linkage(X, method=linkage), ks)


def agglomerative_on_distances(
    distances: NDArray[np.float64], ks: Sequence[int], rng: np.random.Generator, *, linkage: str = "ward",
) -> dict[int, NDArray[np.int64]]:
    """:func:`agglomerative_many` of the points whose Euclidean distances are ``distances`` (condensed, in
    ``scipy.spatial.distance.pdist``'s order): the same tree, since scipy's ``linkage`` of points first computes
    exactly these distances (Ward's criterion included, which it evaluates from Euclidean distances)."""
    return cuts(hierarchy.linkage(distances, method=linkage), ks)


def agglomerative(X: NDArray[np.float64], k: int, rng: np.random.Generator, *, linkage: str = "ward") -> NDArray[np.int64]:
    return agglomerative_many(X, [k], rng, linkage=linkage)[k]


def minimax_distances(X: NDArray[np.float64]) -> NDArray[np.float64]:
    """Effective dissimilarities D_ij (module docstring) as a square matrix."""
    return squareform(hierarchy.cophenet(hierarchy.linkage(X, method="single")))


def path_based_many(X: NDArray[np.float64], ks: Sequence[int], rng: np.random.Generator) -> dict[int, NDArray[np.int64]]:
    """Path-based clustering of ``X`` for every k in ``ks`` by agglomerative optimisation (no randomness).

    With S(a) the sum of D over ordered pairs within cluster a and C(a, b) the sum across a and b,
    merging a and b changes H by (S(a) + S(b) + 2 C(a, b)) / (n_a + n_b) - S(a) / n_a - S(b) / n_b.
    The cheapest merge is taken (ties: the first pair in row-major order) and the partition is
    recorded whenever k of ``ks`` clusters remain. O(n^3) time, O(n^2) memory: meant for halves of a
    few thousand points at most.
    """
    return path_based_on(minimax_distances(X), ks)


def path_based_on(D: NDArray[np.float64], ks: Sequence[int]) -> dict[int, NDArray[np.int64]]:
    """:func:`path_based_many` on the effective dissimilarities ``D`` (square) already computed."""
    n = D.shape[0]
    cross = D.copy()  # cross[a, b]: sum of D between clusters a and b (a != b); within sums on the diagonal
    np.fill_diagonal(cross, 0.0)
    within = np.zeros(n)
    size = np.ones(n)
    alive = np.ones(n, dtype=bool)
    members = np.arange(n)  # the cluster (a row index) each object belongs to
    wanted = set(ks)
    labels = {}
    if n in wanted:
        labels[n] = np.arange(n, dtype=np.int64)
    for remaining in range(n - 1, min(ks) - 1, -1):
        rows = np.flatnonzero(alive)
        s, w = size[rows], within[rows]
        merged_size = s[:, None] + s[None, :]
        increase = (w[:, None] + w[None, :] + 2.0 * cross[np.ix_(rows, rows)]) / merged_size - w[:, None] / s[:, None] \
            - w[None, :] / s[None, :]
        np.fill_diagonal(increase, np.inf)
        flat = int(np.argmin(increase))
        a, b = rows[flat // rows.size], rows[flat % rows.size]
        within[a] += within[b] + 2.0 * cross[a, b]
        size[a] += size[b]
        cross[a, :] += cross[b, :]
        cross[:, a] += cross[:, b]
        cross[a, a] = 0.0
        alive[b] = False
        members[members == b] = a
        if remaining in wanted:
            labels[remaining] = _numbered_by_first_appearance(members)
    return {k: labels[k] for k in ks}


def path_based(X: NDArray[np.float64], k: int, rng: np.random.Generator) -> NDArray[np.int64]:
    return path_based_many(X, [k], rng)[k]
