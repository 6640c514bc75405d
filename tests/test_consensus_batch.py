"""The bootstrap's batch of consensus matrices: every replicate's counts from one matrix product, the consensus
values from the counts, the partition's cut without SciPy's loop, and a whole reduction batched against the same
reduction one replicate at a time (bit for bit)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import cut_tree, linkage
from scipy.spatial.distance import squareform

from ordercube.pipeline.reduce.assignments import group_reduction
from ordercube.tasks.consensus import bootstrap_weights, consensus_matrix, consensus_values
from ordercube.tasks.consensus import matrix as matrix_module
from ordercube.tasks.consensus.matrix import (
    drawn_labels, exact_in_single, matrix_from_counts, pair_counts, values_from_counts,
)
from ordercube.tasks.consensus.partition import LINKAGES, cut_clusters
from ordercube.tasks.criteria import CRITERIA
from ordercube.tasks.criteria import consensus as criteria_module
from ordercube.tasks.criteria.base import Clusterings


def random_labels(rng: np.random.Generator, R: int, N: int, k: int, p_missing: float) -> np.ndarray:
    labels = rng.integers(0, k, size=(R, N)).astype(np.int16)
    labels[rng.random((R, N)) < p_missing] = -1
    return labels


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), R=st.integers(1, 40), N=st.integers(1, 25), k=st.integers(1, 6),
       B=st.integers(1, 5), p_missing=st.sampled_from([0.0, 0.3, 0.9]))
def test_batch_gives_each_weightings_matrix_and_values(seed, R, N, k, B, p_missing):
    """Each row of the batch: the same matrix and consensus values as consensus_matrix with that row's weights."""
    rng = np.random.default_rng(seed)
    labels = random_labels(rng, R, N, k, p_missing)
    W = rng.integers(0, 4, size=(B, R)).astype(np.float64)
    W[0] = 1.0  # one row of ones: the curve on every resample
    assert exact_in_single(W)
    top, bottom = pair_counts(labels, W), pair_counts(drawn_labels(labels), W)
    items = W @ (labels >= 0)
    for b in range(B):
        for fill in (np.nan, 0.0):
            expected = consensus_matrix(labels, weights=W[b], fill=fill)
            assert np.array_equal(matrix_from_counts(top[b], bottom[b], items[b], fill=fill), expected, equal_nan=True)
        values, counts = consensus_values(consensus_matrix(labels, weights=W[b]))
        got_values, got_counts = values_from_counts(top[b], bottom[b])
        assert np.array_equal(got_values, values) and np.array_equal(got_counts, counts)
        assert got_counts.dtype == np.int64


def test_counts_in_blocks_agree_with_one_block(monkeypatch):
    rng = np.random.default_rng(5)
    labels = random_labels(rng, 30, 40, 4, 0.2)
    W = rng.integers(0, 3, size=(3, 30)).astype(np.float64)
    whole = pair_counts(labels, W)
    monkeypatch.setattr(matrix_module, "BLOCK_BYTES", 4 * 30 * 45)  # about one row of pairs per block
    assert np.array_equal(pair_counts(labels, W), whole)
    # by hand: pair (0, 1) is column 0
    same = (labels[:, 0] == labels[:, 1]) & (labels[:, 0] >= 0)
    assert np.array_equal(whole[:, 0], W @ same)


def test_values_from_counts_with_many_fractions():
    """Large counts: the quotients are sorted directly (too many fractions to count) and still agree."""
    rng = np.random.default_rng(3)
    bottom = rng.integers(0, 5000, size=200).astype(np.float32)
    top = np.floor(bottom * rng.random(200)).astype(np.float32)
    defined = bottom > 0
    values, counts = np.unique(top[defined].astype(np.float64) / bottom[defined], return_counts=True)
    got_values, got_counts = values_from_counts(top, bottom)
    assert np.array_equal(got_values, values) and np.array_equal(got_counts, counts)


def test_exact_in_single_refuses_real_and_large_weights():
    assert exact_in_single(np.ones((2, 5)))
    assert not exact_in_single(np.full((1, 3), 0.5))
    assert not exact_in_single(np.array([[2.0**24, 1.0]]))
    assert not exact_in_single(np.array([[-1.0, 2.0]]))


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 25), levels=st.integers(2, 5),
       method=st.sampled_from(LINKAGES))
def test_cut_clusters_is_scipys_cut_tree(seed, n, levels, method):
    """The same partition as SciPy's cut_tree at every k, ties in the heights included (few distinct distances)."""
    rng = np.random.default_rng(seed)
    D = rng.integers(0, levels, size=(n, n)).astype(np.float64) / levels
    D = np.triu(D, 1)
    tree = linkage(squareform(D + D.T, checks=False), method=method)
    for k in range(1, n + 1):
        theirs, ours = cut_tree(tree, n_clusters=k).ravel(), cut_clusters(tree, k)
        pairs = set(zip(theirs.tolist(), ours.tolist()))
        assert len(pairs) == len(set(theirs.tolist())) == len(set(ours.tolist())) == k


