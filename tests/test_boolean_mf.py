"""GreConD (compiled against its numpy reference and hand-worked cases) and Frank et al.'s (2011) Boolean transfer cost."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ordercube.tasks.algorithms.boolean_mf import (
    BooleanFactors,
    bmf_transfer_costs,
    bmf_transfer_costs_numpy,
    boolean_product,
    greconD,
    greconD_numpy,
)


def or_of_roles(rng: np.random.Generator, n: int = 80, d: int = 90, roles: int = 3,
                per_role: int = 12) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``X = Z ∘ U`` exactly: ``roles`` random permission sets, each user holding a random non-empty subset."""
    U = np.zeros((roles, d), dtype=bool)
    for t in range(roles):
        U[t, rng.choice(d, size=per_role, replace=False)] = True
    Z = rng.random((n, roles)) < 0.4
    Z[~Z.any(axis=1), rng.integers(roles)] = True
    return (Z.astype(int) @ U.astype(int)) > 0, Z, U


def noisy(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
    X, _, _ = or_of_roles(rng, n, d, roles=6, per_role=max(2, d // 8))
    return X ^ (rng.random((n, d)) < 0.05)


def same_factors(a: BooleanFactors, b: BooleanFactors) -> bool:
    return (np.array_equal(a.Z, b.Z) and np.array_equal(a.U, b.U) and np.array_equal(a.covered, b.covered)
            and a.n_ones == b.n_ones)


def test_hand_worked_factorisation():
    # Factor 1: j = 0 and j = 2 both give 4 uncovered ones (ties: lowest j), closure {0, 1} x users {0, 1};
    # adding 2 gives ({1}, {0, 1, 2}), 3 < 4. Factor 2: j = 2 gives ({1, 2}, {1, 2}) with the 3 left.
    X = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]])
    for fit in (greconD, greconD_numpy):
        factors = fit(X, 10)
        assert factors.Z.tolist() == [[True, False], [True, True], [False, True]]
        assert factors.U.tolist() == [[True, True, False], [False, True, True]]
        assert factors.covered.tolist() == [4, 7] and factors.n_ones == 7
        assert factors.coverage.tolist() == [4 / 7, 1.0]


def test_one_role_per_user_recovers_the_roles():
    rng = np.random.default_rng(1)
    U = np.zeros((3, 40), dtype=bool)
    U[0, 0:10], U[1, 10:18], U[2, 18:24] = True, True, True
    Z = np.eye(3, dtype=bool)[rng.permutation(np.repeat([0, 1, 2], [20, 15, 10]))]
    factors = greconD(Z.astype(int) @ U.astype(int), 8)
    assert factors.n_factors == 3
    assert factors.U.tolist() == U.tolist()  # found by area: 20 x 10 > 15 x 8 > 10 x 6
    assert factors.Z.tolist() == Z.tolist()


@pytest.mark.parametrize("seed", range(6))
def test_or_of_three_roles_is_covered_exactly_with_few_factors_and_no_zero_covered(seed):
    X, _, _ = or_of_roles(np.random.default_rng(seed))
    factors = greconD(X, 50)
    assert 3 <= factors.n_factors <= 5
    assert factors.covered[-1] == factors.n_ones == X.sum()
    assert np.array_equal(boolean_product(factors.Z, factors.U, factors.n_factors), X)
    for k in range(factors.n_factors + 1):
        assert not np.any(boolean_product(factors.Z, factors.U, k) & ~X)


@pytest.mark.parametrize("seed", range(4))
def test_from_below_and_coverage_counts_on_noisy_data(seed):
    X = noisy(np.random.default_rng(seed), 70, 100)
    factors = greconD(X, 25)
    assert factors.n_factors == 25 and factors.covered[-1] < factors.n_ones  # noise needs more than 25
    assert np.all(np.diff(factors.covered) > 0)  # each factor covers something new
    for k in range(1, factors.n_factors + 1):
        product = boolean_product(factors.Z, factors.U, k)
        assert not np.any(product & ~X)
        assert product.sum() == factors.covered[k - 1]


def test_fewer_factors_are_a_prefix_of_more():
    X = noisy(np.random.default_rng(7), 50, 70)
    many, few = greconD(X, 30), greconD(X, 6)
    assert np.array_equal(few.Z, many.Z[:, :6]) and np.array_equal(few.U, many.U[:6])
    assert np.array_equal(few.covered, many.covered[:6])


@pytest.mark.parametrize("shape", [(1, 5), (30, 63), (30, 64), (30, 65), (45, 130), (9, 200)])
@pytest.mark.parametrize("density", [0.1, 0.5, 0.9])
def test_compiled_equals_numpy_reference(shape, density):
    rng = np.random.default_rng([shape[0], shape[1], int(density * 10)])
    X = rng.random(shape) < density
    assert same_factors(greconD(X, 60), greconD_numpy(X, 60))
    structured = noisy(rng, *shape) if shape[0] > 1 else X
    assert same_factors(greconD(structured, 40), greconD_numpy(structured, 40))


@settings(max_examples=80, deadline=None)
@given(arrays(np.bool_, st.tuples(st.integers(1, 12), st.integers(1, 70))), st.integers(1, 12))
def test_compiled_equals_numpy_reference_on_arbitrary_small_matrices(X, k_max):
    assert same_factors(greconD(X, k_max), greconD_numpy(X, k_max))


