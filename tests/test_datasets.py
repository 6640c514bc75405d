"""Synthetic datasets: the proportions, scales and true k the papers describe."""

from __future__ import annotations

import numpy as np
import pytest

from ordercube.tasks.datasets import SYNTHETIC, get_synthetic


def test_lange_gaussians3_has_exact_counts_25_25_50_at_n_100():
    X, component = get_synthetic("lange_gaussians3").sample(100, np.random.default_rng(0))
    assert X.shape == (100, 2)
    assert np.bincount(component).tolist() == [25, 25, 50]
    means = np.array([X[component == j].mean(axis=0) for j in range(3)])
    np.testing.assert_allclose(means, [[-2.5, 4.0], [2.5, 4.0], [0.0, 0.0]], atol=0.5)


def test_shamir_mixture_follows_lemma_1():
    X, component = get_synthetic("shamir_mixture1d").sample(60_000, np.random.default_rng(1), mu=7.0)
    assert X.shape == (60_000, 1)
    np.testing.assert_allclose(np.bincount(component) / 60_000, [1 / 6, 2 / 3, 1 / 6], atol=0.01)
    for j, mean in enumerate([-7.0, 0.0, 7.0]):
        values = X[component == j, 0]
        assert values.mean() == pytest.approx(mean, abs=0.03) and values.std() == pytest.approx(1.0, abs=0.03)


def test_rings3_radii_and_density_along_the_rings():
    X, component = get_synthetic("rings3").sample(30_000, np.random.default_rng(2), radii=[1.0, 2.0, 3.0], noise=0.05)
    radius = np.hypot(X[:, 0], X[:, 1])
    for j, r in enumerate([1.0, 2.0, 3.0]):
        assert np.median(radius[component == j]) == pytest.approx(r, abs=0.01)
    np.testing.assert_allclose(np.bincount(component) / 30_000, [1 / 6, 2 / 6, 3 / 6], atol=0.01)


def test_gaussian_mixture_weights_centers_and_true_k():
    spec = get_synthetic("gaussian_mixture")
    params = spec.resolve({"centers": [[0, 0], [10, 0], [0, 10], [10, 10], [5, 5]], "std": [1, 1, 1, 1, 0.5],
                           "weights": [1, 1, 1, 1, 4]})
    assert spec.true_k(params) == 5
    X, component = spec.sample(40_000, np.random.default_rng(3), **params)
    np.testing.assert_allclose(np.bincount(component) / 40_000, [1 / 8] * 4 + [1 / 2], atol=0.01)
    assert X[component == 4].std(axis=0) == pytest.approx([0.5, 0.5], abs=0.02)


def test_parameters_are_checked_against_the_registry():
    with pytest.raises(ValueError, match="missing parameter 'centers'"):
        get_synthetic("gaussian_mixture").resolve({})
    with pytest.raises(ValueError, match="unknown parameter 'sigma'"):
        get_synthetic("rings3").resolve({"sigma": 1})
    with pytest.raises(ValueError, match="expected one of"):
        get_synthetic("moons")


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_every_generator_is_reproducible_and_has_the_requested_size(name):
    spec = get_synthetic(name)
    params = spec.resolve({"centers": [[0.0], [5.0]]} if "centers" in spec.required else {})
    a, b = (spec.sample(37, np.random.default_rng(9), **params) for _ in range(2))
    assert a[0].shape[0] == 37 and np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    if spec.target is None:  # cluster memberships
        assert a[1].max() < spec.true_k(params)
    else:  # a classifier's response: two classes
        assert set(np.unique(a[1])) <= {0, 1}


@pytest.mark.parametrize("name, params, message", [
    ("gaussian_mixture", {"centers": [1, 2, 3]}, r"centers: expected a non-empty list of points .* got \[1, 2, 3\]"),
    ("gaussian_mixture", {"centers": []}, r"centers: expected a non-empty list of points"),
    ("gaussian_mixture", {"centers": [[0.0], [np.nan]]}, r"centers\[1\]\[0\]: expected a finite number .* got nan"),
    ("gaussian_mixture", {"centers": [[0.0], [5.0]], "std": [1.0, 0.0]}, r"std\[1\]: expected a finite number > 0"),
    ("gaussian_mixture", {"centers": [[0.0], [5.0]], "weights": [2.0]}, r"weights: expected a list of 2 numbers"),
    ("gaussian_mixture", {"centers": [[0.0], [5.0]], "weights": [1, np.inf]}, r"weights\[1\]: .* got inf"),
    ("lange_gaussians3", {"std": -0.5}, r"std: expected a finite number > 0 .* got -0.5; e.g. std: 0.8"),
    ("lange_gaussians3", {"std": "0.8"}, r"std: .* got '0.8'"),
    ("rings3", {"radii": [1.0, 1e101]}, r"radii\[1\]: expected a finite number > 0 of size at most 1e\+100"),
    ("rings3", {"noise": np.nan}, r"noise: expected a finite number >= 0"),
    ("shamir_mixture1d", {"mu": np.nan}, r"mu: expected a finite number > 0 .* got nan; e.g. mu: 5.0"),
])
def test_parameters_out_of_range_name_the_parameter_and_the_value(name, params, message):
    from ordercube.tasks.datasets import ParameterError

    with pytest.raises(ParameterError, match=message) as raised:
        get_synthetic(name).resolve(params)
    assert raised.value.name.split("[")[0] in params


def test_valid_parameters_resolve_unchanged_so_cube_identities_stay_the_same():
    spec = get_synthetic("gaussian_mixture")
    given = {"centers": [[0, 0], [5, 5]], "std": 1, "weights": [1, 3]}
    assert spec.resolve(given) == given and type(spec.resolve(given)["std"]) is int
    assert get_synthetic("shamir_mixture1d").resolve({}) == {"mu": 5.0}
    assert get_synthetic("lange_gaussians3").resolve({"centers": None})["centers"] is None


def test_a_5000_digit_integer_is_refused_by_its_size_not_printed():
    from ordercube.tasks.datasets import ParameterError

    with pytest.raises(ParameterError, match=r"mu: .* got an integer of about 5001 digits; e.g. mu: 5.0"):
        get_synthetic("shamir_mixture1d").resolve({"mu": 10**5000})
    with pytest.raises(ParameterError, match=r"centers: .* got a list holding an integer of more than 4300 digits"):
        get_synthetic("gaussian_mixture").resolve({"centers": [1, 10**5000]})
