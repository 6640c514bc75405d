"""The consensus matrix of a set of resampled clusterings and the distribution of its entries (Monti, Tamayo,
Mesirov & Golub 2003, Sec. 3; Senbabaoglu, Michailidis & Li 2014).

Each of R resamples h clusters the items it drew; ``labels[h, i]`` is item i's cluster 0..k-1, or -1 when item i
was not drawn in resample h. With a weight w_h per resample (1 by default; a bootstrap over resamples gives the
number of times a resample was drawn), Monti et al.'s consensus matrix (Sec. 3, with the connectivity matrices
M^(h) and the indicator matrices I^(h)) is

    M(i, j) = sum_h w_h M^(h)(i, j) / sum_h w_h I^(h)(i, j),

M^(h)(i, j) = 1 when items i and j were both drawn in resample h and clustered together, I^(h)(i, j) = 1 when both
were drawn. M(i, j) is NaN where i and j were never drawn together (the ratio is 0 / 0 there); M(i, i) = 1 for
every item drawn at least once.

The consensus distribution is the empirical CDF of the entries i < j of M that are defined (Monti et al., Sec.
3.3.1; a NaN pair is no observation):

    CDF(c) = #{i < j : M(i, j) <= c} / #{i < j : M(i, j) defined},

its area A(K) (:func:`cdf_area`), Monti et al.'s relative increase Delta(K) (:func:`delta_area`) and the
proportion of ambiguous clustering PAC = CDF(u2) - CDF(u1) (:func:`pac`; Senbabaoglu et al. 2014).

Where the tools differ (their sources read: ConsensusClusterPlus 1.23's ``ccRun``, ``CDF`` and ``triangle``; M3C's
``ccRun`` and ``CDF``; the PyPI package ``consensusclustering`` 0.2.4), and what reproduces each:

- Pairs never drawn together: NaN here, left out of the CDF, PAC and the item and cluster consensus.
  ConsensusClusterPlus, M3C and ``consensusclustering`` store 0 (an unambiguous pair that never met; an item
  never drawn gets M(i, i) = 0): ``consensus_matrix(..., fill=0.0)``. With ``pItem`` = 0.8 and hundreds of
  resamples no pair is left out and the two agree.
- The CDF: over the pairs i < j, as Monti et al., ConsensusClusterPlus (``triangle(mode = 1)``) and M3C
  (``lower.tri``) take it; ``consensusclustering`` bins all N^2 entries, the diagonal's ones included.
- The area: ``cdf_area(method=)``: "monti" (the paper's sum over the sorted entries, the default), "ccp"
  (ConsensusClusterPlus's 100-bin histogram), "consensusclustering" (its 10-bin histogram). For a perfectly
  stable consensus (entries 0 and 1 only) Monti's A(K) is 1 at every K, the histogram's the share of pairs at 0
  (x 0.99, + 0.01).
- Delta(K): ``delta_area(running_max=)``: True, over the largest earlier area (Monti et al.'s eq. 7 as the R
  package coca reads it); False, over the previous area (ConsensusClusterPlus). ``consensusclustering`` indexes
  its change one order earlier and relative to the larger area.
- PAC: as M3C (``ecdf`` at x2 minus at x1) and Senbabaoglu et al.; ConsensusClusterPlus computes none and
  ``consensusclustering`` neither.
"""

from __future__ import annotations

import functools
import math
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

AreaMethod = Literal["monti", "ccp", "consensusclustering"]
AREA_METHODS: tuple[str, ...] = ("monti", "ccp", "consensusclustering")
# The one-hot blocks of the consensus matrix's product are kept below this many bytes (their number of
# columns is resamples x clusters): the (N, N) sums dominate the memory, not the blocks.
BLOCK_BYTES = 64 * 2**20
# Integer weights whose total stays below 2**24 make every partial sum an integer that float32 holds exactly,
# so the products run in single precision (twice the speed) with no rounding at all.
FLOAT32_EXACT = 2**24
# Above this many distinct weights (real weights), the weighted sums go by one general product per block instead of
# one symmetric rank update per weight.
MAX_WEIGHT_GROUPS = 16
# Up to this many items, pair_counts gathers each block of pairs' labels at once (1.5x faster at 62 items); above,
# it writes them one row of pairs at a time (the gathered copies cost more than they save at 800 items).
GATHER_ITEMS = 128


