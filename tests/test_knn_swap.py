"""The kNN kernel of Daudin & Mary-Huard 2008 (swapping, LOO, test error for every k at once) and the t-statistic gene ranking."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy.stats import ttest_ind
from sklearn.model_selection import LeaveOneOut, cross_val_score
from sklearn.neighbors import KNeighborsClassifier
from threadpoolctl import threadpool_limits

from ordercube.tasks.classifiers.knn import _neighbour_order, knn_scores
from ordercube.tasks.classifiers.selection import t_statistics, top_by_t


def _brute_order(X: NDArray[np.float64]) -> NDArray[np.int64]:
    """Neighbours by (exact distance, index), each point forced first: an implementation independent of the kernel's."""
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    np.fill_diagonal(d2, -1.0)
    index = np.broadcast_to(np.arange(X.shape[0]), d2.shape)
    return np.lexsort((index, d2), axis=1)


def _brute_swap_penalty(X: NDArray[np.float64], y: NDArray[np.int64], k: int, n0: float = 10.0) -> float:
    """Eq. (5)'s penalty by flipping each label and re-voting at that point (Secs. 3.1 and 4.1)."""
    order = _brute_order(X)[:, :k]
    total = 0.0
    for i in range(len(y)):
        votes = []
        for label in (1, 0):
            swapped = y.copy()
            swapped[i] = label
            ones = swapped[order[i]].sum()
            votes.append(int(ones > k - ones))
        m = y[order[i]].sum()
        p_hat = (m + n0 / 2) / (k + n0)
        total += p_hat * (1 - p_hat) * (votes[0] - votes[1])
    return 2.0 * total / len(y)


@pytest.mark.parametrize("seed, n, p, grid", [(0, 15, 2, False), (1, 23, 3, False), (2, 40, 2, False),
                                               (3, 31, 3, False), (4, 30, 2, True)])
def test_swap_shortcut_equals_brute_force(seed: int, n: int, p: int, grid: bool) -> None:
    rng = np.random.default_rng([3, seed])
    # gridded integer points: many tied distances, resolved by index in both implementations
    X = rng.integers(0, 4, size=(n, p)).astype(float) if grid else rng.normal(size=(n, p))
    y = rng.integers(0, 2, size=n)
    ks = [1, 2, 3, 4, 5, 8, 11, n - 2, n - 1]
    expected = [_brute_swap_penalty(X, y, k) for k in ks]
    got = knn_scores(X, y, ks)
    np.testing.assert_allclose(got["swap_penalty"], expected, rtol=1e-12, atol=0)
    np.testing.assert_allclose(got["swapping"], got["resubstitution"] + got["swap_penalty"], rtol=1e-15)
    assert np.all(got["swap_penalty"][[0]] > 0)  # k = 1: every swap flips the point's own vote


def test_loo_and_test_error_equal_scikit_learn() -> None:
    rng = np.random.default_rng([3, 10])
    X, X_test = rng.normal(size=(30, 3)), rng.normal(size=(17, 3))
    y = (X[:, 0] + rng.normal(scale=1.0, size=30) > 0).astype(np.int64)
    y_test = (X_test[:, 0] + rng.normal(scale=1.0, size=17) > 0).astype(np.int64)
    ks = [7, 1, 2, 3, 4, 6, 15, 29]  # any order, odd and even
    got = knn_scores(X, y, ks, X_test=X_test, y_test=y_test)
    # scikit-learn's OpenMP neighbour search costs ~40 ms a call in thread start-up on a busy machine; one thread: 2 ms
    with threadpool_limits(1, user_api="openmp"):
        for j, k in enumerate(ks):
            loo = cross_val_score(KNeighborsClassifier(n_neighbors=k, algorithm="brute"), X, y, cv=LeaveOneOut())
            assert got["loo_cv"][j] == pytest.approx(1 - loo.mean(), abs=1e-12), k
            fitted = KNeighborsClassifier(n_neighbors=k).fit(X, y)
            assert got["test_error"][j] == pytest.approx(1 - fitted.score(X_test, y_test), abs=1e-12), k
            assert got["resubstitution"][j] == pytest.approx(1 - fitted.score(X, y), abs=1e-12), k
    assert len({*got["loo_cv"].tolist()}) > 2  # the comparison saw several different values


