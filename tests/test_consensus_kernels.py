"""The consensus clustering kernels (ordercube.tasks.consensus) and their criteria, on toy inputs worked out by
hand, against second implementations (a double loop, scikit-learn, SciPy, the PyPI package consensusclustering)
and by their properties."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.spatial.distance import squareform
from sklearn.metrics import adjusted_rand_score

from ordercube.tasks.consensus import (
    adjusted_rand, bootstrap_weights, cdf_area, cluster_consensus, clusterwise_jaccard, consensus_cdf,
    consensus_matrix, consensus_order, consensus_partition, delta_area, item_consensus, pac, resample_agreement,
)
from ordercube.tasks.consensus import matrix as matrix_module
from ordercube.tasks.criteria import CRITERIA, VARIABLES
from ordercube.tasks.criteria.base import Clusterings
from ordercube.tasks.params import ParamError

# Four resamples of five items; -1: not drawn. Every entry of M below is counted by hand in the module's tests.
TOY = np.array([[0, 0, 1, 1, -1],
                [0, 0, 0, 1, 1],
                [1, -1, 0, 0, 0],
                [-1, 1, 1, 0, 0]])
F = Fraction
# (pair): (times clustered together, times drawn together)
TOY_COUNTS = {(0, 1): (2, 2), (0, 2): (1, 3), (0, 3): (0, 3), (0, 4): (0, 2), (1, 2): (2, 3),
              (1, 3): (0, 3), (1, 4): (0, 2), (2, 3): (2, 4), (2, 4): (1, 3), (3, 4): (3, 3)}


def brute_consensus(labels: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Monti et al.'s definition, pair by pair."""
    R, N = labels.shape
    w = np.ones(R) if weights is None else weights
    M = np.full((N, N), np.nan)
    for i in range(N):
        for j in range(N):
            both = (labels[:, i] >= 0) & (labels[:, j] >= 0) & (w > 0)
            if both.any():
                M[i, j] = np.sum(w[both] * (labels[both, i] == labels[both, j])) / np.sum(w[both])
    return M


def random_labels(rng: np.random.Generator, R: int, N: int, k: int, p_missing: float = 0.2) -> np.ndarray:
    labels = rng.integers(0, k, size=(R, N)).astype(np.int16)
    labels[rng.random((R, N)) < p_missing] = -1
    return labels


def test_toy_consensus_matrix_by_hand():
    M = consensus_matrix(TOY)
    for (i, j), (together, drawn) in TOY_COUNTS.items():
        assert M[i, j] == M[j, i] == pytest.approx(together / drawn, abs=0, rel=1e-15)
    assert np.all(np.diagonal(M) == 1.0)


def test_toy_weights_by_hand():
    # weights 1, 2, 0, 1: resample 2 drops out, resample 1 counts twice
    M = consensus_matrix(TOY, weights=[1, 2, 0, 1])
    assert M[0, 2] == pytest.approx(2 / 3)  # r0 apart (1), r1 together (2)
    assert M[2, 3] == pytest.approx(1 / 4)  # r0 together (1), r1 apart (2), r3 apart (1)
    assert M[0, 4] == 0.0  # only r1 (weight 2) holds both, apart
    assert M[1, 4] == 0.0
    # item 0 was drawn only in r0, r1 and r2: with r2 dropped, 0 and 4 still met in r1; nothing is NaN
    assert not np.isnan(M).any()


def test_toy_cdf_area_and_pac_by_hand():
    M = consensus_matrix(TOY)
    # sorted entries i < j: 0 0 0 0 1/3 1/3 1/2 2/3 1 1
    assert consensus_cdf(M, [0.0, 0.2, 1 / 3, 0.5, 0.6, 2 / 3, 0.99, 1.0]) == pytest.approx(
        [0.4, 0.4, 0.6, 0.7, 0.7, 0.8, 0.8, 1.0])
    monti = F(1, 3) * F(6, 10) + F(1, 6) * F(7, 10) + F(1, 6) * F(8, 10) + F(1, 3) * 1
    assert monti == F(47, 60)
    assert cdf_area(M) == pytest.approx(float(monti), rel=1e-14)
    # ConsensusClusterPlus: CDF at b / 100, b = 1..100: 0.4 up to 0.33, 0.6 to 0.49, 0.7 from 0.50 (an entry of
    # exactly 1/2 falls in the bin (0.49, 0.50]) to 0.66, 0.8 from 0.67 to 0.99, 1 at 1.00
    ccp = (33 * 0.4 + 16 * 0.6 + 17 * 0.7 + 33 * 0.8 + 1 * 1.0) / 100
    assert cdf_area(M, method="ccp") == pytest.approx(ccp, rel=1e-12)
    assert pac(M) == pytest.approx(0.8 - 0.4)
    # an entry equal to u1 is unambiguous, one equal to u2 ambiguous (R's ecdf: CDF(u) counts M <= u)
    assert pac(M, (1 / 3, 2 / 3)) == pytest.approx(0.8 - 0.6)
    assert pac(M, (0.0, 0.5)) == pytest.approx(0.7 - 0.4)


