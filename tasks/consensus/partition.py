"""The consensus partition and how firmly its clusters and items hold together (Monti, Tamayo, Mesirov & Golub
2003; Wilkerson & Hayes 2010; Hennig 2007).

The consensus partition at k is the hierarchical clustering of the items on the distance 1 - M cut into k
clusters (Monti et al.: "M is used as the similarity for agglomerative hierarchical clustering";
ConsensusClusterPlus's ``finalLinkage``, "average" by default). Its clusters are then scored on M itself
(cluster and item consensus) and on the resamples (Hennig's clusterwise Jaccard).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

Linkage = Literal["average", "complete", "single", "weighted"]
LINKAGES: tuple[str, ...] = ("average", "complete", "single", "weighted")


#: A cluster is small when it holds at most this many items, or this share of them, whichever is larger: an outlier
#: split (one or two items against the rest) can be found again in every resample, and is then perfectly stable
#: while it says nothing about groups of items.
SMALL_ITEMS, SMALL_SHARE = 2, 0.02


def small_cluster_limit(items: int) -> float:
    """The largest size of a small cluster among ``items`` items: max(2, 2% of them)."""
    return max(float(SMALL_ITEMS), SMALL_SHARE * items)


def small_clusters(partition: ArrayLike, k: int | None = None) -> NDArray[np.bool_]:
    """Which clusters of ``partition`` (codes 0..k-1; -1: an item not drawn, left out) are small
    (:func:`small_cluster_limit` of the items clustered); an empty cluster is not."""
    labels = np.asarray(partition, dtype=np.int64)
    labels = labels[labels >= 0]
    sizes = np.bincount(labels, minlength=k or (int(labels.max()) + 1 if labels.size else 0))
    return (sizes > 0) & (sizes <= small_cluster_limit(labels.size))


def consensus_tree(M: ArrayLike, linkage: Linkage = "average") -> tuple[NDArray[np.int64], NDArray[np.float64] | None]:
    """The hierarchical clustering of the drawn items on 1 - M, which :func:`consensus_partition` cuts.

    Parameters
    ----------
    M : ndarray of shape (N, N)
        A consensus matrix.
    linkage : {"average", "complete", "single", "weighted"}

    Returns
    -------
    items : int ndarray of shape (n,)
        The items drawn at least once (M(i, i) defined), ascending.
    tree : ndarray of shape (n - 1, 4) or None
        SciPy's linkage matrix over ``items`` (None for fewer than two): a pair never drawn together is at
        distance 1.
    """
    from scipy.cluster.hierarchy import linkage as hierarchical  # here: importing the kernels loads no SciPy
    from scipy.spatial.distance import squareform

    M = np.asarray(M, dtype=np.float64)
    items = np.flatnonzero(~np.isnan(np.diagonal(M)))
    if items.size < 2:
        return items, None
    distance = 1.0 - np.nan_to_num(M[np.ix_(items, items)], nan=0.0)
    np.fill_diagonal(distance, 0.0)
    return items, hierarchical(squareform(distance, checks=False), method=linkage)


def consensus_order(M: ArrayLike, linkage: Linkage = "average") -> NDArray[np.int64]:
    """The drawn items in the leaf order of :func:`consensus_tree`: a heat map of M in this order shows the
    consensus partition's clusters as blocks on the diagonal (ConsensusClusterPlus orders its heat maps by
    ``hc$order``)."""
    from scipy.cluster.hierarchy import leaves_list

    items, tree = consensus_tree(M, linkage)
    return items if tree is None else items[leaves_list(tree)]


def consensus_partition(M: ArrayLike, k: int, linkage: Linkage = "average") -> NDArray[np.int64]:
    """The consensus partition: hierarchical clustering on 1 - M cut into k clusters (Monti et al. 2003).

    Parameters
    ----------
    M : ndarray of shape (N, N)
        A consensus matrix (:func:`~ordercube.tasks.consensus.consensus_matrix`).
    k : int
        The number of clusters, 1 <= k <= the number of items drawn.
    linkage : {"average", "complete", "single", "weighted"}
        The agglomeration (R's ``hclust`` methods of the same names; ConsensusClusterPlus's ``finalLinkage``,
        default "average"). Ward and centroid linkages assume Euclidean distances, which 1 - M is not.

    Returns
    -------
    partition : int ndarray of shape (N,)
        Each item's cluster 0..k-1, numbered by first appearance (as R's ``cutree``); -1 for an item never drawn
        (M(i, i) NaN).

    Notes
    -----
    A pair never drawn together (M NaN) is at distance 1, as ConsensusClusterPlus's 0 consensus puts it. Merges at
    tied heights may be ordered differently by SciPy and R's ``hclust``, which can change the cut when ties
    straddle it.
    """
    M = np.asarray(M, dtype=np.float64)
    items, tree = consensus_tree(M, linkage)
    return _cut_partition(M.shape[0], items, tree, k)


def partition_from_pairs(quotients: ArrayLike, drawn_items: ArrayLike, k: int,
                         linkage: Linkage = "average") -> NDArray[np.int64]:
    """:func:`consensus_partition` of the consensus matrix whose pairs i < j hold ``quotients`` (NaN: never drawn
    together), without the (N, N) matrix: the same partition (the tree is built from the same distances).

    Parameters
    ----------
    quotients : ndarray of shape (N (N - 1) / 2,)
        M(i, j) of the pairs in ``numpy.triu_indices(N, 1)`` order (the quotients of
        :func:`ordercube.tasks.consensus.matrix.pair_counts`).
    drawn_items : ndarray of shape (N,)
        Each item's weighted count of draws: the items drawn (count > 0) are those with M(i, i) defined.
    k : int
    linkage : {"average", "complete", "single", "weighted"}
    """
    drawn_items = np.asarray(drawn_items)
    n_items = drawn_items.shape[0]
    drawn = drawn_items > 0
    items = np.flatnonzero(drawn)
    distance = 1.0 - np.nan_to_num(np.asarray(quotients, dtype=np.float64), nan=0.0)
    if items.size < n_items:  # the pairs of the drawn items, in the same row-major order
        upper = np.triu_indices(n_items, 1)
        distance = distance[drawn[upper[0]] & drawn[upper[1]]]
    tree = tree_of_distances(distance, linkage) if items.size >= 2 else None
    return _cut_partition(n_items, items, tree, k)


def tree_of_distances(distance: NDArray[np.float64], linkage: Linkage = "average") -> NDArray[np.float64]:
    """SciPy's ``linkage(distance, method=linkage)`` of finite condensed distances (float64, C-ordered), by the
    compiled routine it calls (the same tree), without its per-call checks and array-API dispatch, which cost more
    than the tree itself at a few dozen items (a bootstrap builds one tree per replicate and k); through
    ``linkage`` itself where that routine is not found."""
    try:
        from scipy.cluster import _hierarchy
        from scipy.cluster.hierarchy import _LINKAGE_METHODS
    except ImportError:  # pragma: no cover - another SciPy layout
        _hierarchy = None
    n = int(round((1 + math.sqrt(1 + 8 * distance.size)) / 2))
    if _hierarchy is None or n * (n - 1) // 2 != distance.size:
        from scipy.cluster.hierarchy import linkage as hierarchical

        return hierarchical(distance, method=linkage)
    distance = np.ascontiguousarray(distance, dtype=np.float64)
    if linkage == "single":
        return _hierarchy.mst_single_linkage(distance, n)
    return _hierarchy.nn_chain(distance, n, _LINKAGE_METHODS[linkage])


def _cut_partition(n_items: int, items: NDArray[np.int64], tree: NDArray[np.float64] | None,
                   k: int) -> NDArray[np.int64]:
    """The partition of ``n_items`` items whose drawn ``items`` have the consensus ``tree``, cut at ``k``."""
    partition = np.full(n_items, -1, dtype=np.int64)
    if items.size < k or k < 1:
        raise ValueError(f"k: expected 1 <= k <= {items.size} (the items drawn), got {k}")
    if k == 1 or tree is None:
        partition[items] = 0
        return partition
    cut = cut_clusters(tree, k)
    _, first, inverse = np.unique(cut, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # cluster numbers by the first item in each
    partition[items] = order[inverse]
    return partition


def cut_clusters(tree: ArrayLike, k: int) -> NDArray[np.int64]:
    """The clusters of SciPy's ``cut_tree(tree, n_clusters=k)``, each leaf labelled by the largest node above it
    that the cut keeps merged (the same partition; its cluster numbers differ).

    Parameters
    ----------
    tree : ndarray of shape (n - 1, 4)
        A monotone linkage matrix (average, complete, single or weighted linkage).
    k : int
        1 <= k <= n.

    Returns
    -------
    int ndarray of shape (n,)

    Notes
    -----
    ``cut_tree`` merges the tree's nodes in the order of their heights, equal heights in the reverse of the
    breadth-first order from the root (right child first) in which it inserts them, and keeps the first n - k
    merges; this does the same with one sort and a union of the kept nodes' children, in O(n log n) instead of
    its O(n^2) Python loop.
    """
    tree = np.asarray(tree, dtype=np.float64)
    n = tree.shape[0] + 1
    merges = n - int(k)
    if merges <= 0:
        return np.arange(n, dtype=np.int64)
    children = tree[:, :2].astype(np.int64)
    heights = tree[:, 2]
    if merges == n - 1 or (heights[merges - 1] < heights[merges] and bool(np.all(heights[1:] >= heights[:-1]))):
        kept = np.arange(merges)  # no tie straddles the cut: the kept merges are the lowest, whatever the ties' order
    else:
        visited = np.empty(n - 1, dtype=np.int64)  # breadth-first position of each internal node
        pairs = children.tolist()
        queue, position = [2 * n - 2], 0
        while position < len(queue):
            node = queue[position]
            visited[node - n] = position
            position += 1
            for child in (pairs[node - n][1], pairs[node - n][0]):
                if child >= n:
                    queue.append(child)
        kept = np.lexsort((-visited, heights))[:merges]
    parent = np.arange(2 * n - 1, dtype=np.int64)
    parent[children[kept, 0]] = kept + n
    parent[children[kept, 1]] = kept + n
    while True:  # every leaf up to the last kept node above it
        above = parent[parent]
        if np.array_equal(above, parent):
            return parent[:n]
        parent = above


def _member_sums(M: NDArray[np.float64], partition: NDArray[np.int64],
                 k: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """For each item i and cluster c: the sum of M(i, j) over the members j != i of c with M(i, j) defined, and
    their number."""
    defined = ~np.isnan(M)
    values = np.where(defined, M, 0.0)
    np.fill_diagonal(values, 0.0)
    np.fill_diagonal(defined, False)
    members = np.zeros((M.shape[0], k))
    inside = partition >= 0
    members[np.flatnonzero(inside), partition[inside]] = 1.0
    return values @ members, defined.astype(np.float64) @ members


def item_consensus(M: ArrayLike, partition: ArrayLike, k: int) -> NDArray[np.float64]:
    """Item consensus m_i(c) of every item to every cluster (Monti et al. 2003; Wilkerson & Hayes 2010, ``calcICL``).

    Parameters
    ----------
    M : ndarray of shape (N, N)
    partition : int ndarray of shape (N,)
        Clusters 0..k-1, -1 for an item outside every cluster.
    k : int

    Returns
    -------
    ndarray of shape (N, k)
        m_i(c) = sum_{j in c, j != i} M(i, j) / (N_c - [i in c]): the mean consensus of item i with the members
        of c (pairs never drawn together left out of both sums); NaN for a cluster with no other member.
    """
    M = np.asarray(M, dtype=np.float64)
    total, count = _member_sums(M, np.asarray(partition), k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / count, np.nan)


def cluster_consensus(M: ArrayLike, partition: ArrayLike, k: int) -> NDArray[np.float64]:
    """Cluster consensus m(c) of each cluster (Monti et al. 2003; Wilkerson & Hayes 2010, ``calcICL``).

    Parameters
    ----------
    M : ndarray of shape (N, N)
    partition : int ndarray of shape (N,)
        Clusters 0..k-1, -1 for an item outside every cluster.
    k : int

    Returns
    -------
    ndarray of shape (k,)
        m(c) = sum_{i < j in c} M(i, j) / (N_c (N_c - 1) / 2): the mean consensus of the pairs within c (pairs
        never drawn together left out); NaN for a cluster of fewer than two items (as ``calcICL``'s 0 / 0).
    """
    M = np.asarray(M, dtype=np.float64)
    partition = np.asarray(partition)
    total, count = _member_sums(M, partition, k)
    return _cluster_means(total, count, partition, k)


def cluster_consensus_from_pairs(quotients: ArrayLike, drawn_items: ArrayLike, partition: ArrayLike,
                                 k: int) -> NDArray[np.float64]:
    """:func:`cluster_consensus` of the consensus matrix whose pairs i < j hold ``quotients`` (NaN: never drawn
    together; ``drawn_items``: each item's weighted draws), without the matrix: the same values, bit for bit (the
    same product of the same (N, N) values with the members; the pairs counted exactly, from the clusters' sizes
    when every pair is defined)."""
    from ordercube.tasks.consensus.matrix import matrix_from_quotients

    quotients = np.asarray(quotients, dtype=np.float64)
    partition = np.asarray(partition)
    drawn_items = np.asarray(drawn_items)
    undefined = np.isnan(quotients)
    values = matrix_from_quotients(np.where(undefined, 0.0, quotients), drawn_items, fill=0.0)
    np.fill_diagonal(values, 0.0)
    inside = partition >= 0
    members = np.zeros((partition.shape[0], k))
    members[np.flatnonzero(inside), partition[inside]] = 1.0
    total = values @ members
    if undefined.any():
        defined = matrix_from_quotients((~undefined).astype(np.float64), drawn_items, fill=0.0)
        np.fill_diagonal(defined, 0.0)
        count = defined @ members
    else:  # every other member of each cluster
        count = members.sum(axis=0)[None, :] - members
    return _cluster_means(total, count, partition, k)


def _cluster_means(total: NDArray[np.float64], count: NDArray[np.float64], partition: NDArray[np.integer],
                   k: int) -> NDArray[np.float64]:
    """Each cluster's sum of its members' consensus with it over its number of defined pairs (NaN: none)."""
    inside = partition >= 0
    within = np.zeros(k)
    pairs = np.zeros(k)
    np.add.at(within, partition[inside], total[inside, partition[inside]])
    np.add.at(pairs, partition[inside], count[inside, partition[inside]])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(pairs > 0, within / pairs, np.nan)


def clusterwise_jaccard(labels: ArrayLike, partition: ArrayLike, k: int, *,
                        weights: ArrayLike | None = None) -> NDArray[np.float64]:
    """Hennig's (2007) clusterwise Jaccard stability of the consensus partition's clusters.

    Parameters
    ----------
    labels : int array of shape (R, N)
        The resamples' clusterings, -1 where an item was not drawn.
    partition : int ndarray of shape (N,)
        The reference clustering (the consensus partition), clusters 0..k-1, -1 outside every cluster.
    k : int
        Its number of clusters.
    weights : array of shape (R,) or None
        Each resample's weight in the mean (None: 1 each).

    Returns
    -------
    ndarray of shape (k,)
        gamma_c = the weighted mean over resamples h of max_{C'} J(C ∩ D_h, C'), with D_h the items drawn in h,
        C' the clusters of resample h and J(A, B) = |A ∩ B| / |A ∪ B|; resamples in which C ∩ D_h is empty are
        left out (the Jaccard of an empty set is undefined), NaN when every one is.

    Notes
    -----
    Hennig compares each resample with the clustering of the whole data set; here the consensus partition
    stands in for it, so that the score needs no fit beyond the stored resamples.
    """
    labels = np.asarray(labels)
    partition = np.asarray(partition)
    n_resamples = labels.shape[0]
    w = np.ones(n_resamples) if weights is None else np.asarray(weights, dtype=np.float64)
    clusters = max(int(labels.max()) + 1, 1)
    h, i = np.nonzero(labels >= 0)
    # |C'| for every cluster C' of every resample, and |C ∩ D_h ∩ C'|
    sizes = np.bincount(h * clusters + labels[h, i], minlength=n_resamples * clusters).reshape(n_resamples, clusters)
    inside = partition[i] >= 0
    h, i = h[inside], i[inside]
    table = np.bincount((h * k + partition[i]) * clusters + labels[h, i],
                        minlength=n_resamples * k * clusters).reshape(n_resamples, k, clusters).astype(np.float64)
    restricted = table.sum(axis=2)  # |C ∩ D_h|
    with np.errstate(invalid="ignore", divide="ignore"):
        jaccard = table / (restricted[:, :, None] + sizes[:, None, :] - table)
    best = np.where(restricted > 0, np.nanmax(np.where(table > 0, jaccard, 0.0), axis=2), np.nan)
    used = (restricted > 0) & (w[:, None] > 0)
    weight = np.where(used, w[:, None], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(weight.sum(axis=0) > 0, np.nansum(weight * np.nan_to_num(best), axis=0) / weight.sum(axis=0),
                        np.nan)