def planted_clusterings(seed: int, references: int) -> Clusterings:
    """40 items in 3 groups, 30 resamples of 80%: the groups at k = 3, noise elsewhere; references drawn on the
    same resamples (the same items missing)."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(3), [14, 13, 13])
    R, N, ks = 30, 40, (2, 3, 4, 5)
    drawn = rng.random((R, N)) < 0.8
    data, stacks = {}, {}
    for k in ks:
        rows = np.where(rng.random((R, N)) < 0.9, truth % k, rng.integers(0, k, (R, N))) if k == 3 else \
            rng.integers(0, k, (R, N))
        data[k] = np.where(drawn, rows, -1).astype(np.int16)
        if references:
            stacks[k] = np.stack([np.where(drawn, rng.integers(0, k, (R, N)), -1) for _ in range(references)]
                                 ).astype(np.int16)
    return Clusterings(ks=ks, data=data, references=stacks, trials=np.arange(R), items=N,
                       rng=lambda key: np.random.default_rng([21, *key]))


def one_by_one(clusterings: Clusterings, criteria: dict, replicates: int) -> dict:
    """The reduction as before batches: every replicate's matrices computed alone (no batch, an empty cache)."""
    from ordercube.pipeline.reduce.assignments import BOOTSTRAP_KEY, _curves

    criteria_module._CACHE.clear()
    criteria_module._HELD[0] = 0
    weights = bootstrap_weights(clusterings.trials, clusterings.rng(BOOTSTRAP_KEY), replicates)
    point = {o: c for name, options in criteria.items() for o, c in _curves(CRITERIA[name], clusterings, options).items()}
    boot = {output: np.full((replicates, len(clusterings.ks)), np.nan) for output in point}
    for b in range(replicates):
        replicate = replace(clusterings, weights=weights[b])
        for name, options in criteria.items():
            for output, curve in _curves(CRITERIA[name], replicate, options).items():
                boot[output][b] = curve
    return {output: (point[output], boot[output]) for output in point}


@pytest.mark.parametrize("objective", ["pac", "entropy"])
def test_batched_reduction_is_the_one_by_one_reduction(monkeypatch, objective):
    """Every criterion that reads consensus summaries, with M3C's references: the curves and every replicate's
    curves bit for bit, in batches of several sizes (the last one partial)."""
    clusterings = planted_clusterings(4, references=3)
    criteria = {"consensus_area": {"method": "monti", "running_max": True}, "pac": {"window": (0.2, 0.8)},
                "cluster_consensus": {"linkage": "average"}, "clusterwise_jaccard": {"linkage": "complete"},
                "m3c": {**CRITERIA["m3c"].options, "objective": objective}}
    criteria = {name: CRITERIA[name].resolve(options) for name, options in criteria.items()}
    expected = one_by_one(clusterings, criteria, 7)
    assert np.isfinite(expected["pac"][1]).all() and np.nanstd(expected["pac"][1]) > 0  # the replicates differ
    for size in (3, 100):
        monkeypatch.setattr(criteria_module, "batch_size", lambda clusterings, rows, size=size: size)
        criteria_module._CACHE.clear()
        got = group_reduction(clusterings, criteria, 7)
        assert got.keys() == expected.keys()
        for output, (curve, replicated) in expected.items():
            assert np.array_equal(got[output][0], curve, equal_nan=True), output
            assert np.array_equal(got[output][1], replicated, equal_nan=True), output
    assert not criteria_module._BATCH and not criteria_module._BATCH_REFERENCES  # nothing left behind


def test_batch_size_keeps_batches_even(monkeypatch):
    clusterings = planted_clusterings(1, references=0)  # 40 items: 780 pairs
    monkeypatch.setattr(criteria_module, "BATCH_BYTES", 8 * 780 * 50)  # 50 weightings at most
    assert criteria_module.batch_size(clusterings, 101) == 34  # 34 + 34 + 33, not 50 + 50 + 1
    assert criteria_module.batch_size(clusterings, 50) == 50
    assert criteria_module.batch_size(clusterings, 7) == 7


def test_batch_reads_no_matrix_it_need_not(monkeypatch):
    """A bootstrap of PAC and the area computes no consensus matrix one replicate at a time."""
    clusterings = planted_clusterings(9, references=0)
    calls = []
    original = criteria_module.consensus_matrix
    monkeypatch.setattr(criteria_module, "consensus_matrix", lambda *a, **kw: calls.append(1) or original(*a, **kw))
    criteria_module._CACHE.clear()
    criteria = {name: CRITERIA[name].resolve({}) for name in ("consensus_area", "pac")}
    got = group_reduction(clusterings, criteria, 20)
    assert calls == [] and np.isfinite(got["pac"][1]).all()
