"""The compiled pieces of Figure 1's trial give the bits of the numpy code they replaced.

Kept here as references: the exact 1-D k-means as first written (numpy's sort, one scalar scan per row of the divide
and conquer, ``searchsorted`` on the split edges) and Shamir & Tishby's (2007, Lemma 1) mixture drawn with
``rng.choice``. The replacements (a radix sort, long rows scanned in vectorised passes, a branch-free count of the
edges, two comparisons against ``choice``'s cumulative weights) must agree with them bit for bit on any input, ties,
duplicates, signed zeros and infinities included.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from ordercube.tasks.algorithms.kmeans1d import (LONG_ROW, RADIX_FROM, _optimal_splits, _radix_sorted,
                                                 kmeans_1d_exact, prefix_sums, sorted_values)
from ordercube.tasks.criteria.base import TrialFits
from ordercube.tasks.criteria.pairwise import pairwise_instability
from ordercube.tasks.datasets.synthetic import shamir_mixture1d


@njit(nogil=True)
def reference_splits(S1: np.ndarray, S2: np.ndarray, top: int) -> np.ndarray:
    """The divide and conquer as first written: every row one scalar scan."""
    n = S1.size - 1
    previous = np.empty(n + 2)
    for i in range(n):
        total = S1[n] - S1[i]
        previous[i] = (S2[n] - S2[i]) - total * total / (n - i)
    previous[n] = previous[n + 1] = np.inf
    current = np.empty(n + 2)
    splits = np.zeros((top + 1, n + 1), dtype=np.int64)
    stack = np.empty((128, 4), dtype=np.int64)
    for c in range(2, top + 1):
        if c == top:
            best, chosen = np.inf, 1
            for j in range(1, n - c + 2):
                total = S1[j] - S1[0]
                value = (S2[j] - S2[0]) - total * total / j + previous[j]
                if value < best:
                    best, chosen = value, j
            splits[c, 0] = chosen
            break
        current[n - c + 1 :] = np.inf
        stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = 0, n - c, 1, n - c + 1
        depth = 1
        while depth > 0:
            depth -= 1
            lo, hi, jlo, jhi = stack[depth, 0], stack[depth, 1], stack[depth, 2], stack[depth, 3]
            mid = (lo + hi) // 2
            best, chosen = np.inf, jhi
            for j in range(max(mid + 1, jlo), jhi + 1):
                total = S1[j] - S1[mid]
                value = (S2[j] - S2[mid]) - total * total / (j - mid) + previous[j]
                if value < best:
                    best, chosen = value, j
            current[mid] = best
            splits[c, mid] = chosen
            if lo <= mid - 1:
                stack[depth, 0], stack[depth, 1], stack[depth, 2], stack[depth, 3] = lo, mid - 1, jlo, chosen
                depth += 1
            if mid + 1 <= hi:
                stack[depth, 0], stack[depth, 1], stack[depth, 2], stack[depth, 3] = mid + 1, hi, chosen, jhi
                depth += 1
        previous, current = current, previous
    return splits


def numpy_prefix_sums(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    xs = np.sort(x)
    centred = xs - x.mean()
    return np.concatenate([[0.0], np.cumsum(centred)]), np.concatenate([[0.0], np.cumsum(centred * centred)])


def reference_labels(x: np.ndarray, ks: list[int]) -> dict[int, np.ndarray]:
    """``kmeans_1d_exact`` as first written: numpy's sort and ``searchsorted`` (the DP itself is shared)."""
    x = np.asarray(x, dtype=np.float64).ravel()
    n = x.size
    xs = np.sort(x)
    centred = xs - x.mean()
    S1 = np.concatenate([[0.0], np.cumsum(centred)])
    S2 = np.concatenate([[0.0], np.cumsum(centred * centred)])
    splits = reference_splits(S1, S2, max(ks))
    labels = {}
    for k in ks:
        bounds, i = [0], 0
        for c in range(k, 1, -1):
            i = int(splits[c][i])
            bounds.append(i)
        starts = np.array(bounds[1:], dtype=np.int64)
        if np.all(xs[starts - 1] < xs[starts]):
            labels[k] = np.searchsorted(xs[starts], x, side="right").astype(np.int64)
        else:
            order = np.argsort(x, kind="stable")
            labels[k] = np.empty(n, dtype=np.int64)
            labels[k][order] = np.repeat(np.arange(k), np.diff([*bounds, n]))
    return labels


def reference_mixture(n: int, rng: np.random.Generator, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """Shamir & Tishby's mixture as first written, with ``rng.choice``."""
    component = rng.choice(3, size=n, p=[1 / 6, 2 / 3, 1 / 6])
    X = (np.array([-mu, 0.0, mu])[component] + rng.standard_normal(n))[:, None]
    return X, component.astype(np.int64)


def assert_same_bits(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 100, RADIX_FROM, RADIX_FROM + 3, 40_000]),
       st.sampled_from(["normal", "rounded", "zeros", "extremes"]))
def test_radix_sort_orders_like_numpy(seed, n, kind):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300)
    if kind == "rounded":  # many duplicates
        x = np.round(rng.standard_normal(n), 1)
    elif kind == "zeros":  # signed zeros among negatives and positives
        x = np.where(rng.random(n) < 0.3, np.where(rng.random(n) < 0.5, -0.0, 0.0), x)
    elif kind == "extremes":
        x = np.where(rng.random(n) < 0.2, rng.choice([np.inf, -np.inf, 5e-324, -5e-324, 1.7e308, -1.7e308], n), x)
    np.testing.assert_array_equal(_radix_sorted(x), np.sort(x))  # -0.0 == 0.0: the one freedom allowed
    np.testing.assert_array_equal(sorted_values(x), np.sort(x))