def test_toy_partition_and_its_consensus_by_hand():
    M = consensus_matrix(TOY)
    # average linkage on 1 - M: {0,1} and {3,4} at 0; {2} joins {0,1} at 1 - (1/3 + 2/3) / 2 = 0.5, before
    # {3,4} at 1 - (1/2 + 1/3) / 2 = 7/12
    assert consensus_partition(M, 2).tolist() == [0, 0, 0, 1, 1]
    partition = np.array([0, 0, 1, 1, 1])
    ic = item_consensus(M, partition, 2)
    assert ic[0] == pytest.approx([1.0, (1 / 3 + 0 + 0) / 3])
    assert ic[2] == pytest.approx([(1 / 3 + 2 / 3) / 2, (1 / 2 + 1 / 3) / 2])
    assert ic[4] == pytest.approx([0.0, (1 / 3 + 1) / 2])
    assert cluster_consensus(M, partition, 2) == pytest.approx([1.0, (1 / 2 + 1 / 3 + 1) / 3])


def test_toy_clusterwise_jaccard_by_hand():
    # consensus clusters {0,1} and {2,3,4}; per resample: the best Jaccard of C ∩ drawn with a resample cluster
    # r0: {0,1}~{0,1} 1, {2,3}~{2,3} 1; r1: {0,1}~{0,1,2} 2/3, {2,3,4}~{3,4} 2/3; r2: {0}~{0} 1,
    # {2,3,4}~{2,3,4} 1; r3: {1}~{1,2} 1/2, {2,3,4}~{3,4} 2/3
    gamma = clusterwise_jaccard(TOY, np.array([0, 0, 1, 1, 1]), 2)
    assert gamma == pytest.approx([(1 + 2 / 3 + 1 + 1 / 2) / 4, (1 + 2 / 3 + 1 + 2 / 3) / 4])
    weighted = clusterwise_jaccard(TOY, np.array([0, 0, 1, 1, 1]), 2, weights=[0, 3, 0, 1])
    assert weighted == pytest.approx([(3 * 2 / 3 + 1 / 2) / 4, (3 * 2 / 3 + 2 / 3) / 4])


def test_delta_area_by_hand():
    areas = [0.5, 0.75, 0.6, 0.9]
    ks = [2, 3, 4, 5]
    assert delta_area(areas, ks) == pytest.approx([0.5, 0.5, (0.6 - 0.75) / 0.75, (0.9 - 0.75) / 0.75])
    assert delta_area(areas, ks, running_max=False) == pytest.approx([0.5, 0.5, (0.6 - 0.75) / 0.75, 0.5])
    # no k = 2: the first gain is unknown; a NaN area is skipped by the running maximum
    assert np.isnan(delta_area([0.5, 0.7], [3, 4])[0])
    gaps = delta_area([0.5, np.nan, 0.6], [2, 3, 4])
    assert np.isnan(gaps[1]) and gaps[2] == pytest.approx(0.2)
    assert np.isnan(delta_area([0.0, 0.5], [1, 2])[0]) and delta_area([0.0, 0.5], [1, 2])[1] == 0.5


