"""Correlation-clustering kernels (experiment 004-e): cost, transfer and generator by hand, the compiled Gibbs
sampler against its plain reference, and recovery of a planted partition."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ordercube.tasks.algorithms.correlation import (
    correlation_cost,
    correlation_gibbs,
    correlation_gibbs_restarts,
    gibbs_reference,
    k_effective,
    temperature_schedule,
    transfer_labels,
)
from ordercube.tasks.datasets.graphs import signed_graph


def symmetric(upper: dict[tuple[int, int], float], n: int) -> np.ndarray:
    W = np.zeros((n, n))
    for (i, j), weight in upper.items():
        W[i, j] = W[j, i] = weight
    return W


# Five nodes, labels [0, 0, 1, 1, 1]; per edge (i, j): weight, intra/inter, its cost term.
#   (0,1) +1   intra (1-1)/2   = 0        (1,3) -1   inter (1-1)/2   = 0
#   (0,2) -1   inter (1-1)/2   = 0        (1,4) +0.5 inter (1+.5)/2  = 0.75
#   (0,3) +1   inter (1+1)/2   = 1        (2,3) -1   intra (1+1)/2   = 1
#   (0,4)  0   no edge         -          (2,4) +1   intra (1-1)/2   = 0
#   (1,2) -1   inter (1-1)/2   = 0        (3,4) -0.5 intra (1+.5)/2  = 0.75
# Total 3.5. All in one cluster every edge is intra: 0 + 1 + 0 + 1 + 1 + 0.25 + 1 + 0 + 0.75 = 5.
HAND = symmetric({(0, 1): 1, (0, 2): -1, (0, 3): 1, (1, 2): -1, (1, 3): -1, (1, 4): 0.5, (2, 3): -1, (2, 4): 1,
                  (3, 4): -0.5}, 5)


def test_cost_by_hand():
    assert correlation_cost(HAND, np.array([0, 0, 1, 1, 1])) == 3.5
    assert correlation_cost(HAND, np.array([7, 7, 2, 2, 2])) == 3.5  # any label values, any permutation
    assert correlation_cost(HAND, np.zeros(5, dtype=int)) == 5.0
    # Every node alone: every edge is inter, sum of (1 + W)/2 = (9 - 1)/2 over the 9 edges (weights sum to -1).
    assert correlation_cost(HAND, np.arange(5)) == 4.0


def test_cost_of_signs_counts_disagreements_and_matches_the_matrix_formula():
    W, _ = signed_graph([7, 5, 9], 0.4, 0.5, np.random.default_rng(3))
    labels = np.random.default_rng(4).integers(3, size=21)
    same = labels[:, None] == labels[None, :]
    upper = np.triu(np.ones_like(W, dtype=bool), 1)
    disagreements = np.sum(upper & same & (W < 0)) + np.sum(upper & ~same & (W > 0))
    assert correlation_cost(W, labels) == disagreements
    # Real weights with missing edges: eq. (8) as matrices, every pair counted twice.
    real = np.random.default_rng(5).uniform(-1, 1, size=(21, 21)) * (np.random.default_rng(6).random((21, 21)) < 0.7)
    real = np.triu(real, 1) + np.triu(real, 1).T
    terms = np.where(same, (1 - real) / 2, (1 + real) / 2) * (real != 0)
    assert correlation_cost(real, labels) == pytest.approx(terms.sum() / 2, rel=1e-12)


def eq10(row: np.ndarray, labels: np.ndarray, v: int, k: int) -> float:
    """H(i', s_v) of eq. (10) term by term, over edges (W != 0) only."""
    inside = sum(-(w - 1) / 2 for w, label in zip(row, labels) if w != 0 and label == v)
    outside = sum((w + 1) / 2 for w, label in zip(row, labels) if w != 0 and label != v and label < k)
    return inside + outside


def test_transfer_by_hand_and_by_eq10():
    labels_train = np.array([0, 0, 1, 1, 2])  # k = 4: cluster 3 is empty, its sum is 0
    W_cross = np.array([
        [1, 1, -1, -1, 0],            # sums (2, -2, 0, 0): 0
        [-1, -1, -1, 1, -1],          # (-2, 0, -1, 0): 1 and the empty 3 tie at 0: the smaller, 1
        [-1, -1, -1, -1, -1],         # (-2, -2, -1, 0): the empty cluster 3
        [0.5, -1, 1, -0.5, 0.25],     # (-0.5, 0.5, 0.25, 0): 1
        [0, 0, 0, 0, 0],              # no edges: all tie at 0: 0
    ], dtype=float)
    labels = transfer_labels(W_cross, labels_train, 4)
    assert labels.tolist() == [0, 1, 3, 1, 0]
    assert labels.dtype == np.int64
    for row, label in zip(W_cross, labels):
        H = np.array([eq10(row, labels_train, v, 4) for v in range(4)])
        assert label == int(np.argmin(H))  # eq. (9), first minimum
        sums = np.array([row[labels_train == v].sum() for v in range(4)])
        np.testing.assert_allclose(H + sums, H[0] + sums[0])  # H(i, v) = const_i - S_iv


def test_transfer_rejects_labels_out_of_range():
    with pytest.raises(ValueError, match=r"labels_train: expected labels in 0\.\.1"):
        transfer_labels(np.zeros((2, 3)), np.array([0, 2, 1]), 2)


def test_generator_perfect_graph_has_zero_cost_for_the_truth():
    W, labels = signed_graph([3, 4, 2], 0.0, 0.0, np.random.default_rng(0))
    assert labels.tolist() == [0, 0, 0, 1, 1, 1, 1, 2, 2]
    expected = np.where(labels[:, None] == labels[None, :], 1.0, -1.0)
    np.fill_diagonal(expected, 0.0)
    np.testing.assert_array_equal(W, expected)
    assert correlation_cost(W, labels) == 0.0
    assert correlation_cost(W, np.zeros(9, dtype=int)) == 3 * 4 + 3 * 2 + 4 * 2  # every inter-cluster edge


def test_generator_rates_within_binomial_tolerance():
    # 3 clusters of 100: 30,000 inter- and 14,850 intra-cluster edges. Tolerance 5 binomial sd (< 0.014).
    sizes = [100, 100, 100]
    W, labels = signed_graph(sizes, 0.3, 0.0, np.random.default_rng(11))
    assert W.dtype == np.float64 and np.array_equal(W, W.T) and not np.diag(W).any()
    assert set(np.unique(W[~np.eye(300, dtype=bool)])) == {-1.0, 1.0}
    upper = np.triu(np.ones((300, 300), dtype=bool), 1)
    inter = upper & (labels[:, None] != labels[None, :])
    intra = upper & (labels[:, None] == labels[None, :])
    assert inter.sum() == 30_000 and intra.sum() == 14_850

    def close(fraction: float, rate: float, edges: int) -> bool:
        return abs(fraction - rate) <= 5 * np.sqrt(rate * (1 - rate) / edges)

    assert np.all(W[intra] == 1.0)
    assert close(np.mean(W[inter] > 0), 0.3, 30_000)  # flips only
    # With noise p = 0.5 after the flips: inter positive (1 - p) q + p/2 = 0.4, intra negative p/2 = 0.25.
    W, labels = signed_graph(sizes, 0.3, 0.5, np.random.default_rng(12))
    assert close(np.mean(W[inter] > 0), 0.4, 30_000)
    assert close(np.mean(W[intra] < 0), 0.25, 14_850)


def test_generator_is_a_function_of_the_generator():
    first, _ = signed_graph([5, 6], 0.3, 0.5, np.random.default_rng([4, 2]))
    again, _ = signed_graph([5, 6], 0.3, 0.5, np.random.default_rng([4, 2]))
    other, _ = signed_graph([5, 6], 0.3, 0.5, np.random.default_rng([4, 3]))
    assert np.array_equal(first, again) and not np.array_equal(first, other)


def test_generator_rejects_bad_parameters():
    with pytest.raises(ValueError, match="q: expected a probability"):
        signed_graph([3, 3], 1.5, 0.1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="sizes"):
        signed_graph([3, 0], 0.3, 0.1, np.random.default_rng(0))


def test_temperature_schedule_of_one_half():
    temperatures = temperature_schedule(450)
    assert temperatures[0] == 45.0
    assert temperatures.size == 80  # 45 * 0.9**79 = 0.0108 >= 0.01 > 45 * 0.9**80
    assert temperatures[-1] >= 0.01 > temperatures[-1] * 0.9
    assert temperature_schedule(0).size == 0


def dyadic_graph(n: int, seed: int) -> np.ndarray:
    """Weights in {-1, -0.5, 0, 0.5, 1}: sums stay exact in floating point, in any order."""
    upper = np.triu(np.random.default_rng(seed).integers(-2, 3, size=(n, n)) / 2, 1)
    return upper + upper.T


CASES = [(seed, sizes, p, k) for seed, (sizes, p), k in zip(
    range(8), itertools.cycle([([10, 15, 12], 0.4), ([20, 20, 20], 0.7), ([30], 0.5), ([8, 8, 8, 8], 0.2)]),
    [1, 2, 3, 4, 5, 3, 2, 5])]


@pytest.mark.parametrize("seed, sizes, p, k", CASES)
def test_compiled_sampler_equals_the_reference_bit_for_bit(seed, sizes, p, k):
    W, _ = signed_graph(sizes, 0.3, p, np.random.default_rng([7, seed]))
    restarts = 2 + seed % 2
    fast = correlation_gibbs_restarts(W, k, np.random.default_rng([8, seed]), restarts=restarts)
    plain = gibbs_reference(W, k, np.random.default_rng([8, seed]), restarts=restarts)
    assert np.array_equal(fast.labels, plain.labels)
    assert np.array_equal(fast.restart_costs, plain.restart_costs)
    assert np.array_equal(fast.restart_converged, plain.restart_converged) and fast.restart_converged.all()
    assert fast.cost == fast.restart_costs.min() == correlation_cost(W, fast.labels)
    assert fast.labels.shape == (W.shape[0],) and fast.labels.dtype == np.int64
    assert 0 <= fast.labels.min() and fast.labels.max() < k


def test_compiled_sampler_equals_the_reference_on_missing_and_fractional_edges():
    W = dyadic_graph(40, 1)
    fast = correlation_gibbs_restarts(W, 4, np.random.default_rng(9), restarts=2, start_temperature=0.05)
    plain = gibbs_reference(W, 4, np.random.default_rng(9), restarts=2, start_temperature=0.05)
    assert np.array_equal(fast.labels, plain.labels)
    assert np.array_equal(fast.restart_costs, plain.restart_costs)


def test_sampler_recovers_a_planted_partition_and_leaves_extra_clusters_empty():
    W, truth = signed_graph([40, 40, 40], 0.3, 0.5, np.random.default_rng([4, 40]))
    result = correlation_gibbs_restarts(W, 6, np.random.default_rng([4, 6]), restarts=3)
    assert result.k_effective == 3 == k_effective(result.labels)
    assert len(set(zip(truth.tolist(), result.labels.tolist()))) == 3  # 3 pairs of 3 and 3 labels: a relabelling
    assert result.cost == correlation_cost(W, truth)


def test_one_cluster_and_determinism():
    W, _ = signed_graph([15, 15], 0.3, 0.5, np.random.default_rng(1))
    single = correlation_gibbs_restarts(W, 1, np.random.default_rng(2), restarts=2)
    assert not single.labels.any() and single.k_effective == 1
    assert single.cost == correlation_cost(W, np.zeros(30, dtype=int))
    first = correlation_gibbs(W, 4, np.random.default_rng([4, 4]), restarts=3)
    assert np.array_equal(first, correlation_gibbs(W, 4, np.random.default_rng([4, 4]), restarts=3))
    others = [correlation_gibbs(W, 4, np.random.default_rng([5, seed]), restarts=1) for seed in range(5)]
    assert k_effective(np.array([3, 3, 0, 3])) == 2
    assert len({tuple(labels) for labels in others}) > 1  # the labels' names, at least, depend on the draws


def test_sampler_rejects_graphs_it_cannot_read():
    asymmetric = np.zeros((3, 3))
    asymmetric[0, 1] = 1.0
    with pytest.raises(ValueError, match="symmetric"):
        correlation_gibbs(asymmetric, 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        correlation_gibbs(np.full((2, 2), 2.0) - np.diag([2.0, 2.0]), 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="k: expected an integer >= 1"):
        correlation_gibbs(np.zeros((2, 2)), 0, np.random.default_rng(0))
