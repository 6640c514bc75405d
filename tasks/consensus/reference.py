"""M3C's reference data sets and its statistics against them (John, Watson, Russ, Goldmann, Ehrenstein, Pitzalis,
Lewis & Barnes 2020, "M3C: Monte Carlo reference-based consensus clustering", Scientific Reports 10:1816).

M3C asks whether the consensus clustering of the data (Monti et al. 2003) is more stable than that of data with
no clusters but the same feature correlation, and so removes PAC's bias toward large k (Senbabaoglu et al.
2014). Everything here follows the authors' R package (``M3C`` 1.10, Bioconductor release 3.10/3.11, file
``R/M3C.R`` at the GitHub commit of February 2020, the month of the paper); line numbers below are of that file.

**The reference** (lines 133-167). Items are the rows of ``X`` (N samples), features its columns (d); M3C's
input is the transpose (features as rows).

- ``reverse-pca`` (the default, used when N <= d): ``prcomp(t(mydata))``, a PCA of the column-centred data,
  not scaled; the scores' standard deviations per component (``colSdColMeans``: divisor N - 1); each reference
  draws its N x N scores independently from N(0, sd_j) for component j (``rnorm(c*c, sd = sds)`` filled by row,
  so that column j has sd_j), rotates them back by the loadings and adds the column means. The reference is
  thus a Gaussian with the data's principal axes and per-component variances: the same covariance, no clusters.
- ``chol`` (forced when the samples outnumber the features, N > d, "this works when variables < samples"):
  the sample covariance of the features (divisor N - 1), or, when it is not positive definite
  (``matrixcalc::is.positive.definite``, eigenvalues below 1e-8 in modulus counted as zero), the shrinkage
  estimate of ``corpcor::cov.shrink`` (Schaefer & Strimmer 2005; Opgen-Rhein & Strimmer 2007); the reference
  is ``Z %*% chol(S)`` with Z an N x d matrix of standard normals: mean zero (the data's means are not added
  back, which a clustering by Euclidean distance does not see).

**The statistics** (lines 197-233, after the data and ``iters`` references have their PAC per k):

- RCSI_k = mean over references b of [log PAC_ref,b,k - log PAC_real,k], a data PAC of 0 replaced by 1e-4
  (line 203), and its standard error sd_b(...) / sqrt(B) (line 214; the vignette draws RCSI +- 1.96 SE). Before
  December 2019 (release 3.10) M3C took the log of the reference mean, log(mean_b PAC_ref,b,k) - log
  PAC_real,k, with 1e-7 as the floor: :func:`rcsi` gives both (``of="mean_log"`` / ``"log_mean"``).
- The Monte Carlo p-value (line 219): (#{b : PAC_ref,b,k < PAC_real,k} + 1) / (B + 1), the data's PAC
  unfloored and compared strictly.
- The beta p-value (lines 225-233, objective PAC): a beta distribution fitted to the B reference PACs by the
  method of moments (``estBetaParams``, lines 391-395: alpha = ((1 - mu) / var - 1 / mu) mu^2,
  beta = alpha (1 / mu - 1), mu the reference mean, var their variance with divisor B - 1), evaluated at the
  data's PAC: P(PAC_ref <= PAC_real), which reaches below the Monte Carlo bound 1 / (B + 1).
- With the entropy objective (the package's default since December 2019, :func:`consensus_entropy`) in place of
  PAC, the same RCSI and Monte Carlo p-value, and a normal distribution fitted to the references' entropies in
  place of the beta (lines 236-244, :func:`normal_p`).
- k̂ (line 360): the k of the largest RCSI (R's ``which.max``: the first of equal values), whatever the
  p-values. The vignette adds the test: "If none of the p values reach significance over a reasonable range of
  K (e.g. 10), then we accept the null hypothesis" K = 1, at alpha = 0.05 (the significance colour of the p-value
  plot, line 269), with the beta p-values it shows, and reads its example's maximum as one "the p value
  supports". Line 360 alone can thus print a k whose own p-value is above alpha; ordercube's default chooses
  among the significant k only (:func:`decision_curve`, :func:`m3c_choice`).

M3C's defaults: 25 references (``iters``; 100 before December 2019), 100 resamples of 80% of the samples for
the data and for each reference, PAM with Euclidean distance, PAC window (0.1, 0.9), k = 2 .. 10.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

# M3C's floor for a data PAC of 0 before taking its log (R/M3C.R line 203; 1e-7 before December 2019).
PAC_FLOOR = 1e-4
PAC_FLOOR_BEFORE_2019_12 = 1e-7
# matrixcalc::is.positive.definite's default tolerance on the eigenvalues.
PD_TOLERANCE = 1e-8
# The significance level of M3C's plots and vignette.
ALPHA = 0.05


def m3c_reference(X: FloatArray, rng: np.random.Generator, *,
                  method: Literal["auto", "reverse-pca", "chol"] = "auto") -> FloatArray:
    """One M3C reference data set: no clusters, the feature correlation of ``X``.

    Parameters
    ----------
    X : ndarray of shape (N, d)
        The data, items (samples) as rows.
    rng : numpy.random.Generator
        The reference's own stream (M3C seeds each reference apart: ``set.seed(i)``, R/M3C.R line 157).
    method : {"auto", "reverse-pca", "chol"}
        ``auto``: M3C's choice, ``chol`` when N > d (line 87-91), else ``reverse-pca``.

    Returns
    -------
    ndarray of shape (N, d)
        ``reverse-pca``: scores drawn from N(0, sd_j) per principal component j, rotated back, plus the data's
        column means. ``chol``: N draws from N(0, S), S the sample covariance (or its shrinkage estimate).
    """
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    if method == "auto":
        method = "chol" if n > d else "reverse-pca"
    if method == "reverse-pca":
        return _reverse_pca(X, rng)
    if method == "chol":
        return rng.standard_normal((n, d)) @ np.linalg.cholesky(_covariance(X)).T
    raise ValueError(f"method = {method!r}; expected one of ['auto', 'reverse-pca', 'chol']")


def _reverse_pca(X: FloatArray, rng: np.random.Generator) -> FloatArray:
    """``prcomp`` then ``rnorm`` per component then back (R/M3C.R lines 136-137, 161-163)."""
    n = X.shape[0]
    center = X.mean(axis=0)
    _, singular, loadings_t = np.linalg.svd(X - center, full_matrices=False)
    # The scores U S have mean 0, so colSdColMeans (divisor n - 1) is S / sqrt(n - 1).
    sds = singular / np.sqrt(n - 1)
    scores = rng.standard_normal((n, singular.size)) * sds
    return scores @ loadings_t + center


def _covariance(X: FloatArray) -> FloatArray:
    """The covariance M3C's ``chol`` reference factors: ``cov``, or ``cov.shrink`` when that is not positive
    definite (R/M3C.R lines 139-149)."""
    if X.shape[1] == 1:
        return np.atleast_2d(np.var(X, axis=0, ddof=1))
    S = np.cov(X, rowvar=False)
    eigenvalues = np.linalg.eigvalsh(S)
    eigenvalues[np.abs(eigenvalues) < PD_TOLERANCE] = 0.0
    if np.all(eigenvalues > 0):
        return S
    return shrink_covariance(X)


def shrink_covariance(X: FloatArray) -> FloatArray:
    """``corpcor::cov.shrink(X)`` with equal weights: the James-Stein-type shrinkage covariance of Schaefer &
    Strimmer (2005, Statistical Applications in Genetics and Molecular Biology 4:32, Table 1 target D) and
    Opgen-Rhein & Strimmer (2007, same journal 6:9): correlations shrunk toward 0, variances toward their median,
    each with its estimated optimal intensity (corpcor's ``C_corlambda`` and ``C_varlambda``).

    Parameters
    ----------
    X : ndarray of shape (N, d)

    Returns
    -------
    ndarray of shape (d, d)
        sqrt(v*_i) r*_ij sqrt(v*_j), r* = (1 - lambda) r (unit diagonal), v* = lambda_v median(v) + (1 - lambda_v) v.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    h1 = n / (n - 1)                 # 1 / (1 - sum w^2) with w = 1/n
    h3 = n**2 / (n - 1) ** 3         # h1^3 sum w^2
    centred = X - X.mean(axis=0)
    variances = h1 * (centred**2).mean(axis=0)
    variances[variances < np.finfo(np.float64).eps] = 0.0   # wt.moments
    # Variances toward their median.
    target = float(np.median(variances))
    squares = centred**2
    numerator = h3 * squares.var(axis=0).sum()
    denominator = ((h1 * squares.mean(axis=0) - target) ** 2).sum()
    lambda_var = 1.0 if denominator == 0 else min(1.0, numerator / denominator)
    shrunk_variances = lambda_var * target + (1 - lambda_var) * variances
    # Correlations toward 0 (a zero-variance feature is standardised to 0, as wt.scale does).
    scale = np.sqrt(variances)
    standardised = np.divide(centred, scale, out=np.zeros_like(centred), where=scale > 0)
    correlation = h1 * (standardised.T @ standardised) / n
    upper = np.triu_indices(X.shape[1], k=1)
    products = standardised[:, upper[0]] * standardised[:, upper[1]]
    numerator = h3 * products.var(axis=0).sum()
    denominator = ((h1 * products.mean(axis=0)) ** 2).sum()
    lambda_cor = 1.0 if denominator == 0 else min(1.0, numerator / denominator)
    shrunk = (1 - lambda_cor) * correlation
    np.fill_diagonal(shrunk, 1.0)
    sd = np.sqrt(shrunk_variances)
    return sd[:, None] * shrunk * sd[None, :]


def _log_differences(pac_data: FloatArray, pac_references: FloatArray, floor: float) -> FloatArray:
    """log PAC_ref,b,k - log PAC_real,k, shape (B, K); a PAC of 0 (data or reference) counts as ``floor``."""
    data = np.maximum(np.asarray(pac_data, dtype=np.float64), floor)
    references = np.maximum(np.asarray(pac_references, dtype=np.float64), floor)
    return np.log(references) - np.log(data)


def rcsi(pac_data: FloatArray, pac_references: FloatArray, *,
         of: Literal["mean_log", "log_mean"] = "mean_log", floor: float | None = None) -> FloatArray:
    """The relative cluster stability index per k (John et al. 2020; R/M3C.R lines 199-213).

    Parameters
    ----------
    pac_data : ndarray of shape (K,)
        PAC of the data's consensus matrix at each k.
    pac_references : ndarray of shape (B, K)
        PAC of each reference's consensus matrix at each k.
    of : {"mean_log", "log_mean"}
        ``mean_log`` (M3C since December 2019): mean_b log PAC_ref,b,k - log PAC_real,k. ``log_mean`` (M3C
        before): log(mean_b PAC_ref,b,k) - log PAC_real,k.
    floor : float, optional
        A PAC of 0 counts as this before the log: M3C's 1e-4 (``mean_log``) or 1e-7 (``log_mean``) by default.
        M3C floors only the data's PAC; a reference PAC of 0 (where M3C's RCSI would be -inf) is floored too.

    Returns
    -------
    ndarray of shape (K,)
        Larger: the data more stable than its references at that k.
    """
    references = np.asarray(pac_references, dtype=np.float64)
    if of == "mean_log":
        return _log_differences(pac_data, references, PAC_FLOOR if floor is None else floor).mean(axis=0)
    if of == "log_mean":
        floor = PAC_FLOOR_BEFORE_2019_12 if floor is None else floor
        data = np.maximum(np.asarray(pac_data, dtype=np.float64), floor)
        return np.log(np.maximum(references.mean(axis=0), floor)) - np.log(data)
    raise ValueError(f"of = {of!r}; expected one of ['mean_log', 'log_mean']")


def rcsi_se(pac_data: FloatArray, pac_references: FloatArray, *, floor: float = PAC_FLOOR) -> FloatArray:
    """The standard error of :func:`rcsi` (``mean_log``): sd_b(log PAC_ref,b,k - log PAC_real,k) / sqrt(B), the
    sd with divisor B - 1 (R/M3C.R line 214). NaN with fewer than two references.

    Returns
    -------
    ndarray of shape (K,)
    """
    differences = _log_differences(pac_data, pac_references, floor)
    count = differences.shape[0]
    if count < 2:
        return np.full(differences.shape[1], np.nan)
    return differences.std(axis=0, ddof=1) / np.sqrt(count)


def monte_carlo_p(pac_data: FloatArray, pac_references: FloatArray) -> FloatArray:
    """M3C's Monte Carlo p-value per k (R/M3C.R lines 217-220): (#{b : PAC_ref,b,k < PAC_real,k} + 1) / (B + 1).

    The +1 counts the data as one draw of the null, so the p-value lies in
    [1 / (B + 1), 1] and is never 0.

    Parameters
    ----------
    pac_data : ndarray of shape (K,)
    pac_references : ndarray of shape (B, K)

    Returns
    -------
    ndarray of shape (K,)
    """
    references = np.asarray(pac_references, dtype=np.float64)
    below = (references < np.asarray(pac_data, dtype=np.float64)[None, :]).sum(axis=0)
    return (below + 1.0) / (references.shape[0] + 1.0)


def beta_p(pac_data: FloatArray, pac_references: FloatArray) -> FloatArray:
    """M3C's beta p-value per k (R/M3C.R lines 225-233, ``estBetaParams`` lines 391-395): the CDF at the data's
    PAC of a beta distribution fitted to the references' PACs by the method of moments.

    alpha = ((1 - mu) / v - 1 / mu) mu^2, beta = alpha (1 / mu - 1), mu = mean_b PAC_ref,b,k, v their variance
    (divisor B - 1). NaN where the moments admit no beta distribution (v = 0, v >= mu (1 - mu), mu at 0 or 1),
    where R's ``pbeta`` gives NaN too.

    Returns
    -------
    ndarray of shape (K,)
    """
    references = np.asarray(pac_references, dtype=np.float64)
    data = np.asarray(pac_data, dtype=np.float64)
    mu = references.mean(axis=0)
    variance = references.var(axis=0, ddof=1) if references.shape[0] > 1 else np.full(mu.shape, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = ((1 - mu) / variance - 1 / mu) * mu**2
        b = a * (1 / mu - 1)
    # The beta CDF is the regularized incomplete beta function, as scipy.stats.beta.cdf computes it (the same bits),
    # without importing scipy.stats (0.25-1 s here); here, not at import: the criteria's registry loads no SciPy
    from scipy.special import betainc

    fitted = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
    out = np.full(mu.shape, np.nan)
    out[fitted] = betainc(a[fitted], b[fitted], np.clip(data[fitted], 0.0, 1.0))
    return out


def consensus_entropy(M: FloatArray) -> float:
    """M3C's entropy objective (R/M3C.R lines 891-903, after Zhao et al. 2010): -sum over pairs i < j of
    m log m + (1 - m) log(1 - m), m = M[i, j], pairs at exactly 0 or 1 (and pairs never drawn together, NaN)
    contributing nothing. The R package's default objective since December 2019 (``objective = "entropy"``); the
    paper's is PAC.

    Parameters
    ----------
    M : ndarray of shape (N, N)
        A consensus matrix.

    Returns
    -------
    float
    """
    M = np.asarray(M, dtype=np.float64)
    upper = M[np.triu_indices(M.shape[0], k=1)]
    inside = upper[(upper > 0) & (upper < 1)]
    return float(-(inside * np.log(inside) + (1 - inside) * np.log1p(-inside)).sum())


def entropy_from_values(values: FloatArray, counts: NDArray[np.int64]) -> float:
    """:func:`consensus_entropy` from the compact distribution of a consensus matrix's entries i < j (its distinct
    values and how many pairs hold each: ``ordercube.tasks.consensus.consensus_values``)."""
    values = np.asarray(values, dtype=np.float64)
    inside = (values > 0) & (values < 1)
    m, count = values[inside], np.asarray(counts)[inside]
    return float(-(count * (m * np.log(m) + (1 - m) * np.log1p(-m))).sum())


def normal_p(statistic_data: FloatArray, statistic_references: FloatArray) -> FloatArray:
    """M3C's p-value with the entropy objective (R/M3C.R lines 236-244): the normal CDF at the data's entropy, with
    the references' mean and standard deviation (divisor B - 1). With no spread, R's ``pnorm(x, m, 0)``: 1 where
    x >= m, else 0.

    Parameters
    ----------
    statistic_data : ndarray of shape (K,)
    statistic_references : ndarray of shape (B, K)

    Returns
    -------
    ndarray of shape (K,)
    """
    references = np.asarray(statistic_references, dtype=np.float64)
    data = np.asarray(statistic_data, dtype=np.float64)
    mean = references.mean(axis=0)
    sd = references.std(axis=0, ddof=1) if references.shape[0] > 1 else np.full(mean.shape, np.nan)
    from scipy.special import ndtr  # the normal CDF, as scipy.stats.norm.cdf computes it, without scipy.stats

    spread = sd > 0
    out = np.where(data >= mean, 1.0, 0.0)
    out[np.isnan(sd) | np.isnan(data)] = np.nan
    out[spread] = ndtr((data[spread] - mean[spread]) / sd[spread])
    return out


AMONG = ("significant", "all")


def decision_curve(rcsi_values: FloatArray, p_values: FloatArray | None, *, alpha: float = ALPHA,
                   among: str = "significant") -> FloatArray:
    """The RCSI at the k a choice may fall on, NaN elsewhere: k̂ is this curve's largest value.

    Parameters
    ----------
    rcsi_values, p_values : ndarray of shape (K,)
        ``p_values`` None: no test, every k may be chosen (R/M3C.R line 360, ``which.max(real$RCSI)``, the
        "optimal K" M3C prints whatever the p-values).
    alpha : float
    among : {"significant", "all"}
        ``significant``: only the k whose own p-value is below ``alpha`` (the k̂ is then significant itself, as
        the vignette reads its GBM example: "the RCSI reaches a maxima at K = 4, the p value supports this optimal
        K decision"); ``all``: every k once some k is significant (the vignette's test of K = 1 followed by line
        360's maximum, which can fall on a k whose own p-value is above ``alpha``).

    Returns
    -------
    ndarray of shape (K,)
        No value anywhere when no k may be chosen (the null hypothesis K = 1 kept).
    """
    rcsi_values = np.asarray(rcsi_values, dtype=np.float64)
    if p_values is None:
        return rcsi_values.copy()
    if among not in AMONG:
        raise ValueError(f"m3c: among = {among!r} is not one of {list(AMONG)}; e.g. among: significant")
    with np.errstate(invalid="ignore"):
        significant = np.asarray(p_values, dtype=np.float64) < alpha
    if among == "all":
        return rcsi_values.copy() if significant.any() else np.full(rcsi_values.shape, np.nan)
    return np.where(significant, rcsi_values, np.nan)


def m3c_choice(rcsi_values: FloatArray, p_values: FloatArray | None, ks: NDArray[np.int64] | list[int], *,
               alpha: float = ALPHA, among: str = "significant") -> int:
    """The k of the largest value of :func:`decision_curve` (the first of equal values, as R's ``which.max``), or 1
    (the null hypothesis K = 1 kept) when it has none.

    Parameters
    ----------
    rcsi_values : ndarray of shape (K,)
    p_values : ndarray of shape (K,) or None
        The p-values the test reads (M3C's vignette: the beta p-values); None: no test (M3C's line 360 alone).
    ks : sequence of int of length K
    alpha : float
    among : {"significant", "all"}
        :func:`decision_curve`'s.

    Returns
    -------
    int
        1 when no k may be chosen, else the argmax's k.
    """
    curve = decision_curve(rcsi_values, p_values, alpha=alpha, among=among)
    if not np.isfinite(curve).any():
        return 1
    return int(np.asarray(ks)[np.nanargmax(curve)])