def test_hand_worked_example() -> None:
    # x = 0 1 2 10 11, y = 0 0 1 1 1. Neighbour rows (self first, ties by index: x=1 sees 0 before 2; the
    # test point 5 is 5 from both x=0 and x=10 and takes x=0 first):
    #   x=0: 0 1 2 | labels 0 0 1     x=1: 1 0 2 | 0 0 1     x=2: 2 1 0 | 1 0 0
    #   x=10: 3 4 2 | 1 1 1           x=11: 4 3 2 | 1 1 1
    # k = 1: eer 0; every swap flips the own vote, p = (y + 5)/11, p(1 - p) = 30/121 -> penalty (2/5)(5)(30/121).
    #        loo: x=2's nearest other is x=1 (label 0) -> 1/5.
    # k = 3: m = 1 1 1 3 3 -> votes 0 0 0 1 1, x=2 wrong -> eer 1/5. m' = m - y = 1 1 0 2 2: only x=0 and x=1
    #        have m' = 1 = (k - 1)/2; p = 6/13, p(1 - p) = 42/169 -> penalty (2/5)(2)(42/169) = 168/845.
    #        literal rule also counts x=2 (m = 1 = (k - 1)/2, a minority point) -> (2/5)(3)(42/169).
    #        loo (positions 1..3): 0 1 1 / 0 1 1 / 0 0 1 / 1 1 0 / 1 1 0 -> votes 1 1 0 1 1 -> 3 wrong -> 3/5.
    # test x = 1.6, 5, 12 with y = 1 0 1: k = 1 -> nearest 2, 2, 11 -> 1 1 1 -> one error (x=5);
    #        k = 3 -> {2,1,0} {2,1,0} {11,10,2} -> 0 0 1 -> one error (x=1.6).
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0]])
    y = np.array([0, 0, 1, 1, 1])
    X_test, y_test = np.array([[1.6], [5.0], [12.0]]), np.array([1, 0, 1])
    got = knn_scores(X, y, [1, 3], X_test=X_test, y_test=y_test)
    np.testing.assert_allclose(got["resubstitution"], [0.0, 1 / 5], rtol=1e-15)
    np.testing.assert_allclose(got["swap_penalty"], [2 / 5 * 5 * 30 / 121, 168 / 845], rtol=1e-13)
    np.testing.assert_allclose(got["swapping"], [60 / 121, 1 / 5 + 168 / 845], rtol=1e-13)
    np.testing.assert_allclose(got["loo_cv"], [1 / 5, 3 / 5], rtol=1e-15)
    np.testing.assert_allclose(got["test_error"], [1 / 3, 1 / 3], rtol=1e-15)
    literal = knn_scores(X, y, [3], swap_rule="literal")
    np.testing.assert_allclose(literal["swap_penalty"], [2 / 5 * 3 * 42 / 169], rtol=1e-13)


def test_literal_rule_also_counts_minority_points() -> None:
    # x = 0 1 2 10, y = 1 0 0 1, k = 3: rows 0 1 2 | 1 0 2 | 2 1 0 | 3 2 1, m = 1 everywhere (p = 6/13).
    # Points 1 and 2 are in a short majority of 0s (m' = 1): both rules count them. Points 0 and 3 are label-1
    # minorities beside that majority: the literal rule counts them (m = 1 = (k - 1)/2), the exact one not,
    # since with y = 1 or 0 they are outvoted either way.
    X = np.array([[0.0], [1.0], [2.0], [10.0]])
    y = np.array([1, 0, 0, 1])
    exact = knn_scores(X, y, [3])["swap_penalty"][0]
    literal = knn_scores(X, y, [3], swap_rule="literal")["swap_penalty"][0]
    assert exact == pytest.approx(2 / 4 * 2 * 42 / 169, rel=1e-13)
    assert literal == pytest.approx(2 / 4 * 4 * 42 / 169, rel=1e-13)
    with pytest.raises(ValueError, match="odd k only.*k = 2"):
        knn_scores(X, y, [1, 2], swap_rule="literal")


