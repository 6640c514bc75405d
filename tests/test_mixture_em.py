"""The compiled EM of tasks/algorithms/mixture_em.py against scikit-learn's GaussianMixture, and on toy data."""

from __future__ import annotations

import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture

from ordercube.tasks.algorithms.kmeans import kmeans
from ordercube.tasks.algorithms.mixture_em import MixtureFit, aic, bic, em_from, fit_mixture, n_parameters, score_samples
from ordercube.tasks.datasets.synthetic import gaussian_mixture

RTOL = 1e-7
TRIANGLE = [[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3.0) / 2.0]]


def overlapping(n: int, d: int = 2, seed: int = 0) -> np.ndarray:
    """Three Gaussians that overlap (sd 0.6 times the circumradius of the unit triangle), in d dimensions."""
    centers = [point + [0.0] * (d - 2) for point in TRIANGLE]
    return gaussian_mixture(n, np.random.default_rng([seed, d]), centers=centers, std=0.6 / np.sqrt(3.0))[0]


def start_from_partition(X: np.ndarray, labels: np.ndarray, k: int, reg_covar: float):
    """scikit-learn's initialisation from a hard partition: one-hot responsibilities through its M-step."""
    n, d = X.shape
    resp = np.zeros((n, k))
    resp[np.arange(n), labels] = 1.0
    counts = resp.sum(axis=0) + 10 * np.finfo(np.float64).eps
    means = resp.T @ X / counts[:, None]
    covariances = np.empty((k, d, d))
    for c in range(k):
        diff = X - means[c]
        covariances[c] = (resp[:, c] * diff.T) @ diff / counts[c] + reg_covar * np.eye(d)
    return counts / n, means, covariances


def reference(X, weights, means, covariances, **options) -> GaussianMixture:
    return GaussianMixture(n_components=len(weights), covariance_type="full", weights_init=weights, means_init=means,
                           precisions_init=np.linalg.inv(covariances), **options).fit(X)


