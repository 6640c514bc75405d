"""The consensus kernels that work from the pairs' counts (a bootstrap's per-replicate partition, the batched pair
counts) against the implementations they replace, on random inputs: the same bits."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.cluster.hierarchy import cut_tree, linkage

from ordercube.tasks.consensus import consensus_matrix, consensus_partition, consensus_tree
from ordercube.tasks.consensus.matrix import (
    drawn_labels, matrix_from_counts, matrix_from_quotients, pair_counts, pair_quotients,
)
from ordercube.tasks.consensus.partition import cut_clusters, partition_from_pairs, tree_of_distances


def _labels(rng: np.random.Generator, resamples: int, items: int, k: int, missing: float) -> np.ndarray:
    labels = rng.integers(0, k, size=(resamples, items)).astype(np.int16)
    labels[rng.random(labels.shape) < missing] = -1
    return labels


def _pair_counts_by_rows(labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The counts as the first implementation made them: one row of pairs (i, i + 1..N) at a time."""
    n_items = labels.shape[1]
    coded = np.where(labels >= 0, labels.astype(np.int32), -1 - np.arange(n_items, dtype=np.int32))
    w = np.atleast_2d(np.asarray(weights, dtype=np.float32))
    rows = [np.equal(coded[:, i:i + 1], coded[:, i + 1:]).astype(np.float32) for i in range(n_items - 1)]
    return w @ np.concatenate(rows, axis=1) if rows else np.zeros((w.shape[0], 0), dtype=np.float32)


def _cut_by_breadth_first(tree: np.ndarray, k: int) -> np.ndarray:
    """``cut_clusters`` as first written: the kept merges always found through the breadth-first order."""
    n = tree.shape[0] + 1
    merges = n - k
    if merges <= 0:
        return np.arange(n, dtype=np.int64)
    children = tree[:, :2].astype(np.int64)
    visited = np.empty(n - 1, dtype=np.int64)
    queue, position = [2 * n - 2], 0
    while position < len(queue):
        node = queue[position]
        visited[node - n] = position
        position += 1
        for child in (children[node - n, 1], children[node - n, 0]):
            if child >= n:
                queue.append(int(child))
    kept = np.lexsort((-visited, tree[:, 2]))[:merges]
    parent = np.arange(2 * n - 1, dtype=np.int64)
    parent[children[kept, 0]] = kept + n
    parent[children[kept, 1]] = kept + n
    while True:
        above = parent[parent]
        if np.array_equal(above, parent):
            return parent[:n]
        parent = above


@pytest.mark.parametrize("seed", range(6))
def test_pair_counts_equal_the_row_by_row_counts(seed):
    rng = np.random.default_rng(seed)
    labels = _labels(rng, int(rng.integers(1, 60)), int(rng.integers(2, 40)), int(rng.integers(1, 6)), 0.3)
    weights = rng.poisson(1.0, size=(int(rng.integers(1, 8)), labels.shape[0])).astype(np.float64)
    for given in (labels, drawn_labels(labels)):
        np.testing.assert_array_equal(pair_counts(given, weights), _pair_counts_by_rows(given, weights))


@pytest.mark.parametrize("items", [128, 129, 150])
def test_pair_counts_either_side_of_the_gathering_limit_equal_the_row_by_row_counts(items):
    rng = np.random.default_rng(items)
    labels = _labels(rng, 12, items, 4, 0.3)
    weights = rng.poisson(1.0, size=(3, 12)).astype(np.float64)
    np.testing.assert_array_equal(pair_counts(labels, weights), _pair_counts_by_rows(labels, weights))


def test_pair_counts_in_several_blocks_equal_one_block(monkeypatch):
    from ordercube.tasks.consensus import matrix

    rng = np.random.default_rng(7)
    labels = _labels(rng, 30, 25, 3, 0.2)
    weights = rng.poisson(1.0, size=(3, 30)).astype(np.float64)
    whole = pair_counts(labels, weights)
    monkeypatch.setattr(matrix, "BLOCK_BYTES", 5 * 30 * 7)  # 7 pairs a block: 300 pairs in 43 blocks
    np.testing.assert_array_equal(pair_counts(labels, weights), whole)