def test_duplicated_points_keep_self_first_and_index_order() -> None:
    rng = np.random.default_rng([3, 20])
    X = rng.normal(size=(12, 40)) * 1e3 + 5e3  # large offset: the Gram expansion alone would not tie them
    X[[0, 4, 9]] = X[0] + 1e5  # far from the rest: their nearest others are each other
    y = np.zeros(12, dtype=np.int64)
    y[[0, 9]] = 1
    order = _neighbour_order(X, X, self_first=True)
    np.testing.assert_array_equal(order[[0, 4, 9], :3], [[0, 4, 9], [4, 0, 9], [9, 0, 4]])
    np.testing.assert_array_equal(order, _brute_order(X))
    got = knn_scores(X, y, [1, 2])
    assert got["resubstitution"][0] == 0.0  # two identical points with different labels, each its own neighbour
    # loo k = 1: the nearest other point of 0, 4, 9 is 4, 0, 0 (labels 0, 1, 1): 0 and 4 are misclassified
    assert got["loo_cv"][0] == pytest.approx(2 / 12)
    assert got["swap_penalty"][0] > 0


def test_bad_input_is_refused_with_a_reason() -> None:
    X = np.arange(10.0).reshape(5, 2)
    y = np.array([0, 1, 0, 1, 1])
    with pytest.raises(ValueError, match=r"k = 5 needs at least 6 learning points for leave-one-out, the learning set has 5"):
        knn_scores(X, y, [1, 5])
    with pytest.raises(ValueError, match=r"k = 0"):
        knn_scores(X, y, [0, 1])
    with pytest.raises(ValueError, match=r"y_learn.*labels \[0, 1, 2\]"):
        knn_scores(X, np.array([0, 1, 2, 1, 0]), [1])
    with pytest.raises(ValueError, match=r"y_test.*labels \[-1, 1\]"):
        knn_scores(X, y, [1], X_test=X[:2], y_test=np.array([-1, 1]))
    with pytest.raises(ValueError, match="swap_rule"):
        knn_scores(X, y, [1], swap_rule="paper")  # type: ignore[arg-type]


def test_t_statistics_match_scipy_and_rank_by_magnitude() -> None:
    rng = np.random.default_rng([3, 30])
    y = np.array([0] * 9 + [1] * 14)
    X = rng.normal(size=(23, 12)) + np.outer(y, rng.normal(scale=1.5, size=12))
    X[:, 7] = 3.25  # constant on the learning set
    t = t_statistics(X, y)
    live = np.arange(12) != 7
    reference = np.zeros(12)  # scipy gives NaN (and a warning) for the constant column
    reference[live] = ttest_ind(X[y == 1][:, live], X[y == 0][:, live], equal_var=True).statistic
    np.testing.assert_allclose(t, reference, rtol=1e-12)
    assert t[7] == 0.0
    expected = np.argsort(-np.abs(reference), kind="stable")
    np.testing.assert_array_equal(top_by_t(X, y, 5), expected[:5])
    everything = top_by_t(X, y, 50)
    np.testing.assert_array_equal(everything, expected)
    assert everything.dtype == np.int64 and everything[-1] == 7


def test_top_by_t_ties_and_degenerate_columns() -> None:
    rng = np.random.default_rng([3, 31])
    y = np.array([0, 1] * 6)
    X = rng.normal(size=(12, 6))
    X[:, 4] = X[:, 1]  # the same |t|: kept in column order
    X[:, 5] = -X[:, 1]
    X[:, 2] = np.where(y == 1, 2.0, -1.0)  # constant within each class: zero pooled variance, a perfect split
    t = t_statistics(X, y)
    assert t[2] == np.inf and abs(t[1]) == abs(t[4]) == abs(t[5])
    order = top_by_t(X, y, 6).tolist()
    assert order[0] == 2
    assert order.index(1) + 1 == order.index(4) == order.index(5) - 1
    with pytest.raises(ValueError, match="both classes"):
        t_statistics(X, np.ones(12, dtype=np.int64))
    with pytest.raises(ValueError, match="n0 = 1, n1 = 1"):
        t_statistics(X[:2], y[:2])