@pytest.mark.parametrize("weighted", ["none", "integer", "real"])
def test_consensus_matrix_equals_double_loop(weighted):
    rng = np.random.default_rng(3)
    labels = random_labels(rng, 40, 23, 4, p_missing=0.4)
    labels[:, 22] = -1  # an item never drawn
    labels[:, 21] = np.where(np.arange(40) == 5, 2, -1)  # an item drawn once, alone of its kind
    weights = {"none": None, "integer": rng.integers(0, 4, 40).astype(float), "real": rng.random(40)}[weighted]
    M = consensus_matrix(labels, weights=weights)
    expected = brute_consensus(labels, weights)
    assert np.array_equal(np.isnan(M), np.isnan(expected))
    if weighted == "real":
        np.testing.assert_allclose(M, expected, rtol=1e-12, equal_nan=True)
    else:  # integer weights: exact counts, so exactly the double loop's quotients
        assert np.array_equal(M, expected, equal_nan=True)
    assert np.isnan(M[22, 22]) and np.all(np.isnan(M[22]))
    zero = consensus_matrix(labels, weights=weights, fill=0.0)
    np.testing.assert_allclose(zero, np.nan_to_num(expected, nan=0.0), rtol=1e-12)
    assert np.all(zero[np.isnan(expected)] == 0.0)


def test_consensus_matrix_blocks_and_precisions_agree(monkeypatch):
    rng = np.random.default_rng(4)
    labels = random_labels(rng, 60, 31, 5)
    weights = rng.integers(0, 5, 60).astype(float)
    whole = consensus_matrix(labels, weights=weights)
    monkeypatch.setattr(matrix_module, "BLOCK_BYTES", 31 * 5 * 4 * 3)  # three resamples per block
    assert np.array_equal(consensus_matrix(labels, weights=weights), whole, equal_nan=True)
    monkeypatch.setattr(matrix_module, "FLOAT32_EXACT", 0)  # float64 throughout
    np.testing.assert_allclose(consensus_matrix(labels, weights=weights), whole, rtol=1e-15, equal_nan=True)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), R=st.integers(1, 12), N=st.integers(2, 15), k=st.integers(1, 5))
def test_consensus_matrix_properties(seed, R, N, k):
    rng = np.random.default_rng(seed)
    labels = random_labels(rng, R, N, k, p_missing=0.3)
    M = consensus_matrix(labels)
    drawn = (labels >= 0).any(axis=0)
    assert np.array_equal(M, M.T, equal_nan=True)
    defined = M[~np.isnan(M)]
    assert np.all((defined >= 0) & (defined <= 1))
    assert np.all(np.diagonal(M)[drawn] == 1) and np.all(np.isnan(np.diagonal(M)[~drawn]))
    # relabelling the clusters of each resample changes nothing
    relabelled = labels.copy()
    for h in range(R):
        permutation = rng.permutation(k)
        relabelled[h] = np.where(labels[h] >= 0, permutation[np.maximum(labels[h], 0)], -1)
    assert np.array_equal(consensus_matrix(relabelled), M, equal_nan=True)
    value = pac(M, (0.2, 0.7))
    assert math.isnan(value) or 0 <= value <= 1
    if not math.isnan(value):
        assert 0 <= cdf_area(M) <= 1 and 0 <= cdf_area(M, method="ccp") <= 1
    if drawn.sum() >= k:
        partition = consensus_partition(M, k)
        assert np.all(partition[~drawn] == -1) and sorted(np.unique(partition[drawn])) == list(range(k))
        for scores in (cluster_consensus(M, partition, k), item_consensus(M, partition, k),
                       clusterwise_jaccard(labels, partition, k)):
            present = scores[~np.isnan(scores)]
            assert np.all((present >= 0) & (present <= 1 + 1e-12))
        np.testing.assert_allclose(clusterwise_jaccard(relabelled, partition, k),
                                   clusterwise_jaccard(labels, partition, k), rtol=1e-12)


def test_stable_clusterings_have_no_ambiguity():
    rng = np.random.default_rng(5)
    truth = np.repeat(np.arange(3), 7)
    labels = np.empty((30, 21), dtype=np.int16)
    for h in range(30):  # the same three groups, under a new numbering, on a subsample
        labels[h] = rng.permutation(3)[truth]
        labels[h, rng.random(21) < 0.3] = -1
    M = consensus_matrix(labels)
    assert pac(M) == 0.0
    # entries are 0 and 1 only: Monti's sum has one step, 1 x CDF(1) = 1; the histogram's is the share of 0s
    assert cdf_area(M) == 1.0
    zeros = 1 - 3 * math.comb(7, 2) / math.comb(21, 2)
    assert cdf_area(M, method="ccp") == pytest.approx(0.99 * zeros + 0.01)
    partition = consensus_partition(M, 3)
    assert adjusted_rand_score(truth, partition) == 1.0
    assert np.all(cluster_consensus(M, partition, 3) == 1.0)
    assert np.all(clusterwise_jaccard(labels, partition, 3) == 1.0)
    assert resample_agreement(labels, rng, 100) == 1.0


