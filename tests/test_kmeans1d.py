"""Exact 1-D k-means against the PyPI reference ``kmeans1d`` and against Lloyd's local optima."""

from __future__ import annotations

import kmeans1d
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.cluster import KMeans

from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.algorithms.kmeans1d import kmeans_1d_exact, within_cluster_sum_of_squares
from ordercube.tasks.datasets.synthetic import shamir_mixture1d
from ordercube.tasks.matching import matched_disagreement


@pytest.mark.parametrize("n", [8, 64, 1000, 20_000])
@pytest.mark.parametrize("mu", [2.0, 5.0, 8.0])
def test_same_objective_and_labels_as_kmeans1d(n, mu):
    x = shamir_mixture1d(n, np.random.default_rng(n), mu=mu)[0].ravel()
    ours = kmeans_1d_exact(x, [2, 3, 4])
    for k in (2, 3, 4):
        reference = np.array(kmeans1d.cluster(x, k)[0])
        assert within_cluster_sum_of_squares(x, ours[k]) == pytest.approx(
            within_cluster_sum_of_squares(x, reference), rel=1e-9)
        assert matched_disagreement(ours[k], reference, k) == 0.0


@settings(max_examples=150, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=40), st.integers(1, 6))
def test_optimal_on_arbitrary_small_inputs_with_duplicates(values, k):
    x = np.round(np.array(values), 1)  # rounding makes ties and duplicates common
    k = min(k, x.size)
    ours = kmeans_1d_exact(x, [k])[k]
    reference = np.array(kmeans1d.cluster(x, k)[0])
    assert within_cluster_sum_of_squares(x, ours) <= within_cluster_sum_of_squares(x, reference) * (1 + 1e-9) + 1e-9
    assert np.all(np.diff(ours[np.argsort(x, kind="stable")]) >= 0)  # contiguous runs, numbered left to right


def test_never_worse_than_lloyd_and_strictly_better_where_lloyd_gets_stuck():
    x = shamir_mixture1d(3000, np.random.default_rng(4), mu=5.0)[0]
    exact = within_cluster_sum_of_squares(x, kmeans_1d_exact(x, [4])[4])
    stuck = []
    for seed in range(20):
        fitted = KMeans(n_clusters=4, n_init=1, init="random", random_state=seed).fit(x)
        assert exact <= fitted.inertia_ * (1 + 1e-12)
        stuck.append(fitted.inertia_ > exact * (1 + 1e-6))
    assert any(stuck)  # a poor start leaves Lloyd in a local optimum at least once in 20


def test_all_k_at_once_equals_one_k_at_a_time():
    x = np.random.default_rng(5).standard_normal(500)
    together = kmeans_1d_exact(x, [2, 3, 5, 7])
    for k in (2, 3, 5, 7):
        assert np.array_equal(together[k], kmeans_1d_exact(x, [k])[k])


def test_registered_with_a_joint_fit_and_a_one_feature_limit():
    algorithm = get_algorithm("kmeans_1d_exact")
    assert algorithm.max_features == 1 and algorithm.cluster_many is not None
    x = np.random.default_rng(6).standard_normal((40, 1))
    assert np.array_equal(algorithm.cluster(x, 3, np.random.default_rng(0)),
                          algorithm.cluster_many(x, [3], np.random.default_rng(1))[3])


def test_a_split_between_equal_values_is_still_a_valid_optimal_labeling():
    x = np.array([10.0, 0.0, 0.0, 0.0])  # k = 3 must split the run of zeros: cost 0
    labels = kmeans_1d_exact(x, [2, 3])
    assert within_cluster_sum_of_squares(x, labels[3]) == 0.0 and len(set(labels[3])) == 3
    assert labels[2].tolist() == [1, 0, 0, 0]  # a clean split: found by binary search on the values
