"""BIC and AIC of the Gaussian mixture, on each trial's whole sample (Frank et al. 2011, Sec. 3, compare MTC with both).

For a mixture with k components fitted by EM to the trial's n points, with maximised log-likelihood
log L and p free parameters (scikit-learn's count for the covariance type):

    BIC(k) = -2 log L + p log n   (Schwarz),      AIC(k) = -2 log L + 2 p   (Akaike),

both decided by the smallest value. One EM fit per (trial, k) serves both criteria; its randomness is
the method's stream for the whole sample, so the fit is the same whichever of the two is computed. The mixture is
the method's: scikit-learn's EM (``gaussian_mixture``) or the compiled one (``gaussian_mixture_em``).
"""

from __future__ import annotations

from ordercube.tasks.algorithms.mixture import fit_gaussian_mixture
from ordercube.tasks.criteria.base import Criterion, TrialSample


MIXTURES = ("gaussian_mixture", "gaussian_mixture_em")  # scikit-learn's EM, and the compiled one


def _mixtures(sample: TrialSample) -> dict:
    if sample.algorithm == "gaussian_mixture_em":
        from ordercube.tasks.algorithms.mixture_em import fit_mixture as fitter
    else:
        fitter = fit_gaussian_mixture

    def fit() -> dict:
        return {k: fitter(sample.X, k, sample.fit_rng(k, (3, 0, 0, 0)), **sample.params) for k in sample.ks}

    return sample.cached("gaussian_mixture", fit)


def bic(sample: TrialSample) -> dict[str, dict[int, float]]:
    """BIC(k) of the mixture fitted to the trial's sample, for every k of the block."""
    return {"bic": {k: float(model.bic(sample.X)) for k, model in _mixtures(sample).items()}}


def aic(sample: TrialSample) -> dict[str, dict[int, float]]:
    """AIC(k) of the mixture fitted to the trial's sample, for every k of the block."""
    return {"aic": {k: float(model.aic(sample.X)) for k, model in _mixtures(sample).items()}}


BIC = Criterion(name="bic", citation="Schwarz 1978", min_k=1, evaluate_trial=bic, algorithms=MIXTURES, extra_fits=lambda options: 1.0,
                shares_fits="gaussian_mixture",
                description="Bayesian information criterion of the Gaussian mixture fitted to the trial's sample")
AIC = Criterion(name="aic", citation="Akaike 1974", min_k=1, evaluate_trial=aic, algorithms=MIXTURES, extra_fits=lambda options: 1.0,
                shares_fits="gaussian_mixture",
                description="Akaike information criterion of the Gaussian mixture fitted to the trial's sample")
