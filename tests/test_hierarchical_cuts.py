"""The cut of a linkage tree at every k (:func:`ordercube.tasks.algorithms.hierarchical.cuts`) and agglomerative
clustering from precomputed distances: the same partitions as SciPy's ``cut_tree`` and ``linkage`` of the points."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import cut_tree, linkage
from scipy.spatial.distance import pdist

from ordercube.tasks.algorithms.hierarchical import (_numbered_by_first_appearance, agglomerative_many,
                                                     agglomerative_on_distances, cuts)

LINKAGES = ("ward", "average", "complete", "single")


def _by_definition(tree: np.ndarray, k: int) -> np.ndarray:
    """The clusters left after the first n - k merges, by a union of each merge's two children, numbered by first
    appearance."""
    n = tree.shape[0] + 1
    parent = list(range(2 * n - 1))
    for i in range(n - k):
        for child in tree[i, :2].astype(int):
            parent[child] = n + i

    def root(node: int) -> int:
        while parent[node] != node:
            node = parent[node]
        return node

    return _numbered_by_first_appearance(np.array([root(i) for i in range(n)]))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 60), method=st.sampled_from(LINKAGES),
       rounded=st.booleans())
def test_cuts_are_scipys_cut_tree_at_every_k_ties_included(seed, n, method, rounded):
    """Continuous data (no tied heights: the fast cut) and data rounded to one decimal (tied heights)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    tree = linkage(np.round(X, 1) if rounded else X, method=method)
    ks = list(range(1, n))  # cut_tree mislabels n clusters (every leaf in cluster 0); no fit asks for them
    theirs = cut_tree(tree, n_clusters=ks) if ks else np.empty((n, 0), dtype=int)
    ours = cuts(tree, ks) if ks else {}
    for i, k in enumerate(ks):
        assert ours[k].dtype == np.int64
        np.testing.assert_array_equal(ours[k], _numbered_by_first_appearance(theirs[:, i]), err_msg=f"k = {k}")
        if not rounded:
            np.testing.assert_array_equal(ours[k], _by_definition(tree, k), err_msg=f"k = {k}")


def test_cuts_by_hand():
    """Points 0, 1, 10, 11, 30 on a line, single linkage: merges {0,1} at 1, {10,11} at 1 + 1e-9 (kept apart from a
    tie), then the pairs at 9, then 30 at 19."""
    X = np.array([[0.0], [1.0], [10.0], [11.0 + 1e-9], [30.0]])
    got = cuts(linkage(X, method="single"), [1, 2, 3, 4])
    assert got[1].tolist() == [0, 0, 0, 0, 0]
    assert got[2].tolist() == [0, 0, 0, 0, 1]
    assert got[3].tolist() == [0, 0, 1, 1, 2]
    assert got[4].tolist() == [0, 0, 1, 2, 3]


@pytest.mark.parametrize("method", LINKAGES)
def test_agglomerative_from_distances_is_the_same_as_from_points(method):
    rng = np.random.default_rng(7)
    X = np.concatenate([rng.normal(c, 1.0, size=(15, 40)) for c in (0.0, 3.0, 6.0)])
    ks = [2, 3, 4, 7]
    points = agglomerative_many(X, ks, rng, linkage=method)
    distances = agglomerative_on_distances(pdist(X), ks, rng, linkage=method)
    for k in ks:
        np.testing.assert_array_equal(points[k], distances[k])