def consensus_matrix(labels: ArrayLike, *, weights: ArrayLike | None = None, fill: float = math.nan) -> NDArray[np.float64]:
    """Monti et al.'s (2003, Sec. 3) consensus matrix of R resampled clusterings.

    Parameters
    ----------
    labels : int array of shape (R, N)
        ``labels[h, i]``: the cluster 0..k-1 of item i in resample h, -1 where item i was not drawn.
    weights : array of shape (R,) or None
        w_h >= 0, each resample's weight in both sums (None: 1 each).
    fill : float
        The value where two items were never drawn together (default NaN: undefined; ConsensusClusterPlus and
        ``consensusclustering`` use 0, which also sets M(i, i) = 0 for an item never drawn).

    Returns
    -------
    M : ndarray of shape (N, N), float64
        M(i, j) = sum_h w_h [l_hi = l_hj >= 0] / sum_h w_h [l_hi >= 0 and l_hj >= 0]: symmetric, in [0, 1],
        1 on the diagonal of every item drawn (with positive weight).

    Notes
    -----
    Both sums are Gram matrices of indicator columns: the co-clustered counts are A diag(w) A^T with A the
    (N, R k) one-hot matrix of the resamples' clusters, the co-drawn counts D diag(w) D^T with D the (N, R)
    indicator of the drawn items. They are accumulated by BLAS ``syrk`` over blocks of resamples that share a
    weight (a bootstrap's weights take few values; zero weights are skipped), in float32 when the weights are
    integers summing below 2**24 (every sum is then an exact integer, so M is the exact quotient) and in float64
    otherwise (real weights: one ``gemm`` per block). Time: about R k N^2 / 2 multiply-adds; at N = 3000,
    R = 1000, k = 2..10 on two cores, 2-4 s each k, 7-8 s with the cores shared by a load of 14; memory: the
    (N, N) sums and M, 212-225 MiB at the peak for N = 3000, the one-hot blocks included (below 64 MiB each).
    """
    labels = np.asarray(labels)
    n_resamples, n_items = labels.shape
    w = np.ones(n_resamples) if weights is None else np.asarray(weights, dtype=np.float64)
    keep = w > 0
    labels, w = labels[keep], w[keep]
    clusters = int(labels.max()) + 1 if labels.size else 0
    exact = bool(np.all(w == np.round(w))) and float(w.sum()) < FLOAT32_EXACT
    dtype = np.float32 if exact else np.float64
    together = _weighted_gram(labels, w, clusters, dtype)
    drawn = _weighted_gram(np.where(labels >= 0, 0, -1), w, 1, dtype)  # a drawn item: in the one cluster 0
    with np.errstate(invalid="ignore", divide="ignore"):
        M = together.astype(np.float64) / drawn.astype(np.float64)
    M[drawn == 0] = fill
    return M


