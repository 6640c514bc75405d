"""The competing criteria (Gap statistic, Clest, BIC/AIC, agreement) against hand-worked cases, scipy,
scikit-learn and R's ``cluster`` package."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform
from scipy.stats import multivariate_normal

from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.criteria import TrialSample, get_criterion
from ordercube.tasks.criteria.agreement import matched_accuracy
from ordercube.tasks.criteria.clest import clest_choice, fowlkes_mallows
from ordercube.tasks.criteria.gap import max_se, reference_sample, within_dispersion
from ordercube.tasks.predictors import linear_discriminant

# R 4.2.2, cluster 2.1.4: maxSE(f, SE.f, method, SE.factor) for these curves (1-based k as R returns it).
R_CURVES = [
    ([0.1, 0.3, 0.5, 0.45, 0.6, 0.2], [0.05, 0.05, 0.05, 0.1, 0.2, 0.1]),
    ([0.5, 0.4, 0.45, 0.8, 0.7], [0.02, 0.02, 0.1, 0.05, 0.3]),
    ([0.1, 0.2, 0.3, 0.4], [0.01, 0.2, 0.01, 0.2]),
    ([0.3, 0.2, 0.1], [0.1, 0.1, 0.1]),
    ([0.2, 0.5, 0.48, 0.49, 0.9, 0.3], [0.01, 0.04, 0.02, 0.05, 0.5, 0.1]),
]
R_MAXSE = {  # (curve, method): (SE.factor = 1, SE.factor = 2)
    (0, "firstSEmax"): (3, 3), (0, "Tibs2001SEmax"): (3, 3), (0, "globalSEmax"): (3, 2), (0, "firstmax"): (3, 3),
    (0, "globalmax"): (5, 5),
    (1, "firstSEmax"): (1, 1), (1, "Tibs2001SEmax"): (1, 1), (1, "globalSEmax"): (4, 4), (1, "firstmax"): (1, 1),
    (1, "globalmax"): (4, 4),
    (2, "firstSEmax"): (2, 1), (2, "Tibs2001SEmax"): (1, 1), (2, "globalSEmax"): (2, 1), (2, "firstmax"): (4, 4),
    (2, "globalmax"): (4, 4),
    (3, "firstSEmax"): (1, 1), (3, "Tibs2001SEmax"): (1, 1), (3, "globalSEmax"): (1, 1), (3, "firstmax"): (1, 1),
    (3, "globalmax"): (1, 1),
    (4, "firstSEmax"): (2, 2), (4, "Tibs2001SEmax"): (2, 2), (4, "globalSEmax"): (2, 1), (4, "firstmax"): (2, 2),
    (4, "globalmax"): (5, 5),
}


@pytest.mark.parametrize("case", sorted(R_MAXSE), ids=lambda case: f"curve{case[0]}-{case[1]}")
def test_gap_decision_rules_equal_r_cluster_maxse(case):
    curve, method = case
    f, se = map(np.array, R_CURVES[curve])
    for factor, expected in zip((1.0, 2.0), R_MAXSE[case]):
        assert max_se(f, se, method=method, se_factor=factor) + 1 == expected


def r_data() -> np.ndarray:
    i = np.arange(1, 31)
    return np.c_[np.sin(i) + 3 * (i % 3), np.cos(2.3 * i) + 2 * (i % 2)]


def test_log_w_equals_r_clusgap_on_the_same_partitions():
    # clusGap(X, FUNcluster = ward.D2 tree cut, K.max = 6, d.power = p)$Tab[, "logW"] in R 4.2.2 / cluster 2.1.4.
    # clusGap sums over pairs i < j with a factor 1/2: its W_k is half of Tibshirani's eq. (2), for both powers.
    r_log_w = {2: [4.803695726418, 3.949830250192, 3.395228477959, 2.997428559529, 2.562190707633, 2.205085261453],
               1: [3.269541131618, 2.827984323910, 2.523417358659, 2.305043224207, 2.080193104877, 1.883509396984]}
    X = r_data()
    partitions = get_algorithm("agglomerative").cluster_many(X, list(range(1, 7)), np.random.default_rng(0), linkage="ward")
    r_k3 = np.array([1, 2, 3, 1, 1, 3, 1, 2, 3, 1, 1, 3, 1, 2, 3, 1, 1, 3, 1, 2, 3, 1, 1, 3, 1, 2, 3, 1, 1, 3])
    assert matched_accuracy(partitions[3], r_k3) == 1.0  # the same tree cut as R's hclust/cutree
    for power, expected in r_log_w.items():
        ours = [np.log(0.5 * within_dispersion(X, partitions[k], d_power=power)) for k in range(1, 7)]
        np.testing.assert_allclose(ours, expected, rtol=0, atol=1e-9)


def test_within_dispersion_is_eq_2_of_tibshirani_computed_over_all_ordered_pairs():
    rng = np.random.default_rng(3)
    X, labels = rng.normal(size=(40, 3)), rng.integers(4, size=40)
    for power in (1, 2):
        D = squareform(pdist(X)) ** power
        direct = sum(D[np.ix_(labels == r, labels == r)].sum() / (2 * (labels == r).sum()) for r in np.unique(labels))
        assert within_dispersion(X, labels, d_power=power) == pytest.approx(direct, rel=1e-12)


def test_reference_sets_fill_the_bounding_box_or_the_principal_axes_box():
    rng = np.random.default_rng(0)
    t = rng.uniform(-1, 1, size=500)
    X = np.c_[t, 2 * t + 1] + 0.01 * rng.normal(size=(500, 2))  # a thin diagonal band
    uniform = reference_sample(X, np.random.default_rng(1), reference="uniform")
    aligned = reference_sample(X, np.random.default_rng(1), reference="pca")
    assert uniform.shape == aligned.shape == X.shape
    assert (uniform >= X.min(axis=0)).all() and (uniform <= X.max(axis=0)).all()
    off_band = lambda Z: np.abs(Z[:, 1] - (2 * Z[:, 0] + 1)).mean()  # noqa: E731
    assert off_band(aligned) < 0.05 < 1.0 < off_band(uniform)  # the box follows the band; the plain box fills the square


def trial_sample(X: np.ndarray, ks: list[int], algorithm: str = "kmeans", **params) -> TrialSample:
    entry = get_algorithm(algorithm)
    params = entry.resolve(params)

    def fit_rng(k, key):
        return np.random.default_rng([k, *key])

    def cluster(Z, wanted, key):
        return {k: entry.cluster(Z, k, fit_rng(k, key), **params) for k in wanted}

    return TrialSample(X=X, ks=ks, fits={}, cluster=cluster, rng=lambda key: np.random.default_rng([99, *key]),
                       fit_rng=fit_rng, algorithm=algorithm, params=params)


def three_clouds(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = np.repeat([0, 1, 2], n // 3)
    return np.array([[0, 0], [6, 0], [3, 5]])[truth] + rng.normal(size=(truth.size, 2)), truth


def test_gap_statistic_picks_three_separated_clouds_and_one_for_uniform_data():
    gap = get_criterion("gap")
    X, _ = three_clouds(150, 0)
    out = gap.evaluate_trial(trial_sample(X, [1, 2, 3, 4, 5, 6]), references=10, reference="uniform", d_power=2)
    f, s = np.array(list(out["gap"].values())), np.array(list(out["gap_sd"].values()))
    assert max_se(f, s) + 1 == 3 and (s > 0).all()
    U = np.random.default_rng(1).uniform(size=(150, 2))
    out = gap.evaluate_trial(trial_sample(U, [1, 2, 3, 4, 5, 6]), references=10, reference="pca", d_power=2)
    assert max_se(np.array(list(out["gap"].values())), np.array(list(out["gap_sd"].values()))) == 0


def test_fowlkes_mallows_equals_scikit_learn_and_hand_cases():
    from sklearn.metrics import fowlkes_mallows_score

    rng = np.random.default_rng(5)
    for _ in range(20):
        a, b = rng.integers(4, size=50), rng.integers(3, size=50)
        assert fowlkes_mallows(a, b) == pytest.approx(fowlkes_mallows_score(a, b), rel=1e-12)
    # {0,1,2},{3} against {0,1},{2,3}: together in both {01}; 3 pairs in a, 2 in b -> 1 / sqrt(6)
    assert fowlkes_mallows(np.array([0, 0, 0, 1]), np.array([0, 0, 1, 1])) == pytest.approx(1 / np.sqrt(6))
    assert fowlkes_mallows(np.array([5, 5, 7]), np.array([1, 1, 0])) == 1.0  # relabelling does not matter


def test_clest_rule_by_hand():
    ks = np.array([2, 3, 4])
    null = np.array([[0.70, 0.72, 0.74, 0.76, 0.78],    # k = 2: mean 0.74
                     [0.50, 0.52, 0.54, 0.56, 0.58],    # k = 3: mean 0.54
                     [0.40, 0.42, 0.44, 0.46, 0.90]])   # k = 4: mean 0.524
    # t2 = 0.77: p = 1/5 > 0.05 fails; t3 = 0.80: p = 0, d = 0.26; t4 = 0.91: p = 0, d = 0.386 -> k = 4
    assert clest_choice(np.array([0.77, 0.80, 0.91]), null, ks, p_max=0.05, d_min=0.05) == 4
    # t4 = 0.85 has p = 1/5 (0.90 >= 0.85): only k = 3 passes
    assert clest_choice(np.array([0.77, 0.80, 0.85]), null, ks, p_max=0.05, d_min=0.05) == 3
    # d_min = 0.3 rules out k = 3 (d = 0.26) too: no k passes -> k̂ = 1
    assert clest_choice(np.array([0.77, 0.80, 0.85]), null, ks, p_max=0.05, d_min=0.3) == 1
    assert clest_choice(np.array([np.nan] * 3), null, ks, p_max=0.05, d_min=0.05) == -1


def test_clest_on_three_clouds_beats_its_null_only_at_three():
    clest = get_criterion("clest")
    X, _ = three_clouds(120, 2)
    sample = trial_sample(X, [2, 3, 4, 5])
    from ordercube.tasks.criteria import TrialFits
    from ordercube.tasks.predictors import nearest_centroid

    kmeans = get_algorithm("kmeans")
    for k in sample.ks:
        first, second = X[::2], X[1::2]
        sample.fits[k] = TrialFits(first=first, second=second, k=k, predictor=nearest_centroid,
                                   labels_first=kmeans.cluster(first, k, np.random.default_rng(k), n_init=10),
                                   labels_second=kmeans.cluster(second, k, np.random.default_rng(k + 100), n_init=10))
    out = clest.evaluate_trial(sample, splits=5, reference="uniform")
    assert out["clest"][3] > 0.99 and out["clest"][3] - out["clest_null"][3] > 0.2
    assert set(out["clest"]) == set(out["clest_null"]) == {2, 3, 4, 5}


def test_linear_discriminant_separates_linearly_separable_classes_and_handles_one_class():
    X, truth = three_clouds(90, 4)
    assert (linear_discriminant(X, truth, 3, X) == truth).mean() > 0.98
    assert linear_discriminant(X, np.full(90, 2), 3, X[:5]).tolist() == [2] * 5


def test_bic_and_aic_by_hand_for_one_full_gaussian_and_choose_three_clouds():
    X, _ = three_clouds(300, 6)
    sample = trial_sample(X, [1, 2, 3, 4, 5], "gaussian_mixture")
    bic, aic = get_criterion("bic").evaluate_trial(sample)["bic"], get_criterion("aic").evaluate_trial(sample)["aic"]
    mean, cov = X.mean(axis=0), np.cov(X.T, bias=True) + 1e-6 * np.eye(2)
    log_l = multivariate_normal(mean, cov).logpdf(X).sum()
    p = 2 + 3  # a mean and a symmetric 2 x 2 covariance
    assert bic[1] == pytest.approx(-2 * log_l + p * np.log(300), rel=1e-6)
    assert aic[1] == pytest.approx(-2 * log_l + 2 * p, rel=1e-6)
    assert min(bic, key=bic.get) == 3 and min(aic, key=aic.get) == 3
    assert sample.memo  # one set of mixture fits served both criteria


def test_matched_accuracy_by_hand():
    truth = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    assert matched_accuracy(np.array([5, 5, 5, 3, 3, 3, 9, 9]), truth) == 1.0
    assert matched_accuracy(np.array([0, 0, 1, 1, 1, 1, 1, 1]), truth) == pytest.approx(5 / 8)  # 2 clusters, 3 classes
    assert matched_accuracy(np.array([0, 1, 2, 3, 4, 5, 6, 7]), truth) == pytest.approx(3 / 8)  # 8 clusters
