"""Gaussian mixtures with full covariances fitted by EM (Dempster, Laird & Rubin 1977), compiled with numba.

The EM of :class:`sklearn.mixture.GaussianMixture` (``covariance_type='full'``, ``init_params='kmeans'``)
step for step: each restart starts from the hard partition of one k-means++-seeded Lloyd run (this project's
:func:`ordercube.tasks.algorithms.kmeans.kmeans` with ``n_init=1``, the restarts drawn in order from the caller's
Generator), turned into parameters by scikit-learn's M-step (``_estimate_gaussian_parameters``: counts
``resp.sum(0) + 10 * eps``, the initial weights ``counts / n``, ``reg_covar`` added to every covariance's
diagonal); then E-step, M-step, until the mean log-likelihood of the E-step changes by less than ``tol``
or ``max_iter`` iterations have run. The restart with the largest final lower bound is kept (the first of
equals), and the labels are the argmax of the responsibilities under the kept parameters. A covariance
that is not positive definite fails the fit with a :class:`ValueError`, as in scikit-learn.

Only the floating-point order of the sums differs (sequential loops here, BLAS there; the responsibilities
are ``exp(a - max) / sum`` rather than ``exp(a - logsumexp)``, which saves one exponential per entry): from
the same starting parameters the two agreed to ~1e-15 on every test case, same iteration counts and labels
(``tests/test_mixture_em.py`` asserts 1e-7). No randomness enters after the k-means initialisation and
nothing runs in parallel, so a fit is reproducible bit for bit from the Generator, whatever the number of
threads; the kernels release the GIL. d = 2 has unrolled kernels; any d >= 1 runs the general loops.

Measured on this project's 2-core machine (``benchmarks/bench_mixture_em.py``, best of 5, one thread for
both; 2-D, three Gaussians of sd 0.6 times the circumradius, ``n_init=5``), ms per fit, this module vs
``GaussianMixture(n_init=5)``: n = 250: k = 1: 0.28 vs 5.4, k = 3: 0.57 vs 12.2, k = 6: 2.0 vs 35,
k = 10: 3.9 vs 51; n = 500: k = 1: 0.41 vs 6.2, k = 3: 1.1 vs 15, k = 6: 2.4 vs 32, k = 10: 4.6 vs 52
(11 to 22 times faster; at sd 0.3 and 1.5 likewise). The five k-means initialisations are a quarter (k = 10) to
two thirds (k = 1) of it; an EM iteration at n = 500, k = 10 takes ~65 us, most of it the n k exponentials.
60,000 fits over n in (250, 500), k = 1..10 on 2 cores: ~1.0 min (scikit-learn, one thread: ~15 min; with
its default threads it is slower still, 40 and 77 ms per fit at n = 500, k = 1 and 10).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit
from numpy.typing import NDArray

from ordercube.tasks.algorithms.kmeans import kmeans

_EPS = float(np.finfo(np.float64).eps)
_LOG_2PI = math.log(2.0 * math.pi)
_FAILED_MESSAGE = (
    "Fitting the mixture model failed because some components have ill-defined empirical covariance (for "
    "instance caused by singleton or collapsed samples). Try to decrease the number of components, increase "
    "reg_covar, or scale the input data."
)


@dataclass(frozen=True)
class MixtureFit:
    """A Gaussian mixture with full covariances, as fitted by :func:`fit_mixture` or :func:`em_from`.

    Attributes
    ----------
    weights : ndarray of shape (k,)
        Mixing proportions.
    means : ndarray of shape (k, n_features)
    covariances : ndarray of shape (k, n_features, n_features)
        Full covariance matrices, ``reg_covar`` included.
    lower_bound : float
        Mean log-likelihood per point of the last E-step of the kept restart (scikit-learn's
        ``lower_bound_``: computed with the parameters before the last M-step).
    converged : bool
        Whether the kept restart stopped because the lower bound changed by less than ``tol``.
    n_iter : int
        EM iterations of the kept restart.
    labels : ndarray of shape (n_samples,)
        Component of largest responsibility of each fitted point under the returned parameters (the lowest
        index on ties).
    """

    weights: NDArray[np.float64]
    means: NDArray[np.float64]
    covariances: NDArray[np.float64]
    lower_bound: float
    converged: bool
    n_iter: int
    labels: NDArray[np.int64]

    # scikit-learn's names, so that a criterion reads either mixture the same way (Frank et al. 2011, eq. 6, BIC, AIC)
    def score_samples(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        return score_samples(self, X)

    def bic(self, X: NDArray[np.float64]) -> float:
        return bic(self, X)

    def aic(self, X: NDArray[np.float64]) -> float:
        return aic(self, X)


@njit(cache=True, nogil=True)
def _precision_cholesky(covariances: NDArray[np.float64], precisions_chol: NDArray[np.float64]) -> bool:
    """Fill ``precisions_chol`` (k, d, d) with the upper-triangular ``inverse(cholesky(cov)).T`` of every
    covariance; False when one of them is not positive definite."""
    k, d = covariances.shape[0], covariances.shape[1]
    lower = np.zeros((d, d))
    for c in range(k):
        for j in range(d):
            pivot = covariances[c, j, j]
            for m in range(j):
                pivot -= lower[j, m] * lower[j, m]
            if not pivot > 0.0:  # also NaN
                return False
            lower[j, j] = math.sqrt(pivot)
            for i in range(j + 1, d):
                value = covariances[c, i, j]
                for m in range(j):
                    value -= lower[i, m] * lower[j, m]
                lower[i, j] = value / lower[j, j]
        # column `col` of inverse(lower) is row `col` of the precision's Cholesky factor
        for col in range(d):
            for i in range(col):
                precisions_chol[c, col, i] = 0.0
            precisions_chol[c, col, col] = 1.0 / lower[col, col]
            for i in range(col + 1, d):
                value = 0.0
                for m in range(col, i):
                    value -= lower[i, m] * precisions_chol[c, col, m]
                precisions_chol[c, col, i] = value / lower[i, i]
    return True


@njit(cache=True, nogil=True)
def _weighted_log_prob(X: NDArray[np.float64], weights: NDArray[np.float64], means: NDArray[np.float64],
                       precisions_chol: NDArray[np.float64], out: NDArray[np.float64]) -> None:
    """``log weights[c] + log N(X[i] | means[c], covariances[c])`` into ``out`` (n, k)."""
    n, d = X.shape
    k = means.shape[0]
    offset = np.empty(k)
    for c in range(k):
        log_det = 0.0
        for j in range(d):
            log_det += math.log(precisions_chol[c, j, j])
        offset[c] = -0.5 * d * _LOG_2PI + log_det + math.log(weights[c])
    if d == 2:  # unrolled: the experiments' case
        for c in range(k):
            m0, m1 = means[c, 0], means[c, 1]
            p00, p01, p11 = precisions_chol[c, 0, 0], precisions_chol[c, 0, 1], precisions_chol[c, 1, 1]
            for i in range(n):
                diff0, diff1 = X[i, 0] - m0, X[i, 1] - m1
                y0, y1 = diff0 * p00, diff0 * p01 + diff1 * p11
                out[i, c] = offset[c] - 0.5 * (y0 * y0 + y1 * y1)
        return
    diff = np.empty(d)
    for i in range(n):
        for c in range(k):
            for f in range(d):
                diff[f] = X[i, f] - means[c, f]
            squared = 0.0
            for j in range(d):
                y = 0.0
                for m in range(j + 1):  # the factor is upper triangular
                    y += diff[m] * precisions_chol[c, m, j]
                squared += y * y
            out[i, c] = offset[c] - 0.5 * squared


@njit(cache=True, nogil=True)
def _row_logsumexp(values: NDArray[np.float64], i: int) -> tuple[float, float]:
    """The largest entry of row ``i`` and the log-sum-exp of the row."""
    largest = -np.inf
    for c in range(values.shape[1]):
        largest = max(largest, values[i, c])
    if not np.isfinite(largest):
        return largest, largest
    total = 0.0
    for c in range(values.shape[1]):
        total += math.exp(values[i, c] - largest)
    return largest, largest + math.log(total)


@njit(cache=True, nogil=True)
def _e_step(X: NDArray[np.float64], weights: NDArray[np.float64], means: NDArray[np.float64],
            precisions_chol: NDArray[np.float64], resp: NDArray[np.float64]) -> float:
    """Responsibilities into ``resp`` (n, k); returns the mean log-likelihood per point."""
    _weighted_log_prob(X, weights, means, precisions_chol, resp)
    n, k = resp.shape
    total = 0.0
    for i in range(n):
        largest = -np.inf
        for c in range(k):
            largest = max(largest, resp[i, c])
        row = 0.0
        for c in range(k):
            resp[i, c] = math.exp(resp[i, c] - largest)
            row += resp[i, c]
        for c in range(k):
            resp[i, c] /= row
        total += largest + math.log(row)
    return total / n


@njit(cache=True, nogil=True)
def _m_step(X: NDArray[np.float64], resp: NDArray[np.float64], reg_covar: float, weights: NDArray[np.float64],
            means: NDArray[np.float64], covariances: NDArray[np.float64], weights_by_n: bool) -> None:
    """scikit-learn's ``_estimate_gaussian_parameters`` (full) into ``weights``, ``means``, ``covariances``.

    The weights are the counts over n (``weights_by_n``, the initialisation) or over their sum (an M-step).
    """
    n, d = X.shape
    k = resp.shape[1]
    counts = np.zeros(k)
    means[:] = 0.0
    for i in range(n):
        for c in range(k):
            r = resp[i, c]
            counts[c] += r
            for f in range(d):
                means[c, f] += r * X[i, f]
    for c in range(k):
        counts[c] += 10.0 * _EPS
        for f in range(d):
            means[c, f] /= counts[c]
    covariances[:] = 0.0
    if d == 2:  # unrolled: the experiments' case
        for c in range(k):
            m0, m1 = means[c, 0], means[c, 1]
            s00 = s10 = s11 = 0.0
            for i in range(n):
                diff0, diff1 = X[i, 0] - m0, X[i, 1] - m1
                weighted0, weighted1 = resp[i, c] * diff0, resp[i, c] * diff1
                s00 += weighted0 * diff0
                s10 += weighted1 * diff0
                s11 += weighted1 * diff1
            covariances[c, 0, 0], covariances[c, 1, 0], covariances[c, 1, 1] = s00, s10, s11
    else:
        diff = np.empty(d)
        for i in range(n):
            for c in range(k):
                r = resp[i, c]
                for f in range(d):
                    diff[f] = X[i, f] - means[c, f]
                for a in range(d):
                    weighted = r * diff[a]
                    for b in range(a + 1):
                        covariances[c, a, b] += weighted * diff[b]
    total = 0.0
    for c in range(k):
        total += counts[c]
    for c in range(k):
        for a in range(d):
            for b in range(a + 1):
                covariances[c, a, b] /= counts[c]
                covariances[c, b, a] = covariances[c, a, b]
            covariances[c, a, a] += reg_covar
        weights[c] = counts[c] / (n if weights_by_n else total)


@njit(cache=True, nogil=True)
def _em(X: NDArray[np.float64], weights: NDArray[np.float64], means: NDArray[np.float64],
        covariances: NDArray[np.float64], precisions_chol: NDArray[np.float64], resp: NDArray[np.float64],
        max_iter: int, tol: float, reg_covar: float) -> tuple[float, bool, int, bool]:
    """EM iterations in place from the given parameters (``precisions_chol`` matching ``covariances``).

    Returns the lower bound, whether it converged, the iterations run and False if a covariance failed.
    """
    lower_bound = -np.inf
    for n_iter in range(1, max_iter + 1):
        previous = lower_bound
        lower_bound = _e_step(X, weights, means, precisions_chol, resp)
        _m_step(X, resp, reg_covar, weights, means, covariances, False)
        if not _precision_cholesky(covariances, precisions_chol):
            return lower_bound, False, n_iter, False
        if abs(lower_bound - previous) < tol:
            return lower_bound, True, n_iter, True
    return lower_bound, False, max_iter, True


@njit(cache=True, nogil=True)
def _labels(X: NDArray[np.float64], weights: NDArray[np.float64], means: NDArray[np.float64],
            precisions_chol: NDArray[np.float64], labels: NDArray[np.int64]) -> None:
    """argmax of the log-responsibilities (scikit-learn's final E-step), the lowest index on ties."""
    n, k = X.shape[0], means.shape[0]
    log_prob = np.empty((n, k))
    _weighted_log_prob(X, weights, means, precisions_chol, log_prob)
    for i in range(n):
        _, norm = _row_logsumexp(log_prob, i)
        best, chosen = -np.inf, 0
        for c in range(k):
            value = log_prob[i, c] - norm
            if value > best:
                best, chosen = value, c
        labels[i] = chosen


@njit(cache=True, nogil=True)
def _fit_restarts(X: NDArray[np.float64], partitions: NDArray[np.int64], k: int, max_iter: int, tol: float,
                  reg_covar: float, weights: NDArray[np.float64], means: NDArray[np.float64],
                  covariances: NDArray[np.float64], labels: NDArray[np.int64]) -> tuple[float, bool, int, bool]:
    """EM from every hard partition (n_init, n) in order; the best restart into the output arrays."""
    n, d = X.shape
    resp = np.empty((n, k))
    w, mu, cov = np.empty(k), np.empty((k, d)), np.empty((k, d, d))
    chol = np.empty((k, d, d))
    best_bound, best_converged, best_iter = -np.inf, False, 0
    for r in range(partitions.shape[0]):
        resp[:] = 0.0
        for i in range(n):
            resp[i, partitions[r, i]] = 1.0
        _m_step(X, resp, reg_covar, w, mu, cov, True)
        if not _precision_cholesky(cov, chol):
            return -np.inf, False, 0, False
        bound, converged, n_iter, ok = _em(X, w, mu, cov, chol, resp, max_iter, tol, reg_covar)
        if not ok:
            return bound, False, n_iter, False
        if bound > best_bound or best_bound == -np.inf:
            best_bound, best_converged, best_iter = bound, converged, n_iter
            weights[:] = w
            means[:] = mu
            covariances[:] = cov
    _precision_cholesky(covariances, chol)
    _labels(X, weights, means, chol, labels)
    return best_bound, best_converged, best_iter, True


@njit(cache=True, nogil=True)
def _score_samples(X: NDArray[np.float64], weights: NDArray[np.float64], means: NDArray[np.float64],
                   covariances: NDArray[np.float64], out: NDArray[np.float64]) -> bool:
    k, d = means.shape
    chol = np.empty((k, d, d))
    if not _precision_cholesky(covariances, chol):
        return False
    log_prob = np.empty((X.shape[0], k))
    _weighted_log_prob(X, weights, means, chol, log_prob)
    for i in range(X.shape[0]):
        out[i] = _row_logsumexp(log_prob, i)[1]
    return True


def _points(X: NDArray[np.float64], name: str = "X") -> NDArray[np.float64]:
    array = np.ascontiguousarray(X, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise ValueError(f"{name}: expected an array of shape (n_samples, n_features) with n_samples, n_features >= 1, "
                         f"got shape {array.shape}; pass one row per point")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: expected finite values, got {int(np.sum(~np.isfinite(array)))} NaN or infinite; "
                         "drop or impute them first")
    return array


def _check_em_options(max_iter: int, tol: float, reg_covar: float) -> None:
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValueError(f"max_iter: expected an integer >= 1, got {max_iter!r}; give at least one EM iteration")
    if not tol >= 0.0:
        raise ValueError(f"tol: expected a number >= 0, got {tol!r}; use 1e-3 as scikit-learn does")
    if not reg_covar >= 0.0:
        raise ValueError(f"reg_covar: expected a number >= 0, got {reg_covar!r}; use 1e-6 as scikit-learn does")


def fit_mixture(
    X: NDArray[np.float64], k: int, rng: np.random.Generator, *, n_init: int = 1, max_iter: int = 100,
    tol: float = 1e-3, reg_covar: float = 1e-6,
) -> MixtureFit:
    """The best of ``n_init`` EM runs of a ``k``-component full-covariance Gaussian mixture on ``X``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    k : int
        Number of components, 1 <= k <= n_samples.
    rng : numpy.random.Generator
        Draws the k-means initialisation of every restart, in order (the only randomness).
    n_init : int
        Restarts; the one with the largest final lower bound is kept (the first of equals).
    max_iter : int
        EM iterations per restart, >= 1.
    tol : float
        Convergence threshold on the change of the mean log-likelihood per point.
    reg_covar : float
        Added to the diagonal of every covariance.

    Returns
    -------
    MixtureFit

    Raises
    ------
    ValueError
        On invalid arguments, or when a covariance is not positive definite (as scikit-learn).
    """
    X = _points(X)
    if int(k) != k or not 1 <= k <= X.shape[0]:
        raise ValueError(f"k: expected an integer in 1..n_samples = {X.shape[0]}, got {k!r}; lower k or add points")
    if int(n_init) != n_init or n_init < 1:
        raise ValueError(f"n_init: expected an integer >= 1, got {n_init!r}; use 1 for a single EM run")
    _check_em_options(max_iter, tol, reg_covar)
    k = int(k)
    partitions = np.empty((int(n_init), X.shape[0]), dtype=np.int64)
    for r in range(int(n_init)):  # every draw from rng first: EM itself needs none
        partitions[r] = kmeans(X, k, rng, n_init=1).labels
    d = X.shape[1]
    weights, means, covariances = np.empty(k), np.empty((k, d)), np.empty((k, d, d))
    labels = np.empty(X.shape[0], dtype=np.int64)
    bound, converged, n_iter, ok = _fit_restarts(X, partitions, k, int(max_iter), float(tol), float(reg_covar),
                                                 weights, means, covariances, labels)
    if not ok:
        raise ValueError(_FAILED_MESSAGE)
    return MixtureFit(weights=weights, means=means, covariances=covariances, lower_bound=float(bound),
                      converged=bool(converged), n_iter=int(n_iter), labels=labels)


def em_from(
    X: NDArray[np.float64], weights: NDArray[np.float64], means: NDArray[np.float64],
    covariances: NDArray[np.float64], *, max_iter: int = 100, tol: float = 1e-3, reg_covar: float = 1e-6,
) -> MixtureFit:
    """EM iterations on ``X`` from the given parameters, one run (the inner loop of :func:`fit_mixture`).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    weights : ndarray of shape (k,)
        Positive.
    means : ndarray of shape (k, n_features)
    covariances : ndarray of shape (k, n_features, n_features)
        Positive definite.
    max_iter, tol, reg_covar
        As in :func:`fit_mixture`.

    Returns
    -------
    MixtureFit
    """
    X = _points(X)
    _check_em_options(max_iter, tol, reg_covar)
    w = np.array(weights, dtype=np.float64)
    mu = np.array(means, dtype=np.float64, order="C")
    cov = np.array(covariances, dtype=np.float64, order="C")
    k, d = mu.shape[0], X.shape[1]
    if w.shape != (k,) or mu.shape != (k, d) or cov.shape != (k, d, d):
        raise ValueError(f"weights, means, covariances: expected shapes ({k},), ({k}, {d}), ({k}, {d}, {d}), got "
                         f"{w.shape}, {mu.shape}, {cov.shape}; give one weight, mean and covariance per component")
    if not np.all(w > 0.0):
        raise ValueError(f"weights: expected positive mixing proportions, got {w.tolist()}; give every component some weight")
    chol = np.empty((k, d, d))
    if not _precision_cholesky(cov, chol):
        raise ValueError("covariances: expected positive definite matrices; add reg_covar to their diagonal")
    bound, converged, n_iter, ok = _em(X, w, mu, cov, chol, np.empty((X.shape[0], k)), int(max_iter), float(tol),
                                       float(reg_covar))
    if not ok:
        raise ValueError(_FAILED_MESSAGE)
    labels = np.empty(X.shape[0], dtype=np.int64)
    _labels(X, w, mu, chol, labels)
    return MixtureFit(weights=w, means=mu, covariances=cov, lower_bound=float(bound), converged=bool(converged),
                      n_iter=int(n_iter), labels=labels)


def score_samples(fit: MixtureFit, X: NDArray[np.float64]) -> NDArray[np.float64]:
    """Log-likelihood of every row of ``X`` (n_samples, n_features) under ``fit``, shape (n_samples,).

    The log-sum-exp over components is taken after subtracting each row's largest term.
    """
    X = _points(X)
    if X.shape[1] != fit.means.shape[1]:
        raise ValueError(f"X: expected {fit.means.shape[1]} features (as the fitted mixture), got {X.shape[1]}; "
                         "score points of the space the mixture was fitted in")
    out = np.empty(X.shape[0])
    if not _score_samples(X, fit.weights, np.ascontiguousarray(fit.means), np.ascontiguousarray(fit.covariances), out):
        raise ValueError("fit.covariances: expected positive definite matrices; fit the mixture again")
    return out


def n_parameters(fit: MixtureFit) -> int:
    """Free parameters of a full-covariance mixture: ``(k - 1) + k * d + k * d * (d + 1) / 2``."""
    k, d = fit.means.shape
    return int(k - 1 + k * d + k * d * (d + 1) // 2)


def bic(fit: MixtureFit, X: NDArray[np.float64]) -> float:
    """Bayesian information criterion on ``X`` (n_samples, n_features): ``-2 log L + p log n`` (lower is better)."""
    return float(-2.0 * score_samples(fit, X).mean() * X.shape[0] + n_parameters(fit) * math.log(X.shape[0]))


def aic(fit: MixtureFit, X: NDArray[np.float64]) -> float:
    """Akaike information criterion on ``X`` (n_samples, n_features): ``-2 log L + 2 p`` (lower is better)."""
    return float(-2.0 * score_samples(fit, X).mean() * X.shape[0] + 2 * n_parameters(fit))


def mixture_em_fit(X: NDArray[np.float64], k: int, rng: np.random.Generator, *, n_init: int = 1, max_iter: int = 100,
                   tol: float = 1e-3, reg_covar: float = 1e-6) -> tuple[NDArray[np.int64], MixtureFit]:
    """The registry's ``fit`` for ``gaussian_mixture_em``: :func:`fit_mixture`'s labels and the mixture."""
    fit = fit_mixture(X, k, rng, n_init=n_init, max_iter=max_iter, tol=tol, reg_covar=reg_covar)
    return fit.labels, fit


def mixture_em_labels(X: NDArray[np.float64], k: int, rng: np.random.Generator, *, n_init: int = 1,
                      max_iter: int = 100, tol: float = 1e-3, reg_covar: float = 1e-6) -> NDArray[np.int64]:
    """The registry's ``cluster`` for ``gaussian_mixture_em``: the labels of :func:`fit_mixture`."""
    return fit_mixture(X, k, rng, n_init=n_init, max_iter=max_iter, tol=tol, reg_covar=reg_covar).labels
