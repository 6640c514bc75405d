"""The interval ERM of Daudin & Mary-Huard's (2008) Kearns example (tasks/classifiers/intervals.py) against exhaustive
enumeration of labellings, brute-force refits, a large Monte Carlo and cases worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ordercube.tasks.classifiers.intervals import (
    _refit_predictions,
    _sorted_fit,
    interval_erm_fit,
    interval_erm_scores,
)
from ordercube.tasks.datasets.synthetic import kearns_intervals, kearns_target


def kearns_sample(n: int, rng: np.random.Generator, *, d: int = 10, eta: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """Kearns' sample as the 1-D points and labels the kernel takes (the generator returns X of shape (n, 1))."""
    X, y = kearns_intervals(n, rng, d=d, eta=eta)
    return X[:, 0], y

KEYS = ("resubstitution", "swap_penalty", "swapping", "loo_cv")


def all_labellings(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every labelling of n sorted points, shape (2**n, n), and its number of intervals."""
    L = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    return L, 1 + np.count_nonzero(L[:, 1:] != L[:, :-1], axis=1)


def predict(xs: np.ndarray, labels: np.ndarray, x_new: np.ndarray) -> np.ndarray:
    """A classifier given by its labels at the sorted points ``xs``, at new points: switches at the midpoints,
    a point on a switch goes right. Written apart from the kernel's own exact-measure code on purpose."""
    change = np.flatnonzero(labels[1:] != labels[:-1]) + 1
    breaks = 0.5 * (xs[change - 1] + xs[change])
    return labels[np.concatenate([[0], change])][np.searchsorted(breaks, x_new, side="right")]


def random_samples():
    """Small samples, sorted and shuffled, clean and noisy: (x, y) pairs with n <= 12."""
    rng = np.random.default_rng([3, 2024])
    for n in (2, 3, 5, 8, 10, 12, 12, 12):
        for eta in (0.0, 0.2, 0.5):
            x, y = kearns_sample(n, rng, d=3, eta=eta)
            yield x, y


def unique_prediction(L: np.ndarray, minimisers: np.ndarray, pos: int) -> int | None:
    values = np.unique(L[minimisers, pos])
    return int(values[0]) if values.size == 1 else None


def test_dp_is_the_erm_for_every_k_against_exhaustive_enumeration():
    checked = 0
    for x, y in random_samples():
        n = x.size
        order = np.argsort(x)
        L, intervals = all_labellings(n)
        errors = np.count_nonzero(L != y[order], axis=1)
        ks = list(range(1, n + 2))
        fits = interval_erm_fit(x, y, ks)
        eer = interval_erm_scores(x, y, ks)["resubstitution"]
        for r, k in enumerate(ks):
            best = errors[intervals <= k].min()
            fitted = fits[r][order]
            assert round(eer[r] * n) == best
            assert np.count_nonzero(fitted != y[order]) == best
            assert 1 + np.count_nonzero(fitted[1:] != fitted[:-1]) <= k
            checked += 1
    assert checked > 100


def test_swap_term_equals_exhaustive_erm_where_the_minimiser_prediction_is_unique():
    compared = total = 0
    for x, y in random_samples():
        n = x.size
        _, xs, ys, F, labels = _sorted_fit(x, y, n)
        swapped, _ = _refit_predictions(xs, ys, F, n)
        L, intervals = all_labellings(n)
        for i in range(n):
            flipped = ys.copy()
            flipped[i] = 1 - ys[i]
            # the kernel's carried refit is the full refit of the public fit on the flipped sample
            refit = interval_erm_fit(xs, flipped, list(range(1, n + 1)))
            np.testing.assert_array_equal(swapped[1:, i], refit[:, i])
            errors = {c: np.count_nonzero(L != np.where(np.arange(n) == i, c, ys), axis=1) for c in (0, 1)}
            for k in range(1, n + 1):
                dp = {ys[i]: labels[k, i], 1 - ys[i]: swapped[k, i]}
                exhaustive = {}
                for c in (0, 1):
                    err = np.where(intervals <= k, errors[c], n + 1)
                    exhaustive[c] = unique_prediction(L, err == err.min(), i)
                total += 1
                if exhaustive[0] is not None and exhaustive[1] is not None:
                    assert dp[1] - dp[0] == exhaustive[1] - exhaustive[0]
                    compared += 1
    assert compared > 0.5 * total and compared > 300


def test_swap_penalty_is_eq5_with_the_run_plug_in():
    rng = np.random.default_rng([3, 5])
    x, y = kearns_sample(40, rng, eta=0.3)
    ks = [1, 2, 4, 7, 12, 40]
    n0 = 6.0
    order = np.argsort(x)
    xs, ys = x[order], y[order]
    fits = interval_erm_fit(x, y, ks)[:, order]
    penalty = interval_erm_scores(x, y, ks, n0=n0)["swap_penalty"]
    for r, k in enumerate(ks):
        total = 0.0
        for i in range(x.size):
            flipped = ys.copy()
            flipped[i] = 1 - ys[i]
            other = interval_erm_fit(xs, flipped, [k])[0, i]
            with_one, with_zero = (fits[r, i], other) if ys[i] == 1 else (other, fits[r, i])
            run_ids = np.cumsum(np.r_[0, fits[r, 1:] != fits[r, :-1]])
            run = np.flatnonzero(run_ids == run_ids[i])  # phi_k's constant-label run holding x_i
            p = (ys[run].sum() + n0 / 2) / (run.size + n0)
            total += p * (1 - p) * (with_one - with_zero)
        assert penalty[r] == pytest.approx(2 / x.size * total, abs=1e-12)


def test_leave_one_out_by_brute_force_refits_and_exhaustive_minimisers():
    compared = 0
    for x, y in random_samples():
        n = x.size
        if n < 3:
            continue
        ks = list(range(1, n + 1))
        loo = interval_erm_scores(x, y, ks)["loo_cv"]
        mistakes = np.zeros(len(ks), dtype=int)
        L, intervals = all_labellings(n - 1)
        for i in range(n):
            rest = np.arange(n) != i
            xr, yr = x[rest], y[rest]
            o = np.argsort(xr)
            refit = interval_erm_fit(xr, yr, ks)[:, o]
            errors = np.count_nonzero(L != yr[o], axis=1)
            for r, k in enumerate(ks):
                guess = predict(xr[o], refit[r], np.array([x[i]]))[0]
                mistakes[r] += guess != y[i]
                err = np.where(intervals <= k, errors, n + 1)
                values = {int(predict(xr[o], lab, np.array([x[i]]))[0]) for lab in L[err == err.min()]}
                if len(values) == 1:
                    assert guess == values.pop()
                    compared += 1
        np.testing.assert_allclose(loo, mistakes / n, rtol=0, atol=1e-12)
    assert compared > 300


def test_exact_true_and_conditional_error_against_monte_carlo():
    rng = np.random.default_rng([3, 7])
    d, eta, n = 10, 0.2, 100
    x, y = kearns_sample(n, rng, d=d, eta=eta)
    ks = [1, 3, 8, 10, 15, 30]
    scores = interval_erm_scores(x, y, ks, target=(d, eta))
    order = np.argsort(x)
    fits = interval_erm_fit(x, y, ks)[:, order]
    x_new, y_new = kearns_sample(2_000_000, rng, d=d, eta=eta)
    repeats = 20_000
    fresh = kearns_target(x, d)[order] ^ (rng.random((repeats, n)) < eta)
    for r in range(len(ks)):
        mc = np.mean(predict(x[order], fits[r], x_new) != y_new)
        se = np.sqrt(mc * (1 - mc) / x_new.size)
        assert abs(mc - scores["true_error"][r]) < 4 * se
        mc = np.mean(fits[r] != fresh)
        se = np.sqrt(mc * (1 - mc) / fresh.size)
        assert abs(mc - scores["conditional_error"][r]) < 4 * se
    assert scores["true_error"].min() < 0.4  # classifiers near f* are among those checked, not only constants


def test_hand_worked_four_points():
    x, y = np.array([0.1, 0.2, 0.6, 0.7]), np.array([0, 0, 1, 1])
    s = interval_erm_scores(x, y, [1, 2, 3], target=(2, 0.0))
    np.testing.assert_array_equal(interval_erm_fit(x, y, [1, 2]), [[0, 0, 0, 0], [0, 0, 1, 1]])
    np.testing.assert_allclose(s["resubstitution"], [0.5, 0.0, 0.0])
    # k = 1: phi = 0; flipping a 0 makes 1 the majority (bracket 1), flipping a 1 changes nothing;
    # the one run holds 2 ones of 4: p = (2 + 5) / 14 = 1/2.  Penalty (2/4)(1/4 + 1/4).
    # k = 2: every flip moves the prediction (a 0 flipped at x = 0.1 gives the 1-interval fit 1 by the
    # tie rule); each run's p is (0 + 5)/12 or (2 + 5)/12, p(1 - p) = 35/144.  Penalty (2/4) 4 (35/144).
    np.testing.assert_allclose(s["swap_penalty"], [0.25, 35 / 72, 35 / 72])
    np.testing.assert_allclose(s["swapping"], [0.75, 35 / 72, 35 / 72])
    # k = 1: without any one point the majority is the other label; k = 2: neighbours' midpoints
    # 0.35 and 0.45 put x = 0.2 left and x = 0.6 right, the ends take the nearest label
    np.testing.assert_allclose(s["loo_cv"], [1.0, 0.0, 0.0])
    # f* = 0 on [0, 1/2), 1 on [1/2, 1]; phi_2 switches at 0.4: they differ on [0.4, 0.5)
    np.testing.assert_allclose(s["true_error"], [0.5, 0.1, 0.1])
    np.testing.assert_allclose(s["conditional_error"], [0.5, 0.0, 0.0])
    s = interval_erm_scores(x, y, [2], target=(2, 0.25))
    np.testing.assert_allclose([s["true_error"][0], s["conditional_error"][0]], [0.25 + 0.5 * 0.1, 0.25])


def test_tie_rule_fewest_intervals_then_label_zero_then_switches_leftmost():
    x = np.array([0.7, 0.1, 0.5, 0.3])  # unsorted on purpose: y by sorted x is 0, 1, 0, 1
    y = np.array([1, 0, 0, 1])
    fits = interval_erm_fit(x, y, [1, 2, 3, 4])
    by_x = fits[:, np.argsort(x)]
    np.testing.assert_array_equal(by_x, [[0, 0, 0, 0],  # 2 errors as 0 or as 1: label 0
                                         [0, 1, 1, 1],  # 1 error with 0|0,0,1 or 0|1,1,1: switch leftmost
                                         [0, 1, 1, 1],  # 1 error with 2 or 3 intervals: fewer
                                         [0, 1, 0, 1]])
    # equal x: taken in input order, so these two points at 0.5 can be told apart, the switch sitting at
    # their common value (phi_2 = f* for d = 2); in the other input order they cannot
    x, y = np.array([0.5, 0.5, 0.2]), np.array([0, 1, 0])
    np.testing.assert_array_equal(interval_erm_fit(x, y, [2]), [[0, 1, 0]])
    s = interval_erm_scores(x, y, [2], target=(2, 0.1))
    assert s["resubstitution"][0] == 0 and s["true_error"][0] == pytest.approx(0.1)
    assert interval_erm_scores(x, y[[1, 0, 2]], [2])["resubstitution"][0] == pytest.approx(1 / 3)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1, allow_nan=False), st.integers(0, 1)), min_size=2, max_size=30),
       st.floats(0, 30))