def test_consensus_partition_matches_scipy_fcluster():
    rng = np.random.default_rng(6)
    labels = random_labels(rng, 25, 40, 3, p_missing=0.1)
    labels[:, :20] = np.where(labels[:, :20] >= 0, 0, -1)  # a block that is always together
    M = consensus_matrix(labels)
    for method in ("average", "complete", "single"):
        tree = linkage(squareform(1 - M, checks=False), method=method)
        for k in (2, 3, 5):
            expected = fcluster(tree, k, criterion="maxclust")
            got = consensus_partition(M, k, method)
            if len(np.unique(expected)) == k:  # fcluster gives fewer clusters when heights tie at the cut
                assert adjusted_rand_score(expected, got) == 1.0
            assert sorted(np.unique(got)) == list(range(k))
            assert got[0] == 0  # numbered by first appearance


def test_consensus_partition_leaves_undrawn_items_out():
    labels = TOY.copy()
    labels = np.concatenate([labels, np.full((4, 1), -1)], axis=1)
    partition = consensus_partition(consensus_matrix(labels), 2)
    assert partition.tolist() == [0, 0, 0, 1, 1, -1]
    with pytest.raises(ValueError, match="k: expected 1 <= k <= 5"):
        consensus_partition(consensus_matrix(labels), 6)


def test_item_and_cluster_consensus_against_loops():
    rng = np.random.default_rng(7)
    labels = random_labels(rng, 15, 18, 3, p_missing=0.5)
    M = consensus_matrix(labels)
    partition = rng.integers(-1, 3, 18)
    partition[:2] = 0
    ic, cc = item_consensus(M, partition, 3), cluster_consensus(M, partition, 3)
    for c in range(3):
        members = np.flatnonzero(partition == c)
        pairs = [M[i, j] for i, j in itertools.combinations(members, 2) if not np.isnan(M[i, j])]
        assert (np.isnan(cc[c]) and not pairs) or cc[c] == pytest.approx(np.mean(pairs))
        for i in range(18):
            others = [M[i, j] for j in members if j != i and not np.isnan(M[i, j])]
            assert (np.isnan(ic[i, c]) and not others) or ic[i, c] == pytest.approx(np.mean(others))


def test_clusterwise_jaccard_against_sets():
    rng = np.random.default_rng(8)
    labels = random_labels(rng, 12, 25, 4, p_missing=0.3)
    partition = rng.integers(0, 3, 25)
    weights = rng.integers(0, 3, 12).astype(float)
    got = clusterwise_jaccard(labels, partition, 3, weights=weights)
    for c in range(3):
        scores, used = [], []
        for h in range(12):
            drawn = set(np.flatnonzero(labels[h] >= 0))
            restricted = set(np.flatnonzero(partition == c)) & drawn
            if not restricted:
                continue
            best = max(len(restricted & set(np.flatnonzero(labels[h] == d))) /
                       len(restricted | set(np.flatnonzero(labels[h] == d))) for d in range(4))
            scores.append(best)
            used.append(weights[h])
        assert got[c] == pytest.approx(np.average(scores, weights=used))


def test_adjusted_rand_matches_scikit_learn():
    rng = np.random.default_rng(9)
    first = random_labels(rng, 30, 40, 4, p_missing=0.3)
    second = random_labels(rng, 30, 40, 6, p_missing=0.3)
    second[0] = np.where(first[0] >= 0, first[0], -1)  # identical on common items
    second[1] = np.where(first[1] >= 0, 0, -1)  # one cluster against four
    got = adjusted_rand(first, second)
    for p in range(30):
        common = (first[p] >= 0) & (second[p] >= 0)
        assert got[p] == pytest.approx(adjusted_rand_score(first[p, common], second[p, common]), abs=1e-12)
    assert got[0] == 1.0
    trivial = adjusted_rand(np.zeros((1, 5), int), np.zeros((1, 5), int))
    assert trivial[0] == adjusted_rand_score(np.zeros(5), np.zeros(5)) == 1.0
    assert np.isnan(adjusted_rand([[0, -1, 1]], [[1, 0, -1]])[0])  # one common item