def test_all_zeros_and_all_ones():
    zeros = greconD(np.zeros((4, 6), dtype=int), 3)
    assert zeros.n_factors == 0 and zeros.Z.shape == (4, 0) and zeros.U.shape == (0, 6)
    assert not boolean_product(zeros.Z, zeros.U, 5).any()
    ones = greconD(np.ones((4, 6)), 3)
    assert ones.n_factors == 1 and ones.Z.all() and ones.U.all() and ones.covered.tolist() == [24]


def test_boolean_product_by_hand():
    Z = np.array([[1, 0, 1], [0, 1, 0], [0, 0, 0]])
    U = np.array([[1, 0, 0, 1], [0, 1, 1, 0], [0, 0, 1, 1]])
    assert boolean_product(Z, U, 0).tolist() == [[False] * 4] * 3
    assert boolean_product(Z, U, 1).astype(int).tolist() == [[1, 0, 0, 1], [0, 0, 0, 0], [0, 0, 0, 0]]
    assert boolean_product(Z, U, 2).astype(int).tolist() == [[1, 0, 0, 1], [0, 1, 1, 0], [0, 0, 0, 0]]
    assert boolean_product(Z, U, 3).astype(int).tolist() == [[1, 0, 1, 1], [0, 1, 1, 0], [0, 0, 0, 0]]
    assert np.array_equal(boolean_product(Z, U, 9), boolean_product(Z, U, 3))


def test_transfer_cost_by_hand():
    X1 = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 1, 1, 1], [0, 0, 0, 1]])
    factors = BooleanFactors(Z=np.array([[1, 0], [0, 1], [1, 1], [0, 0]], dtype=bool),
                             U=np.array([[1, 1, 0, 0], [0, 0, 1, 1]], dtype=bool),
                             covered=np.array([4, 8]), n_ones=9)
    # Nearest training users: a -> 0 (distance 0); b -> 1 (distance 1, tied with 2: lowest index);
    # c -> 3; d -> 0 (distance 1, tied with 2). Bits wrong at k = 0, 1, 2: a 2,0,0; b 3,3,1; c 0,0,0; d 3,1,1.
    X2 = np.array([[1, 1, 0, 0], [1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 1, 0]])
    expected = [2.0, 1.0, 0.5, 0.5, 0.5]
    for transfer in (bmf_transfer_costs, bmf_transfer_costs_numpy):
        assert transfer(X1, factors, X2, [0, 1, 2, 3, 7]).tolist() == expected
        assert transfer(X1, factors, X2, [2, 0]).tolist() == [0.5, 2.0]


def direct_transfer_costs(X1: np.ndarray, factors: BooleanFactors, X2: np.ndarray, ks: list[int]) -> list[float]:
    costs = []
    for k in ks:
        total = 0
        for x in X2:
            distances = [int(np.sum(x != row)) for row in X1]
            i = distances.index(min(distances))
            reconstruction = np.any(factors.Z[i, :k, None] & factors.U[:k], axis=0)
            total += int(np.sum(x != reconstruction))
        costs.append(total / len(X2))
    return costs


@pytest.mark.parametrize("d", [6, 70, 130])
def test_transfer_costs_equal_a_direct_loop_over_k(d):
    rng = np.random.default_rng(d)
    X = noisy(rng, 90, d)
    X1, X2 = X[:60], X[60:]
    factors = greconD(X1, 40)
    ks = list(range(factors.n_factors + 3))
    expected = direct_transfer_costs(X1, factors, X2, ks)
    assert bmf_transfer_costs(X1, factors, X2, ks) == pytest.approx(expected, abs=1e-12)
    assert bmf_transfer_costs_numpy(X1, factors, X2, ks) == pytest.approx(expected, abs=1e-12)


def test_k_beyond_the_factors_found_repeats_the_last_value():
    X, _, _ = or_of_roles(np.random.default_rng(3), n=60, d=50)
    X1, X2 = X[:40], X[40:] ^ (np.random.default_rng(4).random((20, 50)) < 0.1)
    factors = greconD(X1, 50)
    assert factors.n_factors < 10
    last = factors.n_factors
    costs = bmf_transfer_costs(X1, factors, X2, [last, last + 1, 50, 400])
    assert np.all(costs == costs[0])
    # the exact factorisation reproduces each neighbour: the cost is the mean distance to it
    nearest = np.argmin([[np.sum(x != row) for row in X1] for x in X2], axis=1)
    assert costs[0] == pytest.approx(np.mean(np.sum(X2 != X1[nearest], axis=1)))


def test_bad_input_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="only 0 and 1"):
        greconD(np.array([[0, 2]]), 3)
    with pytest.raises(ValueError, match="2-D"):
        greconD(np.array([0, 1]), 3)
    with pytest.raises(ValueError, match="k_max"):
        greconD(np.eye(3), 0)
    factors = greconD(np.eye(3), 3)
    with pytest.raises(ValueError, match="same permissions"):
        bmf_transfer_costs(np.eye(3), factors, np.ones((2, 4)), [1])
    with pytest.raises(ValueError, match="fitted on X1"):
        bmf_transfer_costs(np.eye(4)[:, :3], factors, np.ones((2, 3)), [1])
    with pytest.raises(ValueError, match="ks"):
        bmf_transfer_costs(np.eye(3), factors, np.ones((2, 3)), [-1])
    with pytest.raises(ValueError, match="k: expected"):
        boolean_product(factors.Z, factors.U, -1)