def assert_same_fit(ours: MixtureFit, theirs: GaussianMixture, X: np.ndarray) -> None:
    np.testing.assert_allclose(ours.weights, theirs.weights_, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(ours.means, theirs.means_, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(ours.covariances, theirs.covariances_, rtol=RTOL, atol=1e-12)
    assert ours.lower_bound == pytest.approx(theirs.lower_bound_, rel=RTOL)
    assert (ours.n_iter, ours.converged) == (theirs.n_iter_, theirs.converged_)
    np.testing.assert_array_equal(ours.labels, theirs.predict(X))


@pytest.mark.parametrize("d", [2, 3])  # 2: the unrolled kernels; 3: the general ones
@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_em_from_the_same_start_matches_scikit_learn(k, d):
    X = overlapping(300, d)
    labels = kmeans(X, k, np.random.default_rng(k), n_init=1).labels
    start = start_from_partition(X, labels, k, 1e-6)
    ours = em_from(X, *start, max_iter=100, tol=1e-3, reg_covar=1e-6)
    theirs = reference(X, *start, max_iter=100, tol=1e-3, reg_covar=1e-6)
    assert ours.converged
    assert_same_fit(ours, theirs, X)


def test_em_from_stops_at_max_iter_as_scikit_learn():
    X = overlapping(250)
    start = start_from_partition(X, kmeans(X, 6, np.random.default_rng(1), n_init=1).labels, 6, 1e-4)
    ours = em_from(X, *start, max_iter=3, tol=0.0, reg_covar=1e-4)
    with pytest.warns(ConvergenceWarning):
        theirs = reference(X, *start, max_iter=3, tol=0.0, reg_covar=1e-4)
    assert (ours.n_iter, ours.converged) == (3, False)
    assert_same_fit(ours, theirs, X)


class ProjectKMeans:
    """Stands in for scikit-learn's KMeans inside GaussianMixture: this project's k-means from one shared rng."""

    rng: np.random.Generator

    def __init__(self, n_clusters, n_init, random_state):
        self.n_clusters = n_clusters
        assert n_init == 1

    def fit(self, X):
        self.labels_ = kmeans(X, self.n_clusters, self.rng, n_init=1).labels
        return self


@pytest.mark.parametrize(("n", "k"), [(250, 1), (250, 3), (500, 5), (500, 10)])
def test_fit_mixture_is_scikit_learns_fit_initialised_by_this_projects_kmeans(n, k, monkeypatch):
    import sklearn.mixture._base

    monkeypatch.setattr(sklearn.mixture._base.cluster, "KMeans", ProjectKMeans)
    X = overlapping(n, seed=k)
    ProjectKMeans.rng = np.random.default_rng([k, n])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a slow restart is compared all the same
        theirs = GaussianMixture(n_components=k, covariance_type="full", n_init=5, init_params="kmeans").fit(X)
    rng = np.random.default_rng([k, n])
    ours = fit_mixture(X, k, rng, n_init=5)
    assert_same_fit(ours, theirs, X)
    assert rng.bit_generator.state == ProjectKMeans.rng.bit_generator.state  # the same five draws, nothing else


def test_score_samples_bic_and_aic_equal_scikit_learns():
    X = overlapping(400)
    new = overlapping(250, seed=9) * 3.0 + 40.0  # far from the fit: a naive sum of exponentials underflows
    model = GaussianMixture(n_components=4, covariance_type="full", random_state=0).fit(X)
    fit = MixtureFit(weights=model.weights_, means=model.means_, covariances=model.covariances_,
                     lower_bound=model.lower_bound_, converged=model.converged_, n_iter=model.n_iter_,
                     labels=model.predict(X))
    np.testing.assert_allclose(score_samples(fit, X), model.score_samples(X), rtol=1e-10)
    far = score_samples(fit, new)
    assert np.all(np.isfinite(far)) and far.max() < -1e3
    np.testing.assert_allclose(far, model.score_samples(new), rtol=1e-10)
    assert n_parameters(fit) == model._n_parameters() == 3 + 4 * 2 + 4 * 3
    for data in (X, new):
        assert bic(fit, data) == pytest.approx(model.bic(data), rel=1e-10)
        assert aic(fit, data) == pytest.approx(model.aic(data), rel=1e-10)


def test_three_well_separated_gaussians_are_recovered():
    centers = np.array([[0.0, 0.0], [5.0, 0.0], [0.0, 5.0]])
    X, truth = gaussian_mixture(500, np.random.default_rng(3), centers=centers.tolist(), std=0.3)
    fit = fit_mixture(X, 3, np.random.default_rng(4), n_init=5)
    distance = np.linalg.norm(fit.means[:, None, :] - centers[None, :, :], axis=2)
    rows, cols = linear_sum_assignment(distance)
    assert distance[rows, cols].max() < 0.1
    agreement = np.zeros((3, 3), dtype=int)
    np.add.at(agreement, (fit.labels, truth), 1)
    rows, cols = linear_sum_assignment(-agreement)
    assert agreement[rows, cols].sum() >= 0.98 * len(X)
    for component, true in zip(rows, cols):  # separated: each component is its cloud's sample mean and weight
        np.testing.assert_allclose(fit.means[component], X[truth == true].mean(axis=0), atol=1e-9)
        assert fit.weights[component] == pytest.approx(np.mean(truth == true), abs=1e-9)
    assert fit.converged and fit.weights.sum() == pytest.approx(1.0)


def test_one_component_is_the_sample_mean_and_biased_covariance():
    X = overlapping(250)
    fit = fit_mixture(X, 1, np.random.default_rng(0), n_init=2, reg_covar=1e-3)
    np.testing.assert_allclose(fit.weights, [1.0], rtol=1e-14)
    np.testing.assert_allclose(fit.means[0], X.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(fit.covariances[0], np.cov(X.T, bias=True) + 1e-3 * np.eye(2), rtol=1e-12)
    assert (fit.n_iter, fit.converged) == (2, True)  # the second E-step sees the same parameters
    assert fit.lower_bound == pytest.approx(score_samples(fit, X).mean(), rel=1e-12)
    assert not fit.labels.any()


def assert_identical(a: MixtureFit, b: MixtureFit) -> None:
    for name in ("weights", "means", "covariances", "labels"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert (a.lower_bound, a.converged, a.n_iter) == (b.lower_bound, b.converged, b.n_iter)


def test_the_same_seed_gives_the_same_bits_in_any_thread():
    X = overlapping(300)
    alone = fit_mixture(X, 6, np.random.default_rng(11), n_init=5)
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(lambda _: fit_mixture(X, 6, np.random.default_rng(11), n_init=5), range(4)))
    for fit in together:
        assert_identical(alone, fit)
    other = fit_mixture(X, 6, np.random.default_rng(12), n_init=5)
    assert not np.array_equal(alone.means, other.means)


@pytest.mark.parametrize(("distinct", "k"), [(3, 5), (1, 2)])
def test_duplicate_points_and_more_components_than_distinct_points(distinct, k):
    X = np.repeat(np.arange(2.0 * distinct).reshape(distinct, 2), 10, axis=0)
    fit = fit_mixture(X, k, np.random.default_rng(0), n_init=3)
    assert np.isfinite(fit.lower_bound) and np.all(np.isfinite(fit.means))
    assert np.all(np.linalg.eigvalsh(fit.covariances) > 0.0)
    assert fit.weights.sum() == pytest.approx(1.0) and np.all((fit.labels >= 0) & (fit.labels < k))
    assert np.all(np.isfinite(score_samples(fit, X)))
    assert np.isfinite(bic(fit, X)) and np.isfinite(aic(fit, X))


def test_a_covariance_that_is_not_positive_definite_fails_as_in_scikit_learn():
    X = np.ones((10, 2))
    with pytest.raises(ValueError, match="ill-defined empirical covariance"):
        GaussianMixture(n_components=1, reg_covar=0.0).fit(X)
    with pytest.raises(ValueError, match="ill-defined empirical covariance"):
        fit_mixture(X, 1, np.random.default_rng(0), reg_covar=0.0)


@pytest.mark.parametrize(("call", "message"), [
    (lambda X: fit_mixture(X, 0, np.random.default_rng(0)), "k: expected an integer in 1..n_samples = 20"),
    (lambda X: fit_mixture(X, 21, np.random.default_rng(0)), "k: expected"),
    (lambda X: fit_mixture(X, 2, np.random.default_rng(0), n_init=0), "n_init"),
    (lambda X: fit_mixture(X, 2, np.random.default_rng(0), max_iter=0), "max_iter"),
    (lambda X: fit_mixture(X, 2, np.random.default_rng(0), reg_covar=-1.0), "reg_covar"),
    (lambda X: fit_mixture(np.where(X > 1, np.nan, X), 2, np.random.default_rng(0)), "X: expected finite"),
    (lambda X: fit_mixture(X[:, 0], 2, np.random.default_rng(0)), r"X: expected an array of shape"),
    (lambda X: em_from(X, np.array([1.0, 0.0]), X[:2], np.stack([np.eye(2)] * 2)), "weights: expected positive"),
    (lambda X: em_from(X, np.array([1.0]), X[:1], -np.eye(2)[None]), "covariances: expected positive definite"),
    (lambda X: em_from(X, np.array([0.5, 0.5]), X[:2], np.eye(2)[None]), "weights, means, covariances"),
])
def test_bad_arguments_are_refused_with_a_fix(call, message):
    X = np.random.default_rng(0).normal(size=(20, 2))
    with pytest.raises(ValueError, match=message):
        call(X)