def test_properties_on_arbitrary_samples(points, n0):
    x = np.array([p[0] for p in points])
    y = np.array([p[1] for p in points], dtype=np.int64)
    n = x.size
    order = np.argsort(x, kind="stable")
    runs = 1 + np.count_nonzero(np.diff(y[order]))
    ks = list(range(1, n + 3))
    s = interval_erm_scores(x, y, ks, n0=n0, target=(4, 0.1))
    assert set(s) == {*KEYS, "true_error", "conditional_error"}
    assert all(v.shape == (len(ks),) and v.dtype == np.float64 for v in s.values())
    assert np.all(np.diff(s["resubstitution"]) <= 0)
    assert s["resubstitution"][runs - 1] == 0 and (runs == 1 or s["resubstitution"][runs - 2] > 0)
    # an ERM never moves away from a label it is given (the two minimality inequalities contradict
    # otherwise), so each bracket of eq. (5) is 0 or 1 and the penalty is at most 2 (1/4) = 1/2
    assert np.all(s["swap_penalty"] >= 0) and np.all(s["swap_penalty"] <= 0.5 + 1e-12)
    np.testing.assert_allclose(s["swapping"], s["resubstitution"] + s["swap_penalty"])
    assert np.all((s["loo_cv"] >= 0) & (s["loo_cv"] <= 1))
    assert np.all((s["true_error"] >= 0.1 - 1e-12) & (s["true_error"] <= 0.9 + 1e-12))
    # results follow the order of ks, and k > n is the fit of k = n
    reverse = interval_erm_scores(x, y, ks[::-1], n0=n0)
    for key in KEYS:
        np.testing.assert_array_equal(reverse[key], s[key][::-1])
        assert s[key][-1] == s[key][n - 1]