def test_resample_agreement_is_the_mean_over_pairs():
    rng = np.random.default_rng(10)
    labels = random_labels(rng, 6, 30, 3)
    every = np.mean([adjusted_rand_score(labels[a][(labels[a] >= 0) & (labels[b] >= 0)],
                                         labels[b][(labels[a] >= 0) & (labels[b] >= 0)])
                     for a, b in itertools.combinations(range(6), 2)])
    assert resample_agreement(labels, rng, 15) == pytest.approx(every)  # 15 pairs: every one
    sampled = resample_agreement(labels, np.random.default_rng(1), 4000, weights=np.ones(6))
    assert sampled == pytest.approx(every, abs=0.02)
    # weights: only rows 0 and 1 count
    only = resample_agreement(labels, rng, 50, weights=[1, 2, 0, 0, 0, 0])
    common = (labels[0] >= 0) & (labels[1] >= 0)
    assert only == pytest.approx(adjusted_rand_score(labels[0][common], labels[1][common]))
    assert np.isnan(resample_agreement(labels, rng, 10, weights=[1, 0, 0, 0, 0, 0]))


def test_bootstrap_weights():
    trials = np.repeat(np.array([3, 8, 9, 12, 20]), 2)  # two parts per trial
    weights = bootstrap_weights(trials, np.random.default_rng(11), 500)
    assert weights.shape == (500, 10)
    assert np.all(weights.sum(axis=1) == 10)
    assert np.all(weights[:, ::2] == weights[:, 1::2])  # the parts of a trial go together
    assert np.all(weights == np.round(weights)) and weights.min() >= 0
    # each trial is drawn once per replicate on average
    assert weights[:, ::2].mean() == pytest.approx(1.0, abs=0.1)
    assert np.array_equal(bootstrap_weights(trials, np.random.default_rng(11), 500), weights)


def clusterings_of(data: dict[int, np.ndarray], weights=None) -> Clusterings:
    any_labels = next(iter(data.values()))
    return Clusterings(ks=tuple(sorted(data)), data=data, references={}, trials=np.arange(any_labels.shape[0]),
                       items=any_labels.shape[1], rng=lambda key: np.random.default_rng([12, *key]), weights=weights)


def planted(seed: int, ks: tuple[int, ...], R: int = 20) -> dict[int, np.ndarray]:
    """Resamples of 30 items in 3 true groups: at k = 3 the groups, else a noisy split or merge."""
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(3), 10)
    data = {}
    for k in ks:
        labels = np.empty((R, 30), dtype=np.int16)
        for h in range(R):
            row = truth.copy() if k == 3 else rng.integers(0, k, 30)
            if k == 3:
                row[rng.random(30) < 0.05] = rng.integers(0, 3)
            labels[h] = np.where(rng.random(30) < 0.8, row % k, -1)
        data[k] = labels
    return data


def test_criteria_are_registered_as_reductions():
    names = ("consensus_area", "pac", "cluster_consensus", "clusterwise_jaccard", "resample_agreement")
    for name in names:
        criterion = CRITERIA[name]
        assert criterion.reads == "assignments" and criterion.reduce is not None and criterion.min_k == 2
        assert criterion.report_sections == ("ordercube.pipeline.report.consensus:section",)
        for output in criterion.variables:
            assert VARIABLES[output] == name
    assert CRITERIA["consensus_area"].decided_on == "consensus_delta"
    assert CRITERIA["pac"].decided_on == "pac" and CRITERIA["pac"].decision.rule == "smallest"
    assert CRITERIA["pac"].resolve({"window": [0.05, 0.95]})["window"] == [0.05, 0.95]
    for bad in ([0.9, 0.1], [0.1, 1.5], [0.2, 0.2], [0.1], "0.1,0.9", [True, 0.5], [0.1, float("nan")]):
        with pytest.raises(ParamError, match="a pair"):
            CRITERIA["pac"].resolve({"window": bad})


