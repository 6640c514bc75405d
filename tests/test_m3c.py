"""M3C (John et al. 2020): its reference data sets, RCSI, p-values and decision, against values worked out by hand
and against data with and without clusters."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ordercube.tasks.algorithms.kmeans import kmeans_labels
from ordercube.tasks.consensus import consensus_values
from ordercube.tasks.consensus.reference import (
    beta_p, consensus_entropy, entropy_from_values, m3c_choice, m3c_reference, monte_carlo_p, normal_p, rcsi, rcsi_se,
    shrink_covariance,
)
from ordercube.tasks.criteria import CRITERIA, VARIABLES
from ordercube.tasks.criteria.base import Clusterings
from ordercube.tasks.criteria.rules import choose_index
from ordercube.tasks.params import ParamError


def _anisotropic(rng: np.random.Generator, n: int, d: int, mean: float = 0.0) -> np.ndarray:
    """Gaussian rows with correlated features of very unequal variances."""
    mixing = rng.normal(size=(d, d)) * np.linspace(3.0, 0.2, d)[:, None]
    return mean + rng.normal(size=(n, d)) @ mixing


def _moments(draw, copies: int) -> tuple[np.ndarray, np.ndarray]:
    """The mean over ``copies`` references of their column means and of their sample covariance (divisor N - 1):
    unbiased for the mean and covariance they are drawn with."""
    references = [draw() for _ in range(copies)]
    return (sum(reference.mean(axis=0) for reference in references) / copies,
            sum(np.cov(reference, rowvar=False) for reference in references) / copies)


# --- the reference keeps the feature correlation ------------------------------------------------------------------

def test_reverse_pca_reference_has_the_data_principal_axes_and_variances():
    """N <= d: M3C's reverse PCA. A reference's rows are i.i.d. N(mean, V diag(sd^2) V'), which is the data's sample
    covariance; in the data's principal basis, the references' covariance is diagonal with the data's per-component
    variances. 400 references of 30 rows: the relative standard error of a variance is about sqrt(2 / (400 x 29))
    = 1.3%, of a correlation about 1 / sqrt(400 x 29) = 0.009 (we allow 6% and 0.05: over 4 SE, and the
    largest of 406 off-diagonal pairs)."""
    rng = np.random.default_rng(20200213)
    X = _anisotropic(rng, 30, 50, mean=7.0)
    n = X.shape[0]
    centred = X - X.mean(axis=0)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    axes = vt[: n - 1].T                       # the last of N components carries no variance after centring
    variances = singular[: n - 1] ** 2 / (n - 1)
    draws = np.random.default_rng(1)
    copies = 400
    mean, covariance = _moments(lambda: m3c_reference(X, draws), copies)
    in_basis = axes.T @ covariance @ axes
    assert np.allclose(np.diag(in_basis) / variances, 1.0, atol=0.06)
    correlation = in_basis / np.sqrt(np.outer(np.diag(in_basis), np.diag(in_basis)))
    assert np.max(np.abs(correlation - np.eye(n - 1))) < 0.05
    # Nothing outside the data's span: the covariance is the data's, not the data's plus noise.
    assert np.linalg.norm(covariance - axes @ in_basis @ axes.T) < 1e-8 * np.linalg.norm(covariance)
    # Centred on the data's column means (prcomp's center, added back): within 4 standard errors per feature.
    standard_error = np.sqrt(np.diag(np.cov(X, rowvar=False)) / (copies * n))
    assert (np.abs(mean - X.mean(axis=0)) < 4 * standard_error).all()


def test_cholesky_reference_has_the_data_covariance_and_mean_zero():
    """N > d: M3C switches to Z chol(S): rows i.i.d. N(0, S), S the data's sample covariance; the data's mean is not
    added back (R/M3C.R line 165). 300 references of 200 rows: the mean covariance within 2% of S's scale."""
    rng = np.random.default_rng(7)
    X = _anisotropic(rng, 200, 6, mean=5.0)
    S = np.cov(X, rowvar=False)
    draws = np.random.default_rng(3)
    mean, covariance = _moments(lambda: m3c_reference(X, draws), 300)
    scale = np.sqrt(np.outer(np.diag(S), np.diag(S)))
    assert np.max(np.abs(covariance - S) / scale) < 0.02
    assert (np.abs(mean) < 4 * np.sqrt(np.diag(S) / (300 * 200))).all()
    assert (np.abs(X.mean(axis=0)) > 20 * np.sqrt(np.diag(S) / (300 * 200))).all()   # the data's mean is far off


def test_the_reference_method_follows_m3c_switch_and_can_be_forced():
    rng = np.random.default_rng(11)
    wide, tall = rng.normal(size=(10, 12)), rng.normal(size=(12, 10))
    for X in (wide, tall):
        chosen = "chol" if X.shape[0] > X.shape[1] else "reverse-pca"
        assert np.array_equal(m3c_reference(X, np.random.default_rng(4)),
                              m3c_reference(X, np.random.default_rng(4), method=chosen))
    other = m3c_reference(tall, np.random.default_rng(4), method="reverse-pca")
    assert not np.allclose(other, m3c_reference(tall, np.random.default_rng(4)))
    with pytest.raises(ValueError, match="method"):
        m3c_reference(tall, rng, method="pca")


def _cov_shrink_by_loops(X: np.ndarray) -> np.ndarray:
    """corpcor's cov.shrink with equal weights, written as its C code loops (src/lambda.c: C_corlambda,
    C_varlambda; R/shrink.internal.R: pvt.svar, pvt.scor), one pair and one variable at a time."""
    n, d = X.shape
    w = np.full(n, 1.0 / n)
    h1 = 1.0 / (1.0 - np.sum(w * w))
    h3 = h1**3 * np.sum(w * w)
    xc = X - X.mean(axis=0)
    v = h1 * (np.sum(w[:, None] * X**2, axis=0) - np.sum(w[:, None] * X, axis=0) ** 2)
    v[v < np.finfo(float).eps] = 0.0
    target = np.median(v)
    suma = sumb = 0.0
    for k in range(d):
        z = xc[:, k] ** 2
        mean = np.sum(w * z)
        suma += h3 * np.sum(w * (z - mean) ** 2)
        sumb += (h1 * mean - target) ** 2
    lambda_var = 1.0 if sumb == 0 else min(1.0, suma / sumb)
    vs = lambda_var * target + (1 - lambda_var) * v
    xs = np.zeros_like(xc)
    for k in range(d):
        if v[k] > 0:
            xs[:, k] = xc[:, k] / math.sqrt(v[k])
    suma = sumb = 0.0
    for k in range(d - 1):
        for m in range(k + 1, d):
            z = xs[:, k] * xs[:, m]
            mean = np.sum(w * z)
            suma += h3 * np.sum(w * (z - mean) ** 2)
            sumb += (mean * h1) ** 2
    lam = 1.0 if sumb == 0 else min(1.0, suma / sumb)
    r = (1 - lam) * h1 * (xs.T @ (w[:, None] * xs))
    np.fill_diagonal(r, 1.0)
    sc = np.sqrt(vs)
    return np.outer(sc, sc) * r


def test_a_singular_covariance_is_shrunk_as_corpcor_does():
    """A repeated feature makes S singular: M3C then factors corpcor's cov.shrink (R/M3C.R lines 139-146)."""
    rng = np.random.default_rng(5)
    X = _anisotropic(rng, 40, 5)
    X = np.column_stack([X, X[:, 0], np.full(40, 3.0)])   # a copy of a feature and a constant one
    expected = _cov_shrink_by_loops(X)
    assert np.allclose(shrink_covariance(X), expected, rtol=1e-12, atol=1e-12)
    assert np.linalg.eigvalsh(expected).min() > 0
    S = np.cov(X, rowvar=False)
    assert not np.allclose(expected, S)                      # it did shrink
    draws = np.random.default_rng(6)
    _, covariance = _moments(lambda: m3c_reference(X, draws), 400)
    scale = np.sqrt(np.outer(np.diag(expected), np.diag(expected)))
    assert np.max(np.abs(covariance - expected) / scale) < 0.05


def test_each_reference_differs_and_is_reproducible_from_its_generator():
    X = _anisotropic(np.random.default_rng(8), 20, 30)
    for X_ in (X, X[:, :8]):                                # reverse PCA, then Cholesky
        first = m3c_reference(X_, np.random.default_rng([9, 1]))
        assert np.array_equal(first, m3c_reference(X_, np.random.default_rng([9, 1])))
        assert not np.allclose(first, m3c_reference(X_, np.random.default_rng([9, 2])))
        stream = np.random.default_rng(10)
        assert not np.allclose(m3c_reference(X_, stream), m3c_reference(X_, stream))


# --- RCSI and the p-values, by hand --------------------------------------------------------------------------------

PAC_DATA = np.array([0.2, 0.05, 0.0])
PAC_REFERENCES = np.array([[0.3, 0.10, 0.05],
                           [0.25, 0.2, 0.04],
                           [0.1, 0.15, 0.02]])


def test_rcsi_is_the_mean_log_ratio_of_reference_to_data_pac():
    expected = [
        (math.log(0.3 / 0.2) + math.log(0.25 / 0.2) + math.log(0.1 / 0.2)) / 3,
        (math.log(0.10 / 0.05) + math.log(0.2 / 0.05) + math.log(0.15 / 0.05)) / 3,
        # a data PAC of 0 counts as 1e-4 (R/M3C.R line 203)
        (math.log(0.05 / 1e-4) + math.log(0.04 / 1e-4) + math.log(0.02 / 1e-4)) / 3,
    ]
    assert np.allclose(rcsi(PAC_DATA, PAC_REFERENCES), expected, rtol=1e-13)
    third = [math.log(0.05 / 1e-4), math.log(0.04 / 1e-4), math.log(0.02 / 1e-4)]
    assert rcsi_se(PAC_DATA, PAC_REFERENCES)[2] == pytest.approx(np.std(third, ddof=1) / math.sqrt(3), rel=1e-12)
    # M3C before December 2019: the log of the reference mean, the data's 0 floored at 1e-7.
    assert np.allclose(rcsi(PAC_DATA, PAC_REFERENCES, of="log_mean"),
                       [math.log(0.65 / 3 / 0.2), math.log(0.45 / 3 / 0.05), math.log(0.11 / 3 / 1e-7)], rtol=1e-13)
    assert np.isnan(rcsi_se(PAC_DATA, PAC_REFERENCES[:1])).all()


def test_monte_carlo_p_counts_references_below_the_data_plus_one():
    # k=2: one reference (0.1) below 0.2 -> 2/4; k=3: none below 0.05 -> 1/4; k=4: none below 0 -> 1/4.
    assert np.allclose(monte_carlo_p(PAC_DATA, PAC_REFERENCES), [0.5, 0.25, 0.25])
    # Ties are not below (strict comparison, as M3C's distribution < PAC_REAL).
    assert monte_carlo_p(np.array([0.1]), np.array([[0.1], [0.1]]))[0] == pytest.approx(1 / 3)


@pytest.mark.parametrize("count", [1, 9, 24])
def test_monte_carlo_p_lies_between_one_over_b_plus_one_and_one(count):
    rng = np.random.default_rng(count)
    references = rng.uniform(0.2, 0.6, size=(count, 5))
    low = monte_carlo_p(np.full(5, 0.1), references)      # the data more stable than every reference
    high = monte_carlo_p(np.full(5, 0.9), references)     # less stable than every one
    assert np.allclose(low, 1 / (count + 1)) and np.allclose(high, 1.0)
    p = monte_carlo_p(rng.uniform(0, 1, 5), references)
    assert ((p >= 1 / (count + 1)) & (p <= 1)).all()


def test_beta_p_fits_the_references_moments():
    """Reference PACs of mean 1/2 and variance 1/12 (divisor B - 1) fit beta(1, 1), the uniform: the p-value is the
    data's PAC itself."""
    half_width = math.sqrt(1 / 24)                          # two values 1/2 +- a have variance 2 a^2
    references = np.array([[0.5 - half_width] * 3, [0.5 + half_width] * 3])
    assert np.allclose(beta_p(np.array([0.3, 0.05, 0.9]), references), [0.3, 0.05, 0.9], rtol=1e-12)
    # Any table: the fitted beta has the references' mean and variance.
    mu, var = PAC_REFERENCES.mean(axis=0), PAC_REFERENCES.var(axis=0, ddof=1)
    for column in range(3):
        alpha_ = ((1 - mu[column]) / var[column] - 1 / mu[column]) * mu[column] ** 2
        beta_ = alpha_ * (1 / mu[column] - 1)
        fitted = stats.beta(alpha_, beta_)
        assert fitted.mean() == pytest.approx(mu[column]) and fitted.var() == pytest.approx(var[column])
        assert beta_p(PAC_DATA, PAC_REFERENCES)[column] == pytest.approx(fitted.cdf(PAC_DATA[column]), rel=1e-12)
    # No beta distribution: no spread, or a variance at or beyond mu (1 - mu).
    assert np.isnan(beta_p(np.array([0.2]), np.array([[0.3], [0.3]]))).all()
    assert np.isnan(beta_p(np.array([0.2]), np.array([[0.0], [1.0]]))).all()


def test_beta_p_and_normal_p_give_scipy_stats_cdfs_bit_for_bit():
    """Computed through scipy.special (betainc, ndtr) so that a report need not import scipy.stats: the same bits as
    scipy.stats.beta.cdf and norm.cdf, on moments fitted to random references, PACs at 0 and 1 included."""
    rng = np.random.default_rng(38)
    references = rng.uniform(0.05, 0.6, size=(25, 400))
    data = np.concatenate([[0.0, 1.0], rng.uniform(0, 1, size=398)])
    mu, var = references.mean(axis=0), references.var(axis=0, ddof=1)
    a = ((1 - mu) / var - 1 / mu) * mu**2
    assert np.array_equal(beta_p(data, references), stats.beta.cdf(data, a, a * (1 / mu - 1)))
    sd = references.std(axis=0, ddof=1)
    assert np.array_equal(normal_p(data, references), stats.norm.cdf(data, loc=mu, scale=sd))


def test_consensus_entropy_sums_over_ambiguous_pairs():
    M = np.array([[1.0, 0.5, 0.0, 0.25],
                  [0.5, 1.0, 1.0, np.nan],
                  [0.0, 1.0, 1.0, 0.9],
                  [0.25, np.nan, 0.9, 1.0]])
    # Pairs 0.5, 0.25 and 0.9 count; 0, 1 and the never co-drawn pair do not.
    expected = math.log(2) + -(0.25 * math.log(0.25) + 0.75 * math.log(0.75)) \
        - (0.9 * math.log(0.9) + 0.1 * math.log(0.1))
    assert consensus_entropy(M) == pytest.approx(expected, rel=1e-13)
    assert entropy_from_values(*consensus_values(M)) == pytest.approx(expected, rel=1e-13)


def test_normal_p_is_the_normal_cdf_with_the_references_mean_and_sd():
    references = np.array([[10.0, 3.0], [14.0, 3.0]])      # mean 12, sd sqrt(8); no spread in the second
    p = normal_p(np.array([12.0 - math.sqrt(8), 2.0]), references)
    assert p[0] == pytest.approx(stats.norm.cdf(-1.0), rel=1e-12)
    assert p[1] == 0.0 and normal_p(np.array([0.0, 3.0]), references)[1] == 1.0   # R's pnorm(x, m, 0)


def test_m3c_choice_is_the_largest_rcsi_among_the_significant_k():
    ks = [2, 3, 4, 5]
    assert m3c_choice([0.1, 2.0, 2.0, 0.5], [0.3, 0.01, 0.01, 0.5], ks) == 3    # the first of equal maxima
    assert m3c_choice([0.1, 2.0, 0.4, 0.5], [0.3, 0.2, 0.01, 0.5], ks) == 4     # k = 3 is not significant itself
    assert m3c_choice([0.1, 2.0, 0.4, 0.5], [0.3, 0.2, 0.01, 0.5], ks, among="all") == 3  # once any k is
    assert m3c_choice([0.1, 2.0, 0.4, 0.5], None, ks) == 3                       # no test: R/M3C.R line 360
    assert m3c_choice([0.1, 2.0, 0.4, 0.5], [0.3, 0.06, 0.2, 0.5], ks) == 1     # none below 0.05: K = 1
    assert m3c_choice([0.1, 2.0, 0.4, 0.5], [0.3, 0.06, 0.2, 0.5], ks, among="all") == 1
    assert m3c_choice([0.1, 2.0, 0.4, 0.5], [0.3, 0.06, 0.2, 0.5], ks, alpha=0.1) == 3
    assert m3c_choice([np.nan, 2.0, np.nan, 0.5], [np.nan, 0.01, np.nan, 0.5], ks) == 3


def _hand_built(monkeypatch) -> tuple[Clusterings, np.ndarray, np.ndarray]:
    """PAC curves where the largest RCSI (k = 2: the references spread widely) is not significant by its own beta
    fit while k = 3 (the references tightly above the data) is: the reducer reads them in place of the consensus
    matrices."""
    import ordercube.tasks.criteria.m3c as module

    rng = np.random.default_rng(3)
    data = np.array([0.10, 0.20, 0.30])
    references = np.column_stack([np.linspace(0.05, 0.9, 25), 0.3 + 0.01 * rng.standard_normal(25),
                                  0.3 + 0.05 * rng.standard_normal(25)])
    monkeypatch.setattr(module, "statistic_table", lambda clusterings, **options: (data, references))
    ks = (2, 3, 4)
    stored = {k: np.zeros((1, 4), dtype=np.int16) for k in ks}
    clusterings = Clusterings(ks=ks, data=stored, references={k: np.zeros((25, 1, 4), dtype=np.int16) for k in ks},
                              trials=np.arange(1), items=4, rng=np.random.default_rng)
    return clusterings, data, references


def test_the_default_rule_chooses_a_significant_k_where_m3c_code_does_not(monkeypatch):
    """The largest RCSI is at k = 2, whose own beta-fit p-value is above 0.05, while k = 3's is far below: M3C's
    code (the largest RCSI whatever the p-values, ``test: none``) and the test of K = 1 followed by the largest RCSI
    (``among: all``) choose 2; the default chooses among the significant k, 3."""
    clusterings, data, references = _hand_built(monkeypatch)
    ks = clusterings.ks
    fitted = []
    for column in range(3):   # the beta fit by moments, from scipy
        mean, var = references[:, column].mean(), references[:, column].var(ddof=1)
        a = ((1 - mean) / var - 1 / mean) * mean ** 2
        fitted.append(stats.beta.cdf(data[column], a, a * (1 / mean - 1)))
    rcsi_values = np.log(references).mean(axis=0) - np.log(data)
    assert np.argmax(rcsi_values) == 0 and fitted[0] > 0.05 and fitted[1] < 1e-6   # the set is what it claims
    outputs = CRITERIA["m3c"].reduce(clusterings)
    np.testing.assert_allclose(outputs["rcsi_fit_p"], fitted, rtol=1e-10)
    np.testing.assert_allclose(outputs["rcsi"], rcsi_values, rtol=1e-12)
    chosen = _k_hat(outputs, ks)
    assert chosen == 3 and outputs["rcsi_fit_p"][ks.index(chosen)] < 0.05
    assert np.isnan(outputs["m3c"][0]) and outputs["m3c"][1] == outputs["rcsi"][1]
    assert _k_hat(CRITERIA["m3c"].reduce(clusterings, among="all"), ks) == 2
    assert _k_hat(CRITERIA["m3c"].reduce(clusterings, test="none"), ks) == 2
    # the Monte Carlo p-value of k = 2 counts two references below 0.10 (0.050, 0.085): (2 + 1) / 26 = 0.115, not
    # significant either; k = 3's is the bound 1 / 26
    assert outputs["rcsi_p"][:2] == pytest.approx([3 / 26, 1 / 26])
    assert _k_hat(CRITERIA["m3c"].reduce(clusterings, test="monte_carlo"), ks) == 3


def test_among_is_a_decision_option_refused_with_its_values():
    criterion = CRITERIA["m3c"]
    assert criterion.options["among"] == "significant"
    with pytest.raises(ParamError, match="'significant', 'all'"):
        criterion.resolve({"among": "any"})


# --- the criterion on stored clusterings -----------------------------------------------------------------------------

def _clusterings(X: np.ndarray, *, references: int, resamples: int, ks=(2, 3, 4, 5), seed: int = 0) -> Clusterings:
    """What the consensus scheme stores: k-means (one k-means++ start per fit, as M3C's ``kmeans``) on 80% of the
    items of the data and of each M3C reference, the same resamples for all of them (John et al.'s pItem = 0.8), -1
    where an item was not drawn."""
    n = X.shape[0]
    sets = [X] + [m3c_reference(X, np.random.default_rng([seed, 1, b])) for b in range(references)]
    rng = np.random.default_rng([seed, 2])
    draws = [np.sort(rng.choice(n, int(0.8 * n), replace=False)) for _ in range(resamples)]
    stored = {k: np.full((1 + references, resamples, n), -1, dtype=np.int16) for k in ks}
    for s, data in enumerate(sets):
        for h, items in enumerate(draws):
            for k in ks:
                fit_rng = np.random.default_rng([seed, 3, s, h, k])
                stored[k][s, h, items] = kmeans_labels(data[items], k, fit_rng, n_init=1)
    return Clusterings(ks=tuple(ks), data={k: stored[k][0] for k in ks}, references={k: stored[k][1:] for k in ks},
                       trials=np.arange(resamples), items=n, rng=lambda key: np.random.default_rng([seed, *key]))


def _k_hat(outputs: dict, ks) -> int:
    criterion = CRITERIA["m3c"]
    index = choose_index(outputs[criterion.decided_on], criterion.decision.rule, ties=criterion.decision.ties)
    return int(ks[index]) if index >= 0 else -1


@pytest.fixture(scope="module")
def three_clusters() -> Clusterings:
    """Three Gaussian clusters of 20 samples in 80 features (more features than samples: the reverse-PCA
    reference), 25 references (M3C's default), 30 resamples."""
    rng = np.random.default_rng(12)
    X = np.vstack([centre + rng.normal(size=(20, 80)) for centre in rng.normal(0, 1.0, (3, 80))])
    return _clusterings(X, references=25, resamples=30)


@pytest.fixture(scope="module")
def one_gaussian() -> Clusterings:
    """One Gaussian with unequal variances, the same sizes."""
    rng = np.random.default_rng(13)
    return _clusterings(rng.normal(size=(60, 80)) * np.linspace(3.0, 0.5, 80), references=25, resamples=30, seed=1)


def test_m3c_finds_three_clusters(three_clusters):
    outputs = CRITERIA["m3c"].reduce(three_clusters)
    assert set(outputs) == set(CRITERIA["m3c"].variables)
    assert all(np.shape(values) == (4,) for values in outputs.values())
    assert _k_hat(outputs, three_clusters.ks) == 3
    assert np.nanargmax(outputs["rcsi"]) == 1 and outputs["rcsi"][1] > 1.0
    assert outputs["rcsi_fit_p"][1] < 1e-3
    assert outputs["rcsi_p"][1] == pytest.approx(1 / 26)       # every reference less stable: the bound 1 / (B + 1)
    assert m3c_choice(outputs["rcsi"], outputs["rcsi_fit_p"], three_clusters.ks) == 3
    # the curve is the RCSI at the significant k, no value elsewhere
    assert np.array_equal(outputs["m3c"], np.where(outputs["rcsi_fit_p"] < 0.05, outputs["rcsi"], np.nan), equal_nan=True)
    # M3C's RCSI before December 2019 is the log ratio of the table's reference mean to the data's PAC, and (Jensen)
    # never below the mean log ratio.
    log_mean = CRITERIA["m3c"].reduce(three_clusters, rcsi_of="log_mean")
    assert np.allclose(log_mean["rcsi"],
                       np.log(outputs["m3c_reference"]) - np.log(np.maximum(outputs["m3c_data"], 1e-7)), rtol=1e-12)
    assert (log_mean["rcsi"] >= outputs["rcsi"] - 1e-12).all()
    # The entropy objective (M3C's default since December 2019) agrees here.
    entropy = CRITERIA["m3c"].reduce(three_clusters, objective="entropy")
    assert _k_hat(entropy, three_clusters.ks) == 3 and entropy["rcsi_fit_p"][1] < 1e-3
    # Another window changes PAC.
    other = CRITERIA["m3c"].reduce(three_clusters, window=(0.05, 0.95))
    assert not np.allclose(other["m3c_data"], outputs["m3c_data"])


def test_m3c_finds_no_significant_k_without_clusters(one_gaussian):
    """No k has a fitted p-value below 0.05, so the curve m3c has no value and the rule chooses nothing (-1),
    M3C's K = 1."""
    outputs = CRITERIA["m3c"].reduce(one_gaussian)
    assert (outputs["rcsi_fit_p"] > 0.05).all() and (outputs["rcsi_p"] > 0.05).all()
    assert np.isnan(outputs["m3c"]).all() and np.isfinite(outputs["rcsi"]).all()
    assert _k_hat(outputs, one_gaussian.ks) == -1
    assert m3c_choice(outputs["rcsi"], outputs["rcsi_fit_p"], one_gaussian.ks) == 1
    # Without the test (M3C's printed "optimal K"), the largest RCSI is chosen anyway.
    untested = CRITERIA["m3c"].reduce(one_gaussian, test="none")
    assert _k_hat(untested, one_gaussian.ks) == one_gaussian.ks[int(np.nanargmax(outputs["rcsi"]))]


def test_the_criterion_is_registered_as_a_reduction_of_assignments():
    criterion = CRITERIA["m3c"]
    assert criterion.reads == "assignments" and criterion.reduce is not None
    assert criterion.variables[0] == "m3c" and {"rcsi", "rcsi_p"} <= set(criterion.variables)
    assert all(VARIABLES[output] == "m3c" for output in criterion.variables)
    assert criterion.report_sections == ("ordercube.pipeline.report.consensus:section",)
    assert criterion.resolve({"alpha": 0.01})["alpha"] == 0.01
    with pytest.raises(ValueError, match="monte_carlo"):
        criterion.resolve({"test": "t"})
    assert criterion.resolve({"window": (0.05, 0.95)})["window"] == (0.05, 0.95)
    for window in ((0.9, 0.1), (0.1, 1.5)):
        with pytest.raises(ParamError) as error:
            criterion.resolve({"window": window})
        assert error.value.name == "window"


def test_without_references_the_criterion_names_the_fix():
    labels = np.zeros((3, 5), dtype=np.int16)
    clusterings = Clusterings(ks=(2,), data={2: labels}, references={}, trials=np.arange(3), items=5,
                              rng=lambda key: np.random.default_rng(list(key)))
    with pytest.raises(ValueError, match="scheme_params.references"):
        CRITERIA["m3c"].reduce(clusterings)


# --- against M3C's own R code ----------------------------------------------------------------------------------------

def _r_check_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The inputs the values below were computed from (written to CSV at 17 significant digits and read by R)."""
    rng = np.random.default_rng(2020)
    rng.normal(size=(12, 20)) @ rng.normal(size=(20, 20))             # a matrix for another check, kept for the stream
    Y = rng.normal(size=(30, 5)) @ rng.normal(size=(5, 5))
    Y = np.column_stack([Y, Y[:, 0], rng.normal(size=30) * 0.01])      # a repeated feature: S is singular
    pac_real = rng.uniform(0.02, 0.4, 9)
    pac_real[3] = 0.0
    return Y, pac_real, rng.beta(4, 8, size=(25, 9))


# R 4.2.2 with corpcor 1.6.10: R/M3C.R's lines 198-244 verbatim on (pac_real, ls = the references' table), and
# corpcor::cov.shrink(Y); printed with sprintf("%.17g").
R_SCORES = {
    "RCSI": [0.67244706324141446, 0.2211224438777476, 0.44364382323628188, 8.0946886656020585, 1.9334248527535267,
             1.4658212480984032, 0.47591353246175561, -0.13953089756728021, -0.18635758326580068],
    "RCSI_SE": [0.07376245047343763, 0.07884489273190258, 0.082805905850455552, 0.064382214363014084,
                0.068830491184255951, 0.091634521186957474, 0.075068321282697165, 0.090952384590568952,
                0.088863822836392173],
    "MONTECARLO_P": [0.15384615384615385, 0.30769230769230771, 0.19230769230769232, 0.038461538461538464,
                     0.038461538461538464, 0.038461538461538464, 0.19230769230769232, 0.61538461538461542,
                     0.73076923076923073],
    "BETA_P": [0.035048195008029005, 0.28075397639637395, 0.16512258685385992, 0.0, 3.6092578843002799e-05,
               0.01028786774949246, 0.13019941834460577, 0.57189458576864927, 0.61978513589133333],
    "NORM_P": [0.046382594123695532, 0.25676118016669192, 0.15516797484264472, 0.00051975064224969367,
               0.0021751542715155048, 0.032010198436425392, 0.12941392275907801, 0.54606163353140169,
               0.60148210463830887],
    "RCSI_OLD": [0.72925221767385096, 0.29426921782039073, 0.52316397226361344, 15.049703244456438,
                 1.9845423330736125, 1.5610435815127131, 0.54225487757937296, -0.047811506295141859,
                 -0.099809577676220118],
}
R_SHRINK_DIAGONAL = [4.6820240602196082, 10.094930209221975, 6.3305252008551829, 6.87535289464582, 8.1951160859887011,
                     4.6820240602196082, 1.3347584326536071]
R_SHRINK_ROW_7 = [0.067224580762091493, 0.093290817637143073, 0.12684001450215793, -0.13373632790380652,
                  0.1586776234941753, 0.067224580762091493, 1.3347584326536071]


def test_agrees_with_m3c_r_code_and_corpcor():
    Y, pac_real, references = _r_check_inputs()
    ours = {"RCSI": rcsi(pac_real, references), "RCSI_SE": rcsi_se(pac_real, references),
            "MONTECARLO_P": monte_carlo_p(pac_real, references), "BETA_P": beta_p(pac_real, references),
            "NORM_P": normal_p(pac_real, references), "RCSI_OLD": rcsi(pac_real, references, of="log_mean")}
    for name, expected in R_SCORES.items():
        assert np.allclose(ours[name], expected, rtol=1e-12, atol=1e-300), name
    shrunk = shrink_covariance(Y)
    assert np.allclose(np.diag(shrunk), R_SHRINK_DIAGONAL, rtol=1e-12)
    assert np.allclose(shrunk[6], R_SHRINK_ROW_7, rtol=1e-12)