def _weighted_gram(labels: NDArray[np.integer], w: NDArray[np.float64], clusters: int,
                   dtype: type) -> NDArray[np.floating]:
    """sum_h w_h [l_hi = l_hj >= 0] for all i, j: one ``syrk`` per block of resamples sharing a weight, or, when
    the weights take many values (real weights), one ``gemm`` per block with the weights on one side."""
    n_items = labels.shape[1]
    out = np.zeros((n_items, n_items), dtype=dtype, order="F")
    if clusters == 0:
        return out
    per_block = max(1, BLOCK_BYTES // (n_items * clusters * np.dtype(dtype).itemsize))
    distinct = np.unique(w)
    if distinct.size > MAX_WEIGHT_GROUPS:
        for start in range(0, labels.shape[0], per_block):
            onehot = _onehot(labels[start:start + per_block], clusters, dtype)
            out += (onehot * np.repeat(w[start:start + per_block], clusters)) @ onehot.T
        return np.ascontiguousarray(out)
    from scipy.linalg import blas  # here, not at import: the criteria's registry must not load SciPy

    syrk = blas.ssyrk if dtype is np.float32 else blas.dsyrk
    for value in distinct:
        rows = np.flatnonzero(w == value)
        for start in range(0, rows.size, per_block):
            onehot = _onehot(labels[rows[start:start + per_block]], clusters, dtype)
            out = syrk(alpha=float(value), a=onehot, beta=1.0, c=out, overwrite_c=True, lower=0)
    return np.triu(out) + np.triu(out, 1).T


def _onehot(block: NDArray[np.integer], clusters: int, dtype: type) -> NDArray[np.floating]:
    """The (N, resamples x clusters) indicator of each item's cluster in each resample of ``block`` (column
    h k + c: cluster c of resample h), Fortran-ordered as BLAS takes it: the transpose of a row-major array."""
    matches = block[:, None, :] == np.arange(clusters, dtype=block.dtype)[None, :, None]  # -1 matches none
    return matches.reshape(-1, block.shape[1]).astype(dtype).T


def consensus_values(M: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The distinct defined entries i < j of ``M``, ascending, and how many pairs hold each.

    Parameters
    ----------
    M : ndarray of shape (N, N)

    Returns
    -------
    values : ndarray of shape (m,)
    counts : int ndarray of shape (m,)
        The consensus distribution in compact form: the CDF at ``values[t]`` is ``counts[:t + 1].sum() /
        counts.sum()``.
    """
    M = np.asarray(M, dtype=np.float64)
    upper = M[np.triu(np.ones(M.shape, dtype=bool), 1)]
    upper = upper[~np.isnan(upper)]
    values, counts = np.unique(upper, return_counts=True)
    return values, counts.astype(np.int64)


def consensus_cdf(M: ArrayLike, x: ArrayLike) -> NDArray[np.float64]:
    """Monti et al.'s (2003, Sec. 3.3.1) consensus CDF at ``x``.

    Parameters
    ----------
    M : ndarray of shape (N, N)
        A consensus matrix (:func:`consensus_matrix`).
    x : float or array of any shape
        Consensus indices.

    Returns
    -------
    cdf : ndarray of the shape of ``x``
        CDF(c) = #{i < j : M(i, j) <= c} / #{i < j : M(i, j) defined}; NaN when no pair is defined.
    """
    values, counts = consensus_values(M)
    return _cdf_at(values, counts, x)


def _cdf_at(values: NDArray[np.float64], counts: NDArray[np.int64], x: ArrayLike) -> NDArray[np.float64]:
    x = np.asarray(x, dtype=np.float64)
    total = counts.sum()
    if total == 0:
        return np.full(x.shape, np.nan)
    cumulative = np.concatenate([[0], np.cumsum(counts)])
    return cumulative[np.searchsorted(values, x, side="right")] / total


def cdf_area(M: ArrayLike, *, method: AreaMethod = "monti") -> float:
    """The area under the consensus CDF, A(K) (Monti et al. 2003, Sec. 3.3.1).

    Parameters
    ----------
    M : ndarray of shape (N, N)
        A consensus matrix.
    method : {"monti", "ccp", "consensusclustering"}
        ``"monti"`` (the paper): A(K) = sum_{i=2}^{m} (x_i - x_{i-1}) CDF(x_i) over the sorted defined entries
        x_1 <= ... <= x_m of the pairs i < j. ``"ccp"``: ConsensusClusterPlus's ``CDF()``, a histogram of the
        same entries over 100 bins of [0, 1] (R's ``hist``: right-closed, the first bin [0, 0.01]),
        A = sum_b CDF(b / 100) / 100. ``"consensusclustering"``: ``area_under_cdf`` of the PyPI package 0.2.4,
        a 10-bin histogram of all N^2 entries (diagonal included, a NaN counted as 0) between their minimum
        and maximum, A = sum_b CDF(right edge of b) x width.

    Returns
    -------
    float
        NaN when no pair is defined.

    Notes
    -----
    The three differ: "monti" is an upper Riemann sum on the exact step function, "ccp" the same on a grid of
    0.01 (an entry in (b - 1, b] / 100 counts as b / 100), "consensusclustering" reads the whole matrix (each
    pair twice, the diagonal's ones) on a grid spanning the observed range only.
    """
    if method == "consensusclustering":
        return _area_consensusclustering(np.asarray(M, dtype=np.float64))
    values, counts = consensus_values(M)
    return area_from_values(values, counts, method=method)


def area_from_values(values: NDArray[np.float64], counts: NDArray[np.int64], *,
                     method: Literal["monti", "ccp"] = "monti") -> float:
    """:func:`cdf_area` from the compact distribution of :func:`consensus_values`."""
    total = counts.sum()
    if total == 0:
        return math.nan
    if method == "monti":
        cdf = np.cumsum(counts) / total  # CDF at each distinct value; equal entries add no width
        return float(np.sum(np.diff(values) * cdf[1:]))
    breaks = np.arange(1, 101) * 0.01
    # R's hist() moves every break up by 1e-7 of the bin width so that an entry one rounding above a break
    # (seq(0, 1, by = 0.01)'s 0.07 is 0.07000000000000001) still falls in the bin the break closes
    return float(np.sum(_cdf_at(values, counts, breaks + 1e-9)) * 0.01)


def _area_consensusclustering(M: NDArray[np.float64]) -> float:
    entries = np.nan_to_num(M, nan=0.0).ravel()
    hist, bins = np.histogram(entries, density=True)
    widths = np.diff(bins)
    return float(np.sum(np.cumsum(hist) * widths * widths))


def delta_area(areas: ArrayLike, ks: ArrayLike, *, running_max: bool = True) -> NDArray[np.float64]:
    """Monti et al.'s (2003, Sec. 3.3.1, eq. 7) relative increase of the CDF area, Delta(K).

    Parameters
    ----------
    areas : ndarray of shape (K,)
        A(k) at each k of ``ks`` (NaN where unknown).
    ks : int ndarray of shape (K,)
        Ascending orders.
    running_max : bool
        True (Monti et al.): the increase over Â(k_prev) = max_{k' <= k_prev} A(k'), the largest area of the
        orders before (the area need not grow with k). False: over A(k_prev) itself, as ConsensusClusterPlus's
        ``CDF()`` computes ``deltaK``.

    Returns
    -------
    delta : ndarray of shape (K,)
        Delta(2) = A(2) (the increase from the one-cluster consensus, whose area is 0) and, at each later k,
        Delta(k) = (A(k) - Â(k_prev)) / Â(k_prev), k_prev the previous order of ``ks``: the relative gain of
        reaching k (negative when A(k) falls below an earlier area). NaN at k < 2, at a first order above 2, and
        where A(k) or every earlier area is NaN.

    Notes
    -----
    The gain is indexed by the order reached, as ConsensusClusterPlus plots it ("relative change in area under
    CDF curve" at k, against k - 1) and as the R package coca (Cabassi & Kirk 2020, ``chooseKusingAUC``) reads
    Monti et al.'s eq. 7, with the running maximum: the choice is then the last k whose gain is still appreciable.
    The PyPI package ``consensusclustering`` 0.2.4 plots (A(k + 1) - A(k)) / A(k + 1) at k instead (one order
    earlier, relative to the larger area) and decides by the knee of A(k) (``kneed``), not by Delta(k).
    """
    areas = np.asarray(areas, dtype=np.float64)
    ks = np.asarray(ks)
    delta = np.full(areas.shape, np.nan)
    valid = np.where(ks >= 2, areas, np.nan)
    # the base of each k: the largest (or, as ConsensusClusterPlus, the previous) area of the orders before it
    base = np.fmax.accumulate(valid) if running_max else valid
    for t, k in enumerate(ks):
        if k < 2:
            continue
        if t == 0 or ks[t - 1] < 2:
            if k == 2:
                delta[t] = areas[t]
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            delta[t] = (areas[t] - base[t - 1]) / base[t - 1]
    return delta


def pac(M: ArrayLike, window: tuple[float, float] = (0.1, 0.9)) -> float:
    """The proportion of ambiguous clustering (Senbabaoglu, Michailidis & Li 2014, Sci. Rep. 4:6207).

    Parameters
    ----------
    M : ndarray of shape (N, N)
        A consensus matrix.
    window : (u1, u2)
        0 <= u1 < u2 <= 1 (the paper's default: (0.1, 0.9)).

    Returns
    -------
    float
        PAC = CDF(u2) - CDF(u1): the share of defined pairs i < j with u1 < M(i, j) <= u2, in [0, 1]; NaN when no
        pair is defined. As R's ``ecdf`` in M3C and the paper's code: an entry equal to u1 is unambiguous,
        one equal to u2 ambiguous.
    """
    values, counts = consensus_values(M)
    return pac_from_values(values, counts, window)


def pac_from_values(values: NDArray[np.float64], counts: NDArray[np.int64],
                    window: tuple[float, float] = (0.1, 0.9)) -> float:
    """:func:`pac` from the compact distribution of :func:`consensus_values`."""
    low, high = _cdf_at(values, counts, [float(window[0]), float(window[1])])
    return float(high - low)


def exact_in_single(weights: ArrayLike) -> bool:
    """Whether every row of ``weights`` (B, R) holds non-negative integers summing below 2**24: then every sum of
    :func:`pair_counts` is an integer that float32 holds exactly, in any order of summation."""
    w = np.asarray(weights, dtype=np.float64)
    return bool(w.size == 0 or (np.all(w >= 0) and np.all(w == np.round(w)) and float(w.sum(axis=-1).max()) < FLOAT32_EXACT))


def pair_counts(labels: ArrayLike, weights: ArrayLike) -> NDArray[np.float32]:
    """The weighted co-clustering counts of every pair i < j under each of B weightings of the resamples, at once.

    Parameters
    ----------
    labels : int array of shape (R, N)
        ``labels[h, i]``: item i's cluster in resample h, -1 where it was not drawn.
    weights : array of shape (B, R)
        Non-negative integers, each row summing below 2**24 (:func:`exact_in_single`).

    Returns
    -------
    ndarray of shape (B, N (N - 1) / 2), float32
        Column p of the pair (i, j) = ``numpy.triu_indices(N, 1)[.][p]``: sum_h w_bh [l_hi = l_hj >= 0], an exact
        integer (the numerator of :func:`consensus_matrix`; with every label 0 where drawn, its denominator).

    Notes
    -----
    The counts of all B weightings are one matrix product, W C, with C the (R, pairs) indicator of each resample's
    co-clustered pairs (built block by block of pairs, below 64 MiB each), so a bootstrap's B replicates cost about
    B R N^2 / 2 multiply-adds instead of B R k N^2 / 2 for B separate consensus matrices of k clusters.
    """
    labels = np.asarray(labels)
    w = np.atleast_2d(np.asarray(weights, dtype=np.float32))
    used = np.flatnonzero(w.any(axis=0))  # a resample no weighting draws adds nothing
    labels, w = labels[used], np.ascontiguousarray(w[:, used])
    n_resamples, n_items = labels.shape
    # an item not drawn gets a label of its own, so equality alone says "both drawn, one cluster"
    coded = np.where(labels >= 0, labels.astype(np.int32), -1 - np.arange(n_items, dtype=np.int32))
    out = np.empty((w.shape[0], n_items * (n_items - 1) // 2), dtype=np.float32)
    if out.shape[1] == 0 or n_resamples == 0:
        out[:] = 0.0
        return out
    if n_items > GATHER_ITEMS:
        return _pair_counts_by_rows(coded, w, out)
    per_block = max(1, BLOCK_BYTES // (5 * n_resamples))  # pairs per block: their indicators, bool and float32
    items = np.ascontiguousarray(coded.T)  # (N, R): an item's labels in one row, gathered per pair
    first, second = np.triu_indices(n_items, 1)
    for start in range(0, out.shape[1], per_block):
        stop = min(start + per_block, out.shape[1])
        together = np.equal(items[first[start:stop]], items[second[start:stop]]).astype(np.float32)
        np.matmul(w, together.T, out=out[:, start:stop])
    return out


def _pair_counts_by_rows(coded: NDArray[np.int32], w: NDArray[np.float32], out: NDArray[np.float32]) -> NDArray[np.float32]:
    """:func:`pair_counts` with the indicators written one row of pairs (i, i + 1..N) at a time, into blocks."""
    n_resamples, n_items = coded.shape
    per_block = max(n_items, BLOCK_BYTES // (4 * n_resamples))  # pair columns per block (at least one row's)
    block = np.empty((n_resamples, per_block), dtype=np.float32)
    start, i = 0, 0
    while i < n_items - 1:
        width = 0
        while i < n_items - 1 and width + n_items - 1 - i <= per_block:
            np.equal(coded[:, i:i + 1], coded[:, i + 1:], out=block[:, width:width + n_items - 1 - i])
            width += n_items - 1 - i
            i += 1
        np.matmul(w, block[:, :width], out=out[:, start:start + width])
        start += width
    return out


def drawn_labels(labels: ArrayLike) -> NDArray[np.int8]:
    """``labels`` with every drawn item in cluster 0 (-1 where not drawn): its :func:`pair_counts` are the counts of
    the pairs drawn together, the consensus matrix's denominator."""
    return np.where(np.asarray(labels) >= 0, 0, -1).astype(np.int8)


def values_from_counts(together: ArrayLike, drawn: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """:func:`consensus_values` of the consensus matrix whose pairs i < j have these counts (:func:`pair_counts`),
    without the matrix: the same values and counts, bit for bit (each value is the same quotient of the same
    integers)."""
    together, drawn = np.asarray(together), np.asarray(drawn)
    defined = drawn > 0
    top = together[defined].astype(np.int64)
    bottom = drawn[defined].astype(np.int64)
    if bottom.size == 0:
        return np.empty(0), np.empty(0, dtype=np.int64)
    base = int(bottom.max()) + 1
    if base * base <= 4 * bottom.size:  # few fractions possible: count them, sort only the distinct ones
        tally = np.bincount(top * base + bottom)
        codes = np.flatnonzero(tally)
        quotients = (codes // base).astype(np.float64) / (codes % base).astype(np.float64)
        values, inverse = np.unique(quotients, return_inverse=True)
        return values, np.bincount(inverse, weights=tally[codes], minlength=values.size).astype(np.int64)
    values, counts = np.unique(top.astype(np.float64) / bottom.astype(np.float64), return_counts=True)
    return values, counts.astype(np.int64)


def matrix_from_counts(together: ArrayLike, drawn: ArrayLike, drawn_items: ArrayLike, *,
                       fill: float = math.nan) -> NDArray[np.float64]:
    """The (N, N) :func:`consensus_matrix` from the counts of its pairs i < j (:func:`pair_counts`) and the weighted
    count of each item's draws (``drawn_items``, shape (N,)): the same matrix, bit for bit."""
    return matrix_from_quotients(pair_quotients(together, drawn, fill=fill), drawn_items, fill=fill)


def pair_quotients(together: ArrayLike, drawn: ArrayLike, *, fill: float = math.nan) -> NDArray[np.float64]:
    """The consensus M(i, j) of the pairs i < j from their counts (:func:`pair_counts`; any leading shape, e.g. one
    row per weighting): together / drawn, ``fill`` where the pair was never drawn together."""
    drawn = np.asarray(drawn, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        quotient = np.asarray(together, dtype=np.float64) / drawn
    quotient[drawn == 0] = fill
    return quotient


def matrix_from_quotients(quotients: ArrayLike, drawn_items: ArrayLike, *, fill: float = math.nan) -> NDArray[np.float64]:
    """The (N, N) consensus matrix whose pairs i < j hold ``quotients`` (:func:`pair_quotients`), 1 on the diagonal
    of the items drawn (``drawn_items`` > 0), ``fill`` on the others'."""
    drawn_items = np.asarray(drawn_items)
    n_items = drawn_items.shape[0]
    M = np.empty((n_items, n_items))
    upper = _upper(n_items)
    M[upper] = quotients  # row-major order of the upper triangle: numpy.triu_indices's
    M.T[upper] = quotients
    M[np.diag_indices(n_items)] = np.where(drawn_items > 0, 1.0, fill)
    return M


@functools.lru_cache(maxsize=4)
def _upper(n_items: int) -> NDArray[np.bool_]:
    """The mask of the pairs i < j of an (N, N) matrix (read-only: shared between calls)."""
    mask = np.triu(np.ones((n_items, n_items), dtype=bool), 1)
    mask.flags.writeable = False
    return mask
