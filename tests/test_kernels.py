"""Kernels against hand-worked examples, scikit-learn and scipy."""

from __future__ import annotations

import hashlib
import itertools

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from sklearn.cluster import KMeans
from sklearn.neighbors import KNeighborsClassifier

from ordercube.tasks.algorithms.kmeans import COMPILED_MAX_WORK, kmeans, kmeans_plusplus, lloyd, lloyd_sklearn
from ordercube.tasks.assignment import matched_weight, matched_weights
from ordercube.tasks.criteria.base import TrialFits
from ordercube.tasks.criteria.pairwise import pairwise_instability
from ordercube.tasks.criteria.stability import lange_disagreement, random_labeling_disagreement
from ordercube.tasks.datasets import ArraySource, SyntheticSource
from ordercube.tasks.matching import confusion, matched_disagreement
from ordercube.tasks.predictors import nearest_centroid, nearest_neighbor
from ordercube.tasks.seeding import Purpose, label_id, stream


def blobs(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0], [6.0, 6.0]])
    return centers[rng.integers(4, size=n)] + rng.standard_normal((n, 2))


@pytest.mark.parametrize("n, k", [(50, 2), (200, 4), (1000, 7)])
def test_lloyd_matches_sklearn_from_the_same_start(n, k):
    X = blobs(n, seed=n)
    start = kmeans_plusplus(X, k, np.random.default_rng(1), 1)
    labels, centers, inertia = lloyd(X, start, max_iter=300, tol=1e-4)
    reference = KMeans(n_clusters=k, init=start[0], n_init=1, algorithm="lloyd", tol=1e-4, max_iter=300).fit(X)
    assert np.array_equal(labels[0], reference.labels_)
    assert inertia[0] == pytest.approx(reference.inertia_, rel=1e-9)
    np.testing.assert_allclose(centers[0], reference.cluster_centers_, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("n, k", [(300, 3), (2000, 6)])
def test_numba_and_sklearn_kernels_agree_from_the_same_seeds(n, k):
    X = blobs(n, seed=k)
    seeds = kmeans_plusplus(X, k, np.random.default_rng(7), 5)
    ours, reference = lloyd(X, seeds), lloyd_sklearn(X, seeds)
    assert np.array_equal(ours[0], reference[0])
    np.testing.assert_allclose(ours[2], reference[2], rtol=1e-9)
    np.testing.assert_allclose(ours[1], reference[1], rtol=1e-9, atol=1e-9)


def test_kernel_choice_by_size_gives_the_optimum_on_both_sides_of_the_threshold():
    d = 40
    for n in (COMPILED_MAX_WORK // (4 * d) - 100, COMPILED_MAX_WORK // (4 * d) + 100):
        rng = np.random.default_rng(n)
        X = 6.0 * np.eye(d)[rng.integers(4, size=n)] + rng.standard_normal((n, d))  # 4 clouds on 4 axes
        ours = kmeans(X, 4, np.random.default_rng(0), n_init=10)
        reference = KMeans(n_clusters=4, n_init=10, random_state=0).fit(X)
        assert ours.inertia == pytest.approx(reference.inertia_, rel=1e-9)


def test_kmeans_leaves_its_data_unchanged_on_both_kernels_and_fits_read_only_data():
    """scikit-learn's KMeans(copy_x=False) centred the data in place and added the mean back: 139,125 of 10^6
    values moved by an ulp at 10^5 x 10, and a worker's later tasks read the moved data. Both kernels now leave
    every bit of the input as it was, and fit an array no one may write (a trial's halves are read-only)."""
    d = 10
    for n in (COMPILED_MAX_WORK // (5 * d) - 100, COMPILED_MAX_WORK // (5 * d) + 2000):
        X = 3.0 * blobs(n, seed=n)[:, :1].repeat(d, axis=1) + np.random.default_rng(n).normal(1.7, 2.0, (n, d))
        before = X.copy()
        X.flags.writeable = False
        fitted = kmeans(X, 5, np.random.default_rng(1), n_init=3)
        assert np.array_equal(X, before) and fitted.labels.shape == (n,)
        writable = before.copy()
        assert fitted.inertia == kmeans(writable, 5, np.random.default_rng(1), n_init=3).inertia
        assert np.array_equal(writable, before)


def test_best_of_restarts_reaches_sklearns_objective():
    X = blobs(400, seed=3)
    ours = kmeans(X, 4, np.random.default_rng(0), n_init=10)
    reference = KMeans(n_clusters=4, n_init=10, random_state=0).fit(X)
    assert ours.inertia == pytest.approx(reference.inertia_, rel=1e-9)
    assert matched_disagreement(ours.labels, reference.labels_, 4) == 0.0
    assert ours.inertia == pytest.approx(((X - ours.centers[ours.labels]) ** 2).sum(), rel=1e-12)


def test_kmeans_plusplus_picks_data_points_and_spreads_them():
    X = np.array([[0.0], [0.1], [10.0], [10.1]])
    seeds = kmeans_plusplus(X, 2, np.random.default_rng(0), 50)
    assert seeds.shape == (50, 2, 1)
    # the second centre is far from the first with probability 1 - 0.01/(2*~100): one per side
    sides = (seeds[:, :, 0] > 5).sum(axis=1)
    assert (sides == 1).mean() > 0.9


def test_confusion_and_matching_by_hand():
    a = np.array([0, 0, 1, 1, 2, 2])
    b = np.array([1, 1, 0, 0, 0, 2])
    assert confusion(a, b, 3).tolist() == [[0, 2, 0], [2, 0, 0], [1, 0, 1]]
    # best relabeling maps b's 1->0, 0->1, 2->2: only point 4 (a=2, b=0) disagrees
    assert matched_disagreement(a, b, 3) == pytest.approx(1 / 6)


def test_matching_equals_brute_force_over_permutations():
    rng = np.random.default_rng(5)
    for _ in range(20):
        k = int(rng.integers(2, 5))
        a, b = rng.integers(k, size=30), rng.integers(k, size=30)
        brute = min(np.mean(a != np.array(p)[b]) for p in itertools.permutations(range(k)))
        assert matched_disagreement(a, b, k) == pytest.approx(brute)


@pytest.mark.parametrize("values", [2, 7, 10**6])  # few values: many tied optima; many: one optimum
def test_compiled_hungarian_gives_scipys_matched_weight(values):
    rng = np.random.default_rng(values)
    tables = [rng.integers(values, size=(k, k)) for k in rng.integers(1, 14, size=300)]
    tables += [np.zeros((4, 4), dtype=np.int64), np.full((5, 5), 3), np.eye(6, dtype=np.int64)[::-1] * 9]
    for table in tables:
        rows, columns = linear_sum_assignment(table, maximize=True)
        assert matched_weight(table) == table[rows, columns].sum(), table
    stacked = rng.integers(values, size=(50, 6, 6))
    assert matched_weights(stacked).tolist() == [matched_weight(table) for table in stacked]


def test_random_baseline_is_the_scipy_matched_mean_bit_for_bit():
    """The compiled matching changed no stored value: the baseline as computed with scipy before it."""
    n_points, k, draws = 301, 6, 64
    ours = random_labeling_disagreement(n_points, k, np.random.default_rng(3), draws=draws)
    rng = np.random.default_rng(3)
    a, b = rng.integers(k, size=(draws, n_points)), rng.integers(k, size=(draws, n_points))
    matched = np.empty(draws)
    for i in range(draws):
        table = confusion(a[i], b[i], k)
        rows, columns = linear_sum_assignment(table, maximize=True)
        matched[i] = table[rows, columns].sum()
    assert ours == float(np.mean(1.0 - matched / n_points))


def test_nearest_centroid_by_hand():
    X = np.array([[0.0, 0.0], [2.0, 0.0], [10.0, 10.0], [12.0, 10.0]])
    labels = np.array([1, 1, 0, 0])
    new = np.array([[1.0, 1.0], [11.0, 8.0], [5.9, 5.0], [6.1, 5.0]])
    # centroids (1, 0) for label 1 and (11, 10) for label 0; (5.9, 5) is closer to (1, 0)
    assert nearest_centroid(X, labels, 2, new).tolist() == [1, 0, 1, 0]


def test_nearest_centroid_never_predicts_an_empty_cluster():
    X = np.array([[0.0], [1.0]])
    assert set(nearest_centroid(X, np.array([0, 0]), 3, np.array([[0.5], [100.0]]))) == {0}


def test_nearest_neighbor_matches_sklearn():
    rng = np.random.default_rng(2)
    X, new = rng.standard_normal((60, 3)), rng.standard_normal((200, 3))
    labels = rng.integers(4, size=60)
    reference = KNeighborsClassifier(n_neighbors=1).fit(X, labels).predict(new)
    assert np.array_equal(nearest_neighbor(X, labels, 4, new), reference)


def fits(first, second, la, lb, k, evaluation=None, pairing=None):
    return TrialFits(first=first, second=second, labels_first=la, labels_second=lb, k=k,
                     predictor=nearest_centroid, evaluation=evaluation, pairing=pairing)


def test_lange_disagreement_by_hand():
    first = np.array([[0.0], [1.0], [10.0], [11.0]])
    second = np.array([[0.5], [4.0], [6.0], [10.5]])
    # first's centroids: 0.5 (label 0) and 10.5 (label 1); 4 -> 0, 6 -> 1 (midpoint 5.5)
    # second's own labels put 4 with 10.5: one point of four disagrees after matching
    value = lange_disagreement(fits(first, second, np.array([0, 0, 1, 1]), np.array([1, 0, 0, 0]), 2))
    assert value == pytest.approx(0.25)


def test_pairwise_instability_by_hand():
    first = np.array([[0.0], [1.0], [10.0], [11.0]])
    second = np.array([[0.0], [1.0], [2.0], [11.0]])
    evaluation = np.array([[0.0], [5.7], [8.0], [11.0]])
    # first: centroids 0.5 | 10.5, boundary 5.5 -> evaluation labels [0, 1, 1, 1]
    # second: centroids 1 | 11, boundary 6 -> evaluation labels [0, 0, 1, 1]
    # pairs (0, 1) and (2, 3): apart/together differ, together/together agree -> 1 of 2
    value = pairwise_instability(fits(first, second, np.array([0, 0, 1, 1]), np.array([0, 0, 0, 1]), 2,
                                      evaluation=evaluation, pairing=np.array([0, 2, 1, 3])))
    assert value == pytest.approx(0.5)


def test_random_baseline_matches_the_exact_expectation():
    # Two points, two labels: the partitions agree with probability 1/2 (disagreement 0),
    # otherwise one of the two points disagrees after matching: expectation 1/4.
    assert random_labeling_disagreement(2, 2, np.random.default_rng(0), draws=40_000) == pytest.approx(0.25, abs=0.01)


def test_random_baseline_is_below_the_asymptote_and_approaches_it():
    rng = np.random.default_rng(1)
    small = random_labeling_disagreement(50, 5, rng, draws=500)
    large = random_labeling_disagreement(20_000, 5, rng, draws=50)
    assert small < large < 1 - 1 / 5
    assert large == pytest.approx(0.8, abs=0.01)


def test_label_id_is_blake2b_and_streams_are_keyed_by_values():
    expected = int.from_bytes(hashlib.blake2b(b"gaussians3", digest_size=8).digest(), "little")
    assert label_id("gaussians3") == expected
    a = stream(11, Purpose.DRAW, 5, 100, 3).random(4)
    assert np.array_equal(a, stream(11, Purpose.DRAW, 5, 100, 3).random(4))
    assert not np.array_equal(a, stream(11, Purpose.DRAW, 5, 100, 4).random(4))
    assert not np.array_equal(a, stream(11, Purpose.EVAL, 5, 100, 3).random(4))
    assert not np.array_equal(a, stream(12, Purpose.DRAW, 5, 100, 3).random(4))


@pytest.mark.parametrize("source", [SyntheticSource("shamir_mixture1d", {"mu": 5.0}),
                                    ArraySource(np.arange(40, dtype=float)[:, None])])
def test_halves_do_not_depend_on_whether_an_evaluation_sample_is_drawn(source):
    draw = lambda with_eval: source.draw(12, np.random.default_rng(3), np.random.default_rng(4), with_eval=with_eval)  # noqa: E731
    plain, full = draw(False), draw(True)
    assert plain.evaluation is None and full.evaluation.shape == (12, 1)
    assert np.array_equal(plain.first, full.first) and np.array_equal(plain.second, full.second)
    assert plain.first.shape == plain.second.shape == (6, 1)


def test_array_source_halves_and_evaluation_are_disjoint_rows():
    X = np.arange(30, dtype=float)[:, None]
    data = ArraySource(X).draw(10, np.random.default_rng(0), np.random.default_rng(1), with_eval=True)
    rows = np.concatenate([data.first, data.second, data.evaluation]).ravel()
    assert len(set(rows)) == 20


def test_nearest_centroid_in_one_dimension_agrees_with_the_distance_rule():
    rng = np.random.default_rng(8)
    X, new = rng.standard_normal((500, 1)) * 5, rng.standard_normal((20_000, 1)) * 6
    labels = rng.integers(6, size=500)
    labels[labels == 4] = 5  # an empty cluster in the middle of the label range
    centers = np.array([X[labels == j].mean() if (labels == j).any() else np.inf for j in range(6)])
    expected = np.abs(new - centers[None, :]).argmin(axis=1)
    assert np.array_equal(nearest_centroid(X, labels, 6, new), expected)


def test_spectral_clustering_separates_rings_that_kmeans_cannot():
    from ordercube.tasks.algorithms import get_algorithm
    from ordercube.tasks.datasets.synthetic import rings3

    X, truth = rings3(400, np.random.default_rng(3), radii=[1.0, 2.5], noise=0.1)
    spectral_labels = get_algorithm("spectral").cluster(X, 2, np.random.default_rng(0), n_neighbors=10)
    assert matched_disagreement(spectral_labels, truth, 2) == 0.0
    assert matched_disagreement(kmeans(X, 2, np.random.default_rng(0)).labels, truth, 2) > 0.2
    # the nearest-neighbour predictor extends the rings to new points
    new, new_truth = rings3(300, np.random.default_rng(4), radii=[1.0, 2.5], noise=0.1)
    assert matched_disagreement(nearest_neighbor(X, spectral_labels, 2, new), new_truth, 2) == 0.0
    again = get_algorithm("spectral").cluster(X, 2, np.random.default_rng(0), n_neighbors=10)
    assert np.array_equal(spectral_labels, again)


def test_spectral_for_all_k_at_once_matches_sklearn_fitted_per_k():
    """One embedding for the largest k, truncated per k, against ``SpectralClustering`` fitted for each k.

    On a connected graph the eigenvalues are distinct and the solutions agree exactly; on a graph of
    c components the null space is c-dimensional and any k < c of its vectors are an arbitrary pick,
    for scikit-learn too (its solutions then change with its random_state), so that case is not compared.
    """
    from scipy.sparse.csgraph import connected_components
    from sklearn.cluster import SpectralClustering
    from sklearn.neighbors import kneighbors_graph

    from ordercube.tasks.algorithms.spectral import spectral_many

    rng = np.random.default_rng(5)
    centers = np.array([[0.0, 0.0], [8.0, 0.0], [0.0, 8.0], [8.0, 8.0], [4.0, 16.0]])
    X = centers[rng.integers(5, size=600)] + 1.5 * rng.standard_normal((600, 2))
    graph = kneighbors_graph(X, 10, include_self=True)
    assert connected_components(graph + graph.T)[0] == 1
    ours = spectral_many(X, [2, 3, 4, 5, 6], np.random.default_rng(0), n_neighbors=10)
    for k, labels in ours.items():
        reference = SpectralClustering(n_clusters=k, affinity="nearest_neighbors", n_neighbors=10,
                                       assign_labels="cluster_qr", random_state=1).fit_predict(X)
        assert matched_disagreement(labels, reference, k) == 0.0, k
    assert matched_disagreement(ours[5], np.argmin(((X[:, None] - centers) ** 2).sum(-1), axis=1), 5) < 0.02
