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
What ordercube's Gap is computed over. Each trial's sample is clustered with the trial's own randomness
(log W_k per trial). The reference sets depend on the trial only through its box: reference set b is
drawn from a stream addressed by the dataset, n and b (not the trial) and clustered with a stream addressed
by the dataset, n, the method, k and b, so every trial whose sample has the same box sees the same B
reference sets, bit for bit, and the same log W*_kb. With n = every row (the default of a data file and of
``choose_k``), every trial's sample holds the same rows, so E*_n{log W*_k} and s_k are computed once, as
clusGap computes them for its one data set, instead of once per resample for no gain: a worker process
computes them once (a memo keyed by the box's bytes, n, k and the options; by the block's ks for an algorithm
that fits every k at once), the processes of one machine share them (each (b, k) fitted once), and every trial
reads them; which trial or process computes them cannot change a bit. Samples of fewer rows than the data have boxes of
their own and get reference sets of their own (the same draws, scaled to their box). The ``pca`` box is
computed from the sample's rows in a canonical (sorted) order, so that the same rows give the same bits
in any order.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.criteria.base import GAP_METHODS, Criterion, Decision, TrialSample
from ordercube.tasks.params import choice, integer
from ordercube.tasks.process_memo import shared_by_machine

REFERENCES = ("uniform", "pca")
# Each reference set costs as much as the trial's own fits: more than this is a typo, not a study.
MAX_REFERENCES = 10_000
TRIALS_PER_PROCESS = 10


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


def reference_frame(X: NDArray[np.float64], *, reference: str) -> tuple[NDArray[np.float64], ...]:
    """The box reference data are drawn in: (low, high) of ``X`` (``uniform``), or (low, high, vt, mean) of its
    rows rotated onto their principal axes (``pca``; Tibshirani et al. 2001, sec. 3, second proposal).

    The ``pca`` frame is computed from the rows in lexicographic order, so that the same rows in any order give
    the same bits (a trial's sample is a permutation of the rows of another's when both hold every row).
    """
    if reference == "uniform":
        return X.min(axis=0), X.max(axis=0)
    if reference == "pca":
        rows = X[np.lexsort(X.T[::-1])]
        mean = rows.mean(axis=0)
        _, _, vt = np.linalg.svd(rows - mean, full_matrices=False)
        rotated = (rows - mean) @ vt.T
        return rotated.min(axis=0), rotated.max(axis=0), vt, mean
    raise ValueError(f"reference = {reference!r} is not one of {list(REFERENCES)}")


