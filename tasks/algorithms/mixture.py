"""Gaussian mixtures fitted by EM (scikit-learn), labelled by their Bayes posterior.

Lange et al. (2002), Sec. 3: for a mixture model the natural predictor is the Bayes rule of the fitted model;
``ordercube.tasks.predictors.gaussian_posterior`` re-estimates that model from the labelled training half.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from sklearn.mixture import GaussianMixture


def fit_gaussian_mixture(
    X: NDArray[np.float64],
    k: int,
    rng: np.random.Generator,
    *,
    covariance_type: str = "full",
    n_init: int = 1,
    max_iter: int = 100,
    reg_covar: float = 1e-6,
) -> GaussianMixture:
    """A k-component Gaussian mixture fitted to ``X`` by EM (:class:`sklearn.mixture.GaussianMixture`).

    ``rng`` seeds scikit-learn's initialisation (k-means on ``X``), so the fit is reproducible per cell.
    """
    from sklearn.mixture import GaussianMixture  # here, not at the top: importing scikit-learn costs ~0.6 s

    model = GaussianMixture(n_components=k, covariance_type=covariance_type, n_init=n_init, max_iter=max_iter,
                            reg_covar=reg_covar, random_state=int(rng.integers(2**32 - 1)))
    return model.fit(X)


def gaussian_mixture_fit(X: NDArray[np.float64], k: int, rng: np.random.Generator,
                         **params: Any) -> tuple[NDArray[np.int64], GaussianMixture]:
    """The labels of :func:`gaussian_mixture` with the fitted mixture (its likelihood: Frank et al. 2011, eq. 6)."""
    model = fit_gaussian_mixture(X, k, rng, **params)
    return model.predict(X).astype(np.int64), model


def gaussian_mixture(X: NDArray[np.float64], k: int, rng: np.random.Generator, **params: Any) -> NDArray[np.int64]:
    """Hard labels (maximum posterior) of :func:`fit_gaussian_mixture` on ``X``.

    ``params``: ``covariance_type``, ``n_init``, ``max_iter``, ``reg_covar`` as in
    :class:`sklearn.mixture.GaussianMixture`.
    """
    return fit_gaussian_mixture(X, k, rng, **params).predict(X).astype(np.int64)