def test_kearns_target_and_sample():
    np.testing.assert_array_equal(kearns_target(np.array([0.0, 0.09, 0.1, 0.25, 0.95, 1.0]), 10),
                                  [0, 0, 1, 0, 1, 1])
    np.testing.assert_array_equal(kearns_target(np.array([1.0]), 3), [0])
    x, y = kearns_sample(1000, np.random.default_rng(9), d=10, eta=0.2)
    rng = np.random.default_rng(9)
    x_again = rng.random(1000)
    flips = rng.random(1000) < 0.2
    np.testing.assert_array_equal(x, x_again)
    np.testing.assert_array_equal(y, kearns_target(x, 10) ^ flips)
    assert x.dtype == np.float64 and y.dtype == np.int64


@pytest.mark.parametrize(("args", "kwargs", "match"), [
    (([0.1, 0.2], [0, 1], [0]), {}, "ks: expected"),
    (([0.1, 0.2], [0, 1], []), {}, "ks: expected"),
    (([0.1, 0.2], [0, 1], [1.5]), {}, "ks: expected"),
    (([0.1, 0.2], [0, 2], [1]), {}, r"y: expected labels in \{0, 1\}, got \[2\]"),
    (([0.1, 0.2], [-1, 1], [1]), {}, r"y: expected labels"),
    (([0.1], [0], [1]), {}, "n: expected at least 2 points, got 1"),
    (([0.1, 0.2, 0.3], [0, 1], [1]), {}, "same shape"),
    (([0.1, np.nan], [0, 1], [1]), {}, "x: expected finite"),
    (([0.1, 0.2], [0, 1], [1]), {"n0": -1.0}, "n0: expected"),
    (([0.1, 1.2], [0, 1], [1]), {"target": (10, 0.2)}, r"x: Kearns' target lives on \[0, 1\]"),
    (([0.1, 0.2], [0, 1], [1]), {"target": (0, 0.2)}, "target d: expected"),
    (([0.1, 0.2], [0, 1], [1]), {"target": (10, 1.5)}, "target eta: expected"),
])
def test_bad_input_names_the_problem(args, kwargs, match):
    x, y, ks = args
    with pytest.raises(ValueError, match=match):
        interval_erm_scores(np.array(x, dtype=float), np.array(y), ks, **kwargs)