def draw_reference(frame: tuple[NDArray[np.float64], ...], n: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """n points drawn uniformly over the box ``frame`` (:func:`reference_frame`), rotated back for ``pca``."""
    low, high = frame[0], frame[1]
    drawn = rng.uniform(low, high, size=(n, low.shape[0]))
    if len(frame) == 2:
        return drawn
    vt, mean = frame[2], frame[3]
    return drawn @ vt + mean


def reference_sample(X: NDArray[np.float64], rng: np.random.Generator, *, reference: str) -> NDArray[np.float64]:
    """n points drawn uniformly over the bounding box of ``X`` (``uniform``) or its principal-axes box (``pca``)."""
    return draw_reference(reference_frame(X, reference=reference), X.shape[0], rng)


def reference_dispersions(sample: TrialSample, *, references: int, reference: str,
                          d_power: int) -> NDArray[np.float64]:
    """log W*_kb of shape (references, len(ks)): B reference sets over the sample's box, each clustered at every
    k. Drawn and fitted with the sample's shared streams (the same for every trial whose sample has this box),
    computed once per process for every such trial (:meth:`TrialSample.shared`), and each reference set once per
    machine where the processes share a store (:func:`ordercube.tasks.process_memo.shared_by_machine`: on a local
    cluster of two workers each computes about half of them, where each computed all B).

    An algorithm fitted one k at a time (:attr:`TrialSample.fits_each_k`) has each (b, k) named on its own, so
    that blocks of different ks (one k per task in the pilot, a chunk's ks in the sweep) share every fit they
    have in common. An algorithm that fits every k at once has them named by its block's ks."""
    ks = list(sample.ks)
    frame = reference_frame(sample.X, reference=reference)
    n = sample.X.shape[0]
    rng = sample.shared_rng if sample.shared_rng is not None else sample.rng
    cluster = sample.shared_cluster if sample.shared_cluster is not None else sample.cluster

    def fitted(b: int, wanted: list[int]) -> NDArray[np.float64]:
        Z = draw_reference(frame, n, rng((1, b + 1, 0, 0)))
        labels = cluster(Z, wanted, (1, b + 1, 0, 0))
        return np.array([np.log(within_dispersion(Z, labels[k], d_power=d_power)) for k in wanted])

    def frozen(log_w_ref: NDArray[np.float64]) -> NDArray[np.float64]:
        log_w_ref.flags.writeable = False  # shared by every trial of the process
        return log_w_ref

    if sample.shared_rng is None or sample.shared_cluster is None:  # a sample without shared streams: its own
        return frozen(np.array([fitted(b, ks) for b in range(references)], dtype=np.float64).reshape(references, len(ks)))
    box = hashlib.blake2b(b"".join(np.ascontiguousarray(part).tobytes() for part in frame), digest_size=16).digest()

    def named(b: int, at: Any) -> str:  # a value's name on the machine: what it is a function of (not B: row b is
        # the same whatever the number of references)
        return hashlib.blake2b(repr((sample.scope, "gap", box, n, at, reference, d_power, b)).encode(),
                               digest_size=20).hexdigest()

    if not sample.fits_each_k:
        names = [named(b, tuple(ks)) for b in range(references)]
        return sample.shared(("gap", box, n, tuple(ks), references, reference, d_power), lambda: frozen(np.array(
            shared_by_machine(names, lambda b: fitted(b, ks)), dtype=np.float64).reshape(references, len(ks))))
    columns = [sample.shared(("gap", box, n, k, references, reference, d_power), lambda k=k: frozen(np.array(
        shared_by_machine([named(b, k) for b in range(references)], lambda b: fitted(b, [k])), dtype=np.float64
    ).reshape(references))) for k in ks]
    return frozen(np.stack(columns, axis=1) if columns else np.empty((references, 0)))


def gap_statistic(sample: TrialSample, *, references: int = 20, reference: str = "uniform",
                  d_power: int = 2) -> dict[str, dict[int, float]]:
    """Gap(k) and s_k of one trial's sample for every k of the block (eq. 3 and section 3, step 3): log W_k of the
    trial's own fit against the reference sets of its box (:func:`reference_dispersions`)."""
    ks = sample.ks
    observed = sample.cluster(sample.X, ks, (1, 0, 0, 0))
    log_w = {k: np.log(within_dispersion(sample.X, observed[k], d_power=d_power)) for k in ks}
    log_w_ref = reference_dispersions(sample, references=references, reference=reference, d_power=d_power)
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
    name="gap", citation="Tibshirani et al. 2001",
    min_k=1,
    description="Tibshirani, Walther & Hastie's Gap statistic on the trial's sample against uniform reference sets",
    evaluate_trial=gap_statistic,
    decision=Decision(rule="gap", method="Tibs2001SEmax", se_factor=1.0),
    label="Gap(k), bars: mean s_k", labels={"gap_sd": "s_k: standard error of Gap(k)"},
    outputs=("gap", "gap_sd"),
    options={"references": 20, "reference": "uniform", "d_power": 2},
    ranges={"references": integer(1, MAX_REFERENCES), "reference": choice(*REFERENCES), "d_power": choice(1, 2)},
    # The sample's own fit per trial; the reference sets once per worker process for every trial whose sample
    # has the same box (n = every row): spread here over the trials a process runs at the default 20 resamples
    # on 2 workers (TRIALS_PER_PROCESS), an estimate of the work, not a count.
    extra_fits=lambda options: 1 + options["references"] / TRIALS_PER_PROCESS,
    # and W_k of each: 0.02-0.2 ms at n = 35-1,500
    seconds_per_cell=lambda options, n: (1 + options["references"] / TRIALS_PER_PROCESS) * (2e-5 + 1e-7 * n),
)