def test_radix_sort_hands_nan_to_numpy():
    x = np.random.default_rng(1).standard_normal(RADIX_FROM + 10)
    x[[3, 700]] = np.nan, -np.nan
    assert_same_bits(sorted_values(x), np.sort(x))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([4, 9, 64, 1000, 2 * RADIX_FROM]),
       st.sampled_from([1.0, 2.0, 5.0, 8.0]), st.booleans())
def test_labels_are_the_reference_labels(seed, n, mu, rounded):
    x = shamir_mixture1d(n, np.random.default_rng(seed), mu=mu)[0]
    if rounded:  # duplicates at the splits: the stable-order branch
        x = np.round(x)
    ks = [k for k in (2, 3, 4, 7) if k <= n]
    ours, reference = kmeans_1d_exact(x, ks), reference_labels(x, ks)
    for k in ks:
        assert_same_bits(ours[k], reference[k])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=2, max_size=40), st.integers(1, 6))
def test_labels_on_arbitrary_small_inputs(values, k):
    x = np.round(np.array(values), 1)
    k = min(k, x.size)
    assert_same_bits(kmeans_1d_exact(x, [k])[k], reference_labels(x, [k])[k])


@pytest.mark.parametrize("n", [1, 7, 64, 4096, 131_072])
@pytest.mark.parametrize("mu", [0.5, 5.0, 7, 8.0])
def test_mixture_draws_what_rng_choice_draws(n, mu):
    for seed in range(3):
        ours = shamir_mixture1d(n, np.random.default_rng([seed, n]), mu=mu)
        reference = reference_mixture(n, np.random.default_rng([seed, n]), mu)
        assert_same_bits(ours[0], reference[0])
        assert_same_bits(ours[1], reference[1])


def test_mixture_leaves_the_stream_where_rng_choice_left_it():
    ours, reference = np.random.default_rng(3), np.random.default_rng(3)
    shamir_mixture1d(1000, ours, mu=5.0)
    reference_mixture(1000, reference, 5.0)
    assert ours.random() == reference.random()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([LONG_ROW - 1, LONG_ROW + 2, 3 * LONG_ROW, 5000, 70_000]),
       st.sampled_from(["mixture", "rounded", "constant runs", "spread"]), st.sampled_from([2, 4, 9]))
def test_every_split_of_every_row_is_the_scalar_scans(seed, n, kind, top):
    rng = np.random.default_rng(seed)
    x = shamir_mixture1d(n, rng, mu=float(rng.uniform(0.5, 9.0)))[0].ravel()
    if kind == "rounded":  # equal costs: ties between candidates
        x = np.round(x, 1)
    elif kind == "constant runs":  # zero costs (signed zeros among them) and equal values across splits
        x = np.repeat(rng.integers(-3, 4, n // 50 + 1).astype(float), 50)[:n]
    elif kind == "spread":
        x = x * 10.0 ** rng.integers(-150, 150)
    S1, S2 = numpy_prefix_sums(x)
    assert_same_bits(_optimal_splits(S1, S2, top), reference_splits(S1, S2, top))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 33, 4096, 70_000]), st.sampled_from([0, -200, 0, 150]))
def test_prefix_sums_are_numpys(seed, n, scale):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.standard_normal(n) * 10.0**scale + rng.integers(-3, 4, n))
    centred = x - x.mean()
    S1, S2 = prefix_sums(x, x.mean())
    assert_same_bits(S1, np.concatenate([[0.0], np.cumsum(centred)]))
    assert_same_bits(S2, np.concatenate([[0.0], np.cumsum(centred * centred)]))


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.sampled_from([2, 3, 10, 64, 1001, 5000]))
def test_pairwise_instability_is_the_numpy_mean(seed, k, size):
    rng = np.random.default_rng(seed)
    labels = {"first": rng.integers(0, k, size), "second": rng.integers(0, k, size)}
    pairing = rng.permutation(size)
    fits = TrialFits(first=np.zeros((1, 1)), second=np.zeros((1, 1)), labels_first=np.zeros(1, dtype=np.int64),
                     labels_second=np.zeros(1, dtype=np.int64), k=k, evaluation=np.zeros((size, 1)), pairing=pairing,
                     predictor=lambda X_train, fitted, k, X_new: labels["first" if X_train is fits.first else "second"])
    m = size // 2
    left, right = pairing[:m], pairing[m : 2 * m]
    a, b = labels["first"], labels["second"]
    expected = float(np.mean((a[left] == a[right]) != (b[left] == b[right])))
    assert pairwise_instability(fits).hex() == expected.hex()


@pytest.mark.parametrize("top", [3, 4])
def test_a_minimum_tied_across_many_candidates_keeps_the_leftmost(top):
    # two values, 1,500 points each: every split inside a run costs exactly 0, so a long row's minimum recurs in
    # several chunks of its scan and only the leftmost candidate is the scalar scan's answer
    x = np.repeat([0.0, 1.0], 1500)
    S1, S2 = numpy_prefix_sums(x)
    splits = _optimal_splits(S1, S2, top)
    assert_same_bits(splits, reference_splits(S1, S2, top))
    assert splits[top, 0] == 1
