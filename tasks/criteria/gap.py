"""The Gap statistic (Tibshirani, Walther & Hastie 2001), on each trial's whole sample.

For a clustering of the n points into clusters C_1..C_k, Tibshirani et al.'s eq. (2):

    W_k = sum_r D_r / (2 n_r),   D_r = sum over i, i' in C_r of d(x_i, x_i')^p,

with p = 2 (squared Euclidean, ``d_power: 2``) this is the within-cluster sum of squares around the
cluster means. The reference: B data sets of n points drawn uniformly over the sample's bounding box
(``reference: uniform``) or over the box aligned with its principal components (``reference: pca``:
centre, rotate by V of the SVD, draw uniformly in the rotated box, rotate back; the paper's second
proposal, clusGap's ``spaceH0 = "scaledPCA"``), each clustered by the same algorithm at every k. Then
eq. (3) and step 3 of section 3:

    Gap(k) = (1/B) sum_b log W*_kb - log W_k,
    sd_k   = [(1/B) sum_b (log W*_kb - mean_b log W*_kb)^2]^(1/2),   s_k = sd_k sqrt(1 + 1/B),

and the decision (step 3): the smallest k with Gap(k) >= Gap(k+1) - s_{k+1} ("Tibs2001SEmax"). The
other rules of R's ``cluster::maxSE`` are available for re-deciding. Two differences from clusGap,
both stated: clusGap's ``SE.sim`` uses the unbiased variance (B - 1 in the denominator) where the paper
uses 1/B; and its W_k carries an extra factor 1/2 (it sums over pairs i < j), which cancels in Gap(k).
The reference sets are drawn per trial, keyed by the trial's coordinates and b only, so every method
and every k of a trial sees the same B reference sets.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.criteria.base import GAP_METHODS, Criterion, Decision, TrialSample
from ordercube.tasks.params import choice, integer

REFERENCES = ("uniform", "pca")
# Each reference set costs as much as the trial's own fits: more than this is a typo, not a study.
MAX_REFERENCES = 10_000


def within_dispersion(X: NDArray[np.float64], labels: NDArray[np.int64], *, d_power: int = 2) -> float:
    """W_k of eq. (2): sum over clusters of D_r / (2 n_r), D_r over ordered pairs of the cluster."""
    total = 0.0
    for cluster in np.unique(labels):
        members = X[labels == cluster]
        if d_power == 2:  # sum over pairs of squared distances / (2 n_r) = sum of squares around the mean
            total += float(((members - members.mean(axis=0)) ** 2).sum())
        elif members.shape[0] > 1:
            from scipy.spatial.distance import pdist

            total += float((pdist(members) ** d_power).sum() / members.shape[0])  # pairs i < j: D_r / 2
    return total


def reference_sample(X: NDArray[np.float64], rng: np.random.Generator, *, reference: str) -> NDArray[np.float64]:
    """n points drawn uniformly over the bounding box of ``X`` (``uniform``) or its principal-axes box (``pca``)."""
    if reference == "uniform":
        return rng.uniform(X.min(axis=0), X.max(axis=0), size=X.shape)
    if reference == "pca":
        mean = X.mean(axis=0)
        _, _, vt = np.linalg.svd(X - mean, full_matrices=False)
        rotated = (X - mean) @ vt.T
        drawn = rng.uniform(rotated.min(axis=0), rotated.max(axis=0), size=(X.shape[0], rotated.shape[1]))
        return drawn @ vt + mean
    raise ValueError(f"reference = {reference!r} is not one of {list(REFERENCES)}")


def gap_statistic(sample: TrialSample, *, references: int = 20, reference: str = "uniform",
                  d_power: int = 2) -> dict[str, dict[int, float]]:
    """Gap(k) and s_k of one trial's sample for every k of the block (eq. 3 and section 3, step 3)."""
    ks = sample.ks
    observed = sample.cluster(sample.X, ks, (1, 0, 0, 0))
    log_w = {k: np.log(within_dispersion(sample.X, observed[k], d_power=d_power)) for k in ks}
    log_w_ref = np.empty((references, len(ks)))
    for b in range(references):
        Z = reference_sample(sample.X, sample.rng((1, b + 1, 0, 0)), reference=reference)
        fitted = sample.cluster(Z, ks, (1, b + 1, 0, 0))
        log_w_ref[b] = [np.log(within_dispersion(Z, fitted[k], d_power=d_power)) for k in ks]
    expected = log_w_ref.mean(axis=0)
    s = log_w_ref.std(axis=0, ddof=0) * np.sqrt(1.0 + 1.0 / references)
    return {"gap": {k: float(expected[i] - log_w[k]) for i, k in enumerate(ks)},
            "gap_sd": {k: float(s[i]) for i, k in enumerate(ks)}}


def max_se(f: NDArray[np.float64], se: NDArray[np.float64], *, method: str = "Tibs2001SEmax",
           se_factor: float = 1.0) -> int:
    """The index (0-based) R's ``cluster::maxSE(f, SE.f, method, SE.factor)`` returns minus one.

    ``f[i]`` is Gap at the i-th k in increasing order, ``se[i]`` its s_k:

    - ``globalmax``: argmax f; ``firstmax``: the first i with f[i] >= f[i+1] (the last i if none);
    - ``Tibs2001SEmax``: the first i with f[i] >= f[i+1] - se_factor * se[i+1] (the last if none);
    - ``firstSEmax`` / ``globalSEmax``: with c the first local / the global maximum, the first
      i <= c with f[i] >= f[c] - se_factor * se[c].
    """
    K = f.size
    scaled = se_factor * se
    if method == "globalmax":
        return int(np.argmax(f))
    decreasing = np.flatnonzero(f[1:] <= f[:-1])
    first_max = int(decreasing[0]) if decreasing.size else K - 1
    if method == "firstmax":
        return first_max
    if method == "Tibs2001SEmax":
        hits = np.flatnonzero(f[:-1] >= f[1:] - scaled[1:])
        return int(hits[0]) if hits.size else K - 1
    if method in ("firstSEmax", "globalSEmax"):
        c = first_max if method == "firstSEmax" else int(np.argmax(f))
        return int(np.flatnonzero(f[: c + 1] >= f[c] - scaled[c])[0])
    raise ValueError(f"method = {method!r} is not one of {list(GAP_METHODS)}")


GAP = Criterion(
    name="gap",
    min_k=1,
    description="Tibshirani, Walther & Hastie's Gap statistic on the trial's sample against uniform reference sets",
    evaluate_trial=gap_statistic,
    decision=Decision(rule="gap", method="Tibs2001SEmax", se_factor=1.0),
    label="Gap(k), bars: mean s_k\n(Tibshirani, Walther & Hastie 2001)",
    outputs=("gap", "gap_sd"),
    options={"references": 20, "reference": "uniform", "d_power": 2},
    ranges={"references": integer(1, MAX_REFERENCES), "reference": choice(*REFERENCES), "d_power": choice(1, 2)},
    extra_fits=lambda options: options["references"] + 1,  # the sample and each reference set, all k
    # and W_k of each: 0.02-0.2 ms at n = 35-1,500
    seconds_per_cell=lambda options, n: (options["references"] + 1) * (2e-5 + 1e-7 * n),
)