def test_criteria_pick_the_planted_k():
    clusterings = clusterings_of(planted(13, (2, 3, 4, 5)))
    out = {}
    for name in ("consensus_area", "pac", "cluster_consensus", "clusterwise_jaccard", "resample_agreement"):
        criterion = CRITERIA[name]
        values = criterion.reduce(clusterings, **criterion.options)
        assert set(values) == set(criterion.variables)
        for curve in values.values():
            assert curve.shape == (4,)
        out.update(values)
    assert np.nanargmin(out["pac"]) == 1
    for name in ("cluster_consensus", "clusterwise_jaccard", "resample_agreement"):
        assert np.nanargmax(out[name]) == 1
    # Delta(3) is the one large gain after k = 2; largest k with Delta >= 0.025
    delta = out["consensus_delta"]
    assert delta[1] > 0.025 and np.all(delta[2:] < 0.025)


def test_criteria_honour_weights_and_leave_k1_out():
    data = planted(14, (1, 2, 3, 4), R=8)
    data[1] = np.where(data[1] >= 0, 0, -1).astype(np.int16)
    weights = np.array([2, 0, 1, 3, 1, 0, 2, 1], dtype=float)
    weighted = clusterings_of(data, weights)
    repeated = clusterings_of({k: np.repeat(labels, weights.astype(int), axis=0) for k, labels in data.items()})
    for name in ("consensus_area", "pac", "cluster_consensus", "clusterwise_jaccard"):
        criterion = CRITERIA[name]
        a, b = criterion.reduce(weighted, **criterion.options), criterion.reduce(repeated, **criterion.options)
        for output in a:
            assert np.isnan(a[output][0])  # k = 1
            np.testing.assert_allclose(a[output], b[output], rtol=1e-12, equal_nan=True)
    plain = CRITERIA["pac"].reduce(clusterings_of(data), window=(0.1, 0.9))["pac"]
    assert not np.allclose(plain[1:], CRITERIA["pac"].reduce(weighted, window=(0.1, 0.9))["pac"][1:])


def test_pac_window_changes_without_refitting():
    clusterings = clusterings_of(planted(15, (2, 4)))
    narrow = CRITERIA["pac"].reduce(clusterings, window=(0.3, 0.7))["pac"]
    wide = CRITERIA["pac"].reduce(clusterings, window=[0.05, 0.95])["pac"]
    assert np.all(narrow <= wide) and np.any(narrow < wide)
    for t, k in enumerate(clusterings.ks):
        assert wide[t] == pac(consensus_matrix(clusterings.data[k]), (0.05, 0.95))


def test_against_consensusclustering_package():
    consensus = pytest.importorskip("consensusclustering.consensus", reason="the PyPI package consensusclustering "
                                    "0.2.4 (a test extra) is not installed")
    rng = np.random.default_rng(16)
    labels = random_labels(rng, 30, 20, 3, p_missing=0.3)
    labels[:, :2] = -1 * (rng.random((30, 2)) < 0.5)  # its connectivity needs >= 2 missing items per resample
    labels[:, 2:4] = -1
    X = np.zeros((20, 1))
    connectivity = [consensus.compute_connectivity_matrix(row) for row in labels]
    identity = [consensus.compute_identity_matrix(X, np.flatnonzero(row >= 0)) for row in labels]
    with np.errstate(invalid="ignore"):  # its 0 / 0 where two items never met, which it then sets to 0
        theirs = consensus.compute_consensus_matrix(connectivity, identity)
    ours = consensus_matrix(labels, fill=0.0)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    from sklearn.cluster import KMeans

    runs = consensus.ConsensusClustering(KMeans(), min_clusters=2, max_clusters=4, n_resamples=1)
    matrices = [consensus_matrix(random_labels(rng, 30, 20, k), fill=0.0) for k in (2, 3, 4)]
    runs.consensus_matrices_ = matrices
    areas = [cdf_area(M, method="consensusclustering") for M in matrices]
    assert areas == pytest.approx([runs.area_under_cdf(k) for k in (2, 3, 4)], rel=1e-12)
    # its Delta: A(2) at k = 2, then (A(k + 1) - A(k)) / A(k + 1) at k (documented in delta_area)
    assert runs.change_in_area_under_cdf() == pytest.approx([areas[0], (areas[2] - areas[1]) / areas[2]])