@pytest.mark.parametrize("seed", range(8))
def test_the_matrix_from_quotients_is_the_matrix_from_counts_and_the_consensus_matrix(seed):
    rng = np.random.default_rng(seed)
    labels = _labels(rng, int(rng.integers(2, 30)), int(rng.integers(2, 30)), 3, 0.6)
    weights = rng.poisson(1.0, size=labels.shape[0]).astype(np.float64)
    top, bottom = pair_counts(labels, weights)[0], pair_counts(drawn_labels(labels), weights)[0]
    items = weights @ (labels >= 0)
    M = matrix_from_quotients(pair_quotients(top, bottom), items)
    np.testing.assert_array_equal(M, matrix_from_counts(top, bottom, items))
    np.testing.assert_array_equal(M, consensus_matrix(labels, weights=weights))


@pytest.mark.parametrize("linkage_method", ["average", "complete", "single", "weighted"])
def test_the_tree_of_distances_is_scipys_linkage(linkage_method):
    rng = np.random.default_rng(11)
    for n in (2, 3, 17, 60):
        distance = rng.integers(0, 5, size=n * (n - 1) // 2) / 4.0  # many ties
        np.testing.assert_array_equal(tree_of_distances(distance, linkage_method),
                                      linkage(distance, method=linkage_method))


def _weighted_case(rng, max_items, missing):
    """Random clusterings of 2..max_items - 1 items (a share ``missing`` of the choices: items not drawn), Poisson
    weights per row, and what both sides read: the pair counts, each item's weight, the matrix, the drawn items."""
    n_items = int(rng.integers(2, max_items))
    labels = _labels(rng, int(rng.integers(1, 40)), n_items, int(rng.integers(1, 5)), float(rng.choice(missing)))
    weights = rng.poisson(1.0, size=labels.shape[0]).astype(np.float64)
    top, bottom = pair_counts(labels, weights)[0], pair_counts(drawn_labels(labels), weights)[0]
    items = weights @ (labels >= 0)
    M = consensus_matrix(labels, weights=weights)
    return top, bottom, items, M, int(np.count_nonzero(items > 0))


@pytest.mark.parametrize("seed", range(40))
def test_the_partition_from_pairs_is_the_consensus_partition_of_the_matrix(seed):
    rng = np.random.default_rng(seed)
    top, bottom, items, M, drawn = _weighted_case(rng, 40, [0.0, 0.3, 0.8])
    linkage_method = str(rng.choice(["average", "complete", "single", "weighted"]))
    for k in range(1, drawn + 1):
        np.testing.assert_array_equal(partition_from_pairs(pair_quotients(top, bottom), items, k, linkage_method),
                                      consensus_partition(M, k, linkage_method))


@pytest.mark.parametrize("seed", range(30))
def test_the_cut_is_the_breadth_first_cut_and_cut_trees_partition_with_or_without_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 50))
    coarse = bool(seed % 2)  # odd seeds: distances on a coarse grid, so ties straddle most cuts
    distance = rng.integers(0, 4, size=n * (n - 1) // 2) / 3.0 if coarse else rng.random(n * (n - 1) // 2)
    tree = linkage(distance, method="average")
    for k in range(1, n + 1):
        cut = cut_clusters(tree, k)
        np.testing.assert_array_equal(cut, _cut_by_breadth_first(tree, k))
        reference = cut_tree(tree, n_clusters=k).ravel()  # the same partition: the same pairs together
        np.testing.assert_array_equal(cut[:, None] == cut[None, :], reference[:, None] == reference[None, :])


def test_the_consensus_tree_of_a_matrix_is_the_tree_of_its_pairs():
    rng = np.random.default_rng(3)
    labels = _labels(rng, 25, 20, 3, 0.2)
    M = consensus_matrix(labels)
    items, tree = consensus_tree(M)
    upper = np.triu_indices(M.shape[0], 1)
    np.testing.assert_array_equal(tree, tree_of_distances(1.0 - np.nan_to_num(M[upper], nan=0.0)))
    assert items.tolist() == list(range(20))


@pytest.mark.parametrize("seed", range(30))
def test_the_cluster_consensus_from_pairs_is_that_of_the_matrix(seed):
    from ordercube.tasks.consensus import cluster_consensus
    from ordercube.tasks.consensus.partition import cluster_consensus_from_pairs

    rng = np.random.default_rng(seed)
    top, bottom, items, M, drawn = _weighted_case(rng, 60, [0.0, 0.2, 0.7])
    quotients = pair_quotients(top, bottom)
    for k in range(1, min(drawn, 8) + 1):
        partition = consensus_partition(M, k)
        expected = cluster_consensus(M, partition, k)
        got = cluster_consensus_from_pairs(quotients, items, partition, k)
        assert got.tobytes() == expected.tobytes(), (k, got, expected)