def test_consensusclustering_fit_replayed():
    """The package's own run (k-means on 80 % subsamples), replayed draw by draw: the same resamples give its
    consensus matrices (with 0 where two items never met) and its areas."""
    consensus = pytest.importorskip("consensusclustering.consensus", reason="the PyPI package consensusclustering "
                                    "0.2.4 (a test extra) is not installed")
    from sklearn.cluster import KMeans

    X = np.random.default_rng(18).normal(size=(30, 2)) + np.repeat([[0, 0], [4, 0], [0, 4]], 10, axis=0)
    runs = consensus.ConsensusClustering(KMeans(n_init=1, random_state=0), min_clusters=2, max_clusters=4,
                                         n_resamples=15, resample_frac=0.8, rng=19)
    runs.fit(X)
    draws = np.random.default_rng(19)  # its generator, consumed in the same order: k, then resample
    for k in (2, 3, 4):
        labels = np.full((15, 30), -1, dtype=np.int16)
        for h in range(15):
            child = np.random.default_rng(draws.integers(0, 2**31))
            items = child.choice(range(30), size=int(30 * 0.8), replace=False)
            labels[h, items] = KMeans(n_clusters=k, n_init=1, random_state=0).fit_predict(X[items])
        M = consensus_matrix(labels, fill=0.0)
        np.testing.assert_allclose(M, runs.consensus_k(k), rtol=1e-12)
        assert cdf_area(M, method="consensusclustering") == pytest.approx(runs.area_under_cdf(k), rel=1e-12)


def test_consensus_order_puts_the_partition_in_blocks():
    rng = np.random.default_rng(20)
    truth = rng.permutation(np.repeat(np.arange(3), 6))
    labels = np.where(rng.random((25, 18)) < 0.8, truth, -1).astype(np.int16)
    labels[:, 5] = -1  # never drawn: not in the order
    M = consensus_matrix(labels)
    order = consensus_order(M)
    assert sorted(order) == [i for i in range(18) if i != 5]
    partition = consensus_partition(M, 3)
    runs = np.flatnonzero(np.diff(partition[order]) != 0)
    assert runs.size == 2  # three contiguous blocks
    assert np.all(M[np.ix_(order, order)][:5, :5] == 1.0)


def test_reductions_share_one_summary_and_never_mix_arrays():
    from ordercube.tasks.criteria import consensus as records

    first, second = planted(21, (2, 3)), planted(22, (2, 3))
    for data in (first, second, {k: labels.copy() for k, labels in first.items()}):
        clusterings = clusterings_of(data)
        got = CRITERIA["pac"].reduce(clusterings, window=(0.1, 0.9))["pac"]
        cc = CRITERIA["cluster_consensus"].reduce(clusterings, linkage="average")["cluster_consensus"]
        for t, k in enumerate(clusterings.ks):
            M = consensus_matrix(data[k])
            assert got[t] == pac(M)
            partition = consensus_partition(M, k)
            assert cc[t] == pytest.approx(np.nanmean(cluster_consensus(M, partition, k)))
            entry = records.summary(data[k], None, k)
            assert entry.labels is data[k] and "partition:average" in entry.extras


CCP_SCRIPT = r"""
suppressPackageStartupMessages(library(ConsensusClusterPlus))
d <- as.matrix(read.csv("data.csv", header = FALSE)); colnames(d) <- paste0("s", seq_len(ncol(d)))
record <- new.env(); record$rows <- list()
# a clusterAlg that clusters each subsample and writes down what it gave, so that the kernels see the same resamples
recorded <- function(this_dist, k) {
  a <- cutree(hclust(this_dist, method = "average"), k)
  record$rows[[length(record$rows) + 1]] <- data.frame(k = k, rep = length(record$rows), item = names(a), cluster = a)
  a
}
pdf(NULL)
res <- ConsensusClusterPlus(d, maxK = 4, reps = 40, pItem = 0.8, pFeature = 1, clusterAlg = "recorded",
                            distance = "euclidean", seed = 11, verbose = FALSE)
write.csv(do.call(rbind, record$rows), "assignments.csv", row.names = FALSE)
icl <- calcICL(res)
write.csv(icl$clusterConsensus, "cluster_consensus.csv", row.names = FALSE)
write.csv(icl$itemConsensus, "item_consensus.csv", row.names = FALSE)
for (k in 2:4) {
  write.csv(res[[k]]$consensusMatrix, paste0("matrix", k, ".csv"), row.names = FALSE)
  write.csv(data.frame(class = res[[k]]$consensusClass), paste0("class", k, ".csv"), row.names = FALSE)
}
# its CDF() computes the areas and Delta(K) but only plots them: the same function, returning them
areas <- ConsensusClusterPlus:::CDF
body(areas) <- as.call(c(as.list(body(areas)), quote(list(areaK = areaK, deltaK = deltaK))))
out <- areas(c(list(NULL), lapply(2:4, function(k) res[[k]]$ml)))
# PAC as Senbabaoglu et al. and M3C compute it: R's ecdf of the lower triangle at 0.9 minus at 0.1
pac <- sapply(2:4, function(k) { m <- res[[k]]$ml; Fn <- ecdf(m[lower.tri(m)]); Fn(0.9) - Fn(0.1) })
write.csv(data.frame(area = out$areaK, delta = out$deltaK, pac = pac), "areas.csv", row.names = FALSE)
"""


def test_against_consensusclusterplus(tmp_path):
    """ConsensusClusterPlus (R, Bioconductor) run on its own resamples, which a recording clusterAlg hands to the
    kernels: its consensus matrix (0 where two items never met), consensus partition (finalLinkage average),
    calcICL's cluster and item consensus, its CDF()'s areas and Delta(K), and R's ecdf for PAC."""
    import shutil
    import subprocess

    import pandas as pd

    if shutil.which("Rscript") is None:
        pytest.skip("Rscript is not installed")
    probe = subprocess.run(["Rscript", "-e", 'quit(status = !requireNamespace("ConsensusClusterPlus", quietly = TRUE))'],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("the R package ConsensusClusterPlus is not installed (Debian: r-bioc-consensusclusterplus)")
    rng = np.random.default_rng(23)
    data = rng.normal(size=(6, 36))  # features x items, as ConsensusClusterPlus reads them
    data[:, 12:24] += 2.5
    data[:, 24:] -= 2.5
    np.savetxt(tmp_path / "data.csv", data, delimiter=",")
    (tmp_path / "ccp.R").write_text(CCP_SCRIPT)
    run = subprocess.run(["Rscript", "ccp.R"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    recorded = pd.read_csv(tmp_path / "assignments.csv")
    ours = {}
    for k in (2, 3, 4):
        rows = recorded[recorded["k"] == k]
        labels = np.full((40, 36), -1, dtype=np.int16)
        reps = np.unique(rows["rep"], return_inverse=True)[1]
        labels[reps, rows["item"].str[1:].astype(int) - 1] = rows["cluster"] - 1
        ours[k] = consensus_matrix(labels)
        assert not np.isnan(ours[k]).any()  # every pair met: NaN and CCP's 0 cannot differ
        theirs = pd.read_csv(tmp_path / f"matrix{k}.csv").to_numpy()
        np.testing.assert_allclose(ours[k], theirs, rtol=1e-12, atol=1e-14)
        classes = pd.read_csv(tmp_path / f"class{k}.csv")["class"].to_numpy() - 1
        assert adjusted_rand_score(classes, consensus_partition(ours[k], k)) == 1.0
        clusters = pd.read_csv(tmp_path / "cluster_consensus.csv")
        expected = clusters[clusters["k"] == k].sort_values("cluster")["clusterConsensus"].to_numpy()
        np.testing.assert_allclose(cluster_consensus(ours[k], classes, k), expected, rtol=1e-12)
        items = pd.read_csv(tmp_path / "item_consensus.csv")
        items = items[items["k"] == k]
        got = item_consensus(ours[k], classes, k)
        np.testing.assert_allclose(got[items["item"].str[1:].astype(int) - 1, items["cluster"] - 1],
                                   items["itemConsensus"], rtol=1e-12)
    areas = pd.read_csv(tmp_path / "areas.csv")
    ccp = [cdf_area(ours[k], method="ccp") for k in (2, 3, 4)]
    np.testing.assert_allclose(ccp, areas["area"], rtol=1e-12)
    np.testing.assert_allclose(delta_area(ccp, [2, 3, 4], running_max=False), areas["delta"], rtol=1e-10)
    np.testing.assert_allclose([pac(ours[k]) for k in (2, 3, 4)], areas["pac"], rtol=1e-12, atol=1e-15)
