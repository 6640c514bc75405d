"""Exact k-means in one dimension: the global optimum of the k-means objective, for several k at once.

On sorted points an optimal clustering is a partition into contiguous runs, and the cost of a run is
read from prefix sums in O(1). With ``F_c(i)`` the best cost of splitting the suffix ``x[i:]`` into
``c`` runs, ``F_1(i) = C(i, n)`` and ``F_c(i) = min_{j > i} C(i, j) + F_{c-1}(j)``. The argmin is
monotone in ``i`` (the 1-D cost satisfies the quadrangle inequality), so each layer is solved by
divide and conquer in O(n log n), compiled with numba: 7.6 ms for k = 2, 3, 4 together at n = 65,536
on this project's machine, where a vectorised numpy version took 54 ms and three calls of the PyPI
``kmeans1d`` (SMAWK, C++) 170 ms.
Sorting and prefix sums are done once per sample and every layer serves every k up to the largest:
this is what Shamir & Tishby's estimator (2007, Thm. 3) needs ("k-means solutions that reach the
optimum"), where Lloyd's algorithm from a poor start does not.

Later speed-ups keep every bit of every result: a radix sort of the values from 8,192 points (3.4x numpy's
sort at 65,536), the prefix sums in one pass in ``np.cumsum``'s order, the rows of 128 candidates or more
scanned in vectorised passes (the same values, the same leftmost argmin), the labels and the 1-D
nearest-centroid predictor (:func:`nearest_centre_1d`) by branch-free counts instead of binary searches.
Together with the draw, Figure 1's trial (both halves, k = 2, 3, 4, the pairwise criterion) went from 58 to
34 ms of CPU at n = 131,072 and from 1.9 to 1.1 ms at 4,096, on this project's loaded machine
(``benchmarks/bench_kmeans1d.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit
from numpy.typing import NDArray


@njit(cache=True, nogil=True)
def _run_cost(S1: NDArray[np.float64], S2: NDArray[np.float64], i: int, j: int) -> float:
    """Sum of squared deviations from the mean of the sorted run ``x[i:j]`` (i < j)."""
    total = S1[j] - S1[i]
    return (S2[j] - S2[i]) - total * total / (j - i)


CHUNK = 512  # values per pass of a long row: 4 KiB
LONG_ROW = 128  # from this many candidates on, a row is scanned in three vectorised passes (below: one scalar loop)


@njit(cache=True, nogil=True)
def _row_values(S1: NDArray[np.float64], S2: NDArray[np.float64], previous: NDArray[np.float64], i: int, first: int,
                last: int, values: NDArray[np.float64]) -> None:
    """``values[t] = C(i, first + t) + previous[first + t]``, each with :func:`_run_cost`'s operations in its order.

    Slices and a counter from 0 leave no index to wrap around: the compiler vectorises the loop, divisions included.
    """
    low, high, tail = S1[first : last + 1], S2[first : last + 1], previous[first : last + 1]
    s1, s2, offset = S1[i], S2[i], first - i
    for t in range(last - first + 1):
        total = low[t] - s1
        values[t] = ((high[t] - s2) - total * total / (offset + t)) + tail[t]


@njit(cache=True, nogil=True)
def _smallest(values: NDArray[np.float64], count: int) -> float:
    """The smallest of ``values[:count]`` (NaN skipped; inf when none is smaller), kept in eight independent lanes.

    A minimum does not depend on the order it is taken in (of two equal values, one may be -0.0 and the other 0.0:
    the caller looks the value up with ``==``, which does not tell them apart).
    """
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = np.inf
    blocks = count // 8
    for b in range(blocks):
        t = np.uint64(8 * b)
        v0, v1, v2, v3 = values[t], values[t + 1], values[t + 2], values[t + 3]
        v4, v5, v6, v7 = values[t + 4], values[t + 5], values[t + 6], values[t + 7]
        m0 = v0 if v0 < m0 else m0
        m1 = v1 if v1 < m1 else m1
        m2 = v2 if v2 < m2 else m2
        m3 = v3 if v3 < m3 else m3
        m4 = v4 if v4 < m4 else m4
        m5 = v5 if v5 < m5 else m5
        m6 = v6 if v6 < m6 else m6
        m7 = v7 if v7 < m7 else m7
    best = np.inf
    for v in (m0, m1, m2, m3, m4, m5, m6, m7):
        best = v if v < best else best
    for t in range(8 * blocks, count):
        best = values[t] if values[t] < best else best
    return best


@njit(cache=True, nogil=True)
def _long_row(S1: NDArray[np.float64], S2: NDArray[np.float64], previous: NDArray[np.float64], i: int, first: int,
              last: int, default: int, values: NDArray[np.float64]) -> tuple[float, int]:
    """What the scalar scan ``if value < best: best, chosen = value, j`` over ``first <= j <= last`` returns: the
    smallest value and its leftmost ``j`` (``(inf, default)`` when no value is below inf).

    Chunk by chunk (``CHUNK`` values, in the first-level cache): the values, then their minimum; the first chunk
    holding the row's minimum is computed again (the same bits) and searched for its leftmost occurrence.
    """
    best, start = np.inf, -1
    for begin in range(first, last + 1, CHUNK):
        end = min(begin + CHUNK - 1, last)
        _row_values(S1, S2, previous, i, begin, end, values)
        smallest = _smallest(values, end - begin + 1)
        if smallest < best:  # strictly: an equal minimum in a later chunk is not the leftmost
            best, start = smallest, begin
    if start < 0:
        return np.inf, default
    end = min(start + CHUNK - 1, last)
    _row_values(S1, S2, previous, i, start, end, values)
    for t in range(end - start + 1):
        if values[t] == best:
            return values[t], start + t
    return np.inf, default


@njit(cache=True, nogil=True)
def _optimal_splits(S1: NDArray[np.float64], S2: NDArray[np.float64], top: int) -> NDArray[np.int64]:
    """``splits[c, i]``: where the best split of the suffix ``x[i:]`` into ``c`` runs ends its first run.

    Layers ``c = 2 .. top - 1`` are filled for every ``i`` by divide and conquer on the monotone argmin
    (leftmost on ties); the last layer is only ever read at ``i = 0``, so it is one scan. A row of at least
    ``LONG_ROW`` candidates goes through :func:`_long_row`: the same values, the same minimum, the same argmin.
    """
    n = S1.size - 1
    previous = np.empty(n + 2)  # F_{c-1}(j), infinite where fewer than c - 1 points remain
    for i in range(n):
        previous[i] = _run_cost(S1, S2, i, n)
    previous[n] = previous[n + 1] = np.inf
    current = np.empty(n + 2)
    values = np.empty(CHUNK)
    splits = np.zeros((top + 1, n + 1), dtype=np.int64)
    stack = np.empty((128, 4), dtype=np.int64)  # depth <= log2(n) + 1 per branch
    for c in range(2, top + 1):
        if c == top:
            if n - c >= LONG_ROW:
                splits[c, 0] = _long_row(S1, S2, previous, 0, 1, n - c + 1, 1, values)[1]
                break
            best, chosen = np.inf, 1
            for j in range(1, n - c + 2):
                value = _run_cost(S1, S2, 0, j) + previous[j]
                if value < best:
                    best, chosen = value, j
            splits[c, 0] = chosen
            break
        current[n - c + 1 :] = np.inf
        stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = 0, n - c, 1, n - c + 1
        depth = 1
        while depth > 0:
            depth -= 1
            lo, hi, jlo, jhi = stack[depth, 0], stack[depth, 1], stack[depth, 2], stack[depth, 3]
            mid = (lo + hi) // 2
            first = max(mid + 1, jlo)
            if first == jhi:  # one candidate (most rows deep in the recursion): the scan's result without the loop
                best, chosen = _run_cost(S1, S2, mid, jhi) + previous[jhi], jhi
                if not best < np.inf:
                    best = np.inf
            elif jhi - first >= LONG_ROW:
                best, chosen = _long_row(S1, S2, previous, mid, first, jhi, jhi, values)
            else:
                best, chosen = np.inf, jhi
                for j in range(first, jhi + 1):
                    value = _run_cost(S1, S2, mid, j) + previous[j]
                    if value < best:
                        best, chosen = value, j
            current[mid] = best
            splits[c, mid] = chosen
            if lo <= mid - 1:
                stack[depth, 0], stack[depth, 1], stack[depth, 2], stack[depth, 3] = lo, mid - 1, jlo, chosen
                depth += 1
            if mid + 1 <= hi:
                stack[depth, 0], stack[depth, 1], stack[depth, 2], stack[depth, 3] = mid + 1, hi, chosen, jhi
                depth += 1
        previous, current = current, previous
    return splits


@njit(cache=True, nogil=True)
def prefix_sums(xs: NDArray[np.float64], mean: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``S1 = [0, cumsum(xs - mean)]`` and ``S2 = [0, cumsum((xs - mean) ** 2)]`` in one pass, each sum taken as
    ``np.cumsum`` takes it (sequentially, the first term as it is), so the same bits."""
    n = xs.size
    S1, S2 = np.empty(n + 1), np.empty(n + 1)
    S1[0] = S2[0] = 0.0
    if n == 0:
        return S1, S2
    centred = xs[0] - mean
    S1[1], S2[1] = centred, centred * centred
    for i in range(1, n):
        centred = xs[i] - mean
        S1[i + 1] = S1[i] + centred
        S2[i + 1] = S2[i] + centred * centred
    return S1, S2


RADIX_FROM = 8192  # below this many points numpy's sort is faster than the radix sort's four passes (crossover ~6,000)


@njit(cache=True, nogil=True)
def _radix_sorted(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """The values of ``x`` in ascending order: an LSD radix sort, four passes of 16 bits, on keys whose unsigned
    order is the order of the doubles (sign bit set for non-negatives, every bit flipped for negatives). A NaN
    ends up first or last (by its sign bit); the caller then sorts again with numpy, which puts it last."""
    n = x.size
    top = np.uint64(1) << np.uint64(63)
    digit = np.uint64(0xFFFF)
    bits = x.view(np.uint64)
    keys = np.empty(n, dtype=np.uint64)
    counts = np.zeros((4, 65536), dtype=np.int64)
    for i in range(n):
        key = ~bits[i] if bits[i] & top else bits[i] | top
        keys[i] = key
        for p in range(4):
            counts[p, (key >> np.uint64(16 * p)) & digit] += 1
    source, target = keys, np.empty(n, dtype=np.uint64)
    for p in range(4):
        shift = np.uint64(16 * p)
        if counts[p, (keys[0] >> shift) & digit] == n:  # every key has this digit: the pass changes nothing
            continue
        total = 0
        for d in range(65536):
            count = counts[p, d]
            counts[p, d] = total
            total += count
        for i in range(n):
            d = (source[i] >> shift) & digit
            target[counts[p, d]] = source[i]
            counts[p, d] += 1
        source, target = target, source
    out = np.empty(n)
    values = out.view(np.uint64)
    for i in range(n):
        values[i] = source[i] & ~top if source[i] & top else ~source[i]
    return out


def sorted_values(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``np.sort(x)`` of a 1-D float array, by a radix sort for large ``x`` (the same values in the same order; only
    the order of -0.0 and 0.0, which compare equal, may differ, and it changes neither the prefix sums' costs nor
    any label)."""
    if x.size < RADIX_FROM:
        return np.sort(x)
    xs = _radix_sorted(x)
    return np.sort(x) if np.isnan(xs[0]) or np.isnan(xs[-1]) else xs


@njit(cache=True, nogil=True)
def _count_edges_at_or_below(edges: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.int64]:
    """For each point, how many of the few ascending ``edges`` are <= it: ``np.searchsorted(edges, x,
    side="right")`` for NaN-free ``x``."""
    out = np.empty(x.size, dtype=np.int64)
    for i in range(x.size):
        count = 0
        for edge in edges:
            count += edge <= x[i]
        out[i] = count
    return out


def _labels_between(edges: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.int64]:
    """The run of each point of ``x`` between the ascending ``edges`` (``searchsorted``, side right)."""
    if edges.size <= 8 and not np.isnan(x).any():
        return _count_edges_at_or_below(edges, x)
    return np.searchsorted(edges, x, side="right").astype(np.int64)


@njit(cache=True, nogil=True)
def _nearest_centre(x: NDArray[np.float64], labels: NDArray[np.int64], k: int, new: NDArray[np.float64],
                    out: NDArray[np.int64]) -> bool:
    """Fills ``out`` with the nearest cluster mean's label of every point of ``new``; False (``out`` unspecified) when
    a label lies outside ``0..k-1`` or a mean is not finite, for the caller to take the general route."""
    counts = np.zeros(k, dtype=np.int64)
    sums = np.zeros(k)
    for i in range(x.size):  # in the points' order, as np.bincount adds its weights
        c = labels[i]
        if c < 0 or c >= k:
            return False
        counts[c] += 1
        sums[c] += x[i]
    present = np.flatnonzero(counts)
    p = present.size
    centres = np.empty(p)
    for q in range(p):
        centres[q] = sums[present[q]] / counts[present[q]]
        if not np.isfinite(centres[q]):
            return False
    order = np.arange(p)  # a stable insertion sort: np.argsort(kind="stable") of a few finite values
    for a in range(1, p):
        moving, b = order[a], a - 1
        while b >= 0 and centres[order[b]] > centres[moving]:
            order[b + 1] = order[b]
            b -= 1
        order[b + 1] = moving
    ends = np.empty(p - 1)
    for e in range(p - 1):
        ends[e] = (centres[order[e + 1]] + centres[order[e]]) / 2
    cell = present[order]
    few = p <= 9  # count the ends below each point without a branch; binary search among many
    for i in range(new.size):
        v = new[i]
        if v != v:  # NaN: after every end, as np.searchsorted places it
            out[i] = cell[p - 1]
            continue
        # the ends below v: np.searchsorted(ends, v) (side left) of ascending ends
        if few:
            position = 0
            for end in ends:
                position += end < v
        else:
            position, hi = 0, p - 1
            while position < hi:
                middle = (position + hi) // 2
                if ends[middle] < v:
                    position = middle + 1
                else:
                    hi = middle
        out[i] = cell[position]
    return True


def nearest_centre_1d(x: NDArray[np.float64], labels: NDArray[np.int64], k: int,
                      new: NDArray[np.float64]) -> NDArray[np.int64] | None:
    """The nearest-centroid predictor in one dimension, compiled: the labels
    :func:`ordercube.tasks.predictors.nearest_centroid` gives, bit for bit (the means summed in the points' order,
    equal centres kept in label order, a point on a midpoint to the left cell).

    Parameters
    ----------
    x : ndarray of shape (n_train,)
    labels : ndarray of shape (n_train,)
    k : int
    new : ndarray of shape (n_new,)

    Returns
    -------
    ndarray of shape (n_new,), or None when a label lies outside ``0..k-1`` or a mean is not finite (the caller's
    general route handles those).
    """
    out = np.empty(new.shape[0], dtype=np.int64)
    return out if _nearest_centre(x, labels.astype(np.int64, copy=False), k, new, out) else None


def kmeans_1d_exact(x: NDArray[np.float64], ks: Sequence[int]) -> dict[int, NDArray[np.int64]]:
    """Optimal k-means labels of the 1-D points ``x`` for every k in ``ks``.

    Parameters
    ----------
    x : ndarray of shape (n,) or (n, 1)
    ks : sequence of int
        Each with ``1 <= k <= n``.

    Returns
    -------
    dict mapping k to labels of shape (n,)
        Clusters are numbered from left to right.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    n = x.size
    xs = sorted_values(x)  # values only: faster than argsort, which is needed only for rare ties
    S1, S2 = prefix_sums(xs, x.mean())  # centred: smaller prefix sums, fewer digits lost in the differences
    splits = _optimal_splits(S1, S2, max(ks))
    labels = {}
    for k in ks:
        bounds, i = [0], 0
        for c in range(k, 1, -1):
            i = int(splits[c][i])
            bounds.append(i)
        starts = np.array(bounds[1:], dtype=np.int64)
        if np.all(xs[starts - 1] < xs[starts]):  # every split lies between two distinct values
            labels[k] = _labels_between(xs[starts], x)
        else:  # equal values on both sides of a split: place them by their sorted positions
            order = np.argsort(x, kind="stable")
            labels[k] = np.empty(n, dtype=np.int64)
            labels[k][order] = np.repeat(np.arange(k), np.diff([*bounds, n]))
    return labels


def within_cluster_sum_of_squares(x: NDArray[np.float64], labels: NDArray[np.int64]) -> float:
    """The k-means objective of ``labels`` on the 1-D points ``x``."""
    x = np.asarray(x, dtype=np.float64).ravel()
    counts = np.bincount(labels)
    sums = np.bincount(labels, weights=x)
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    return float(((x - means[labels]) ** 2).sum())


def exact_labels(X: NDArray[np.float64], k: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """The registry's ``cluster`` for ``kmeans_1d_exact`` (deterministic: ``rng`` is unused)."""
    return kmeans_1d_exact(X, [k])[k]


def kmeans_1d_exact_many(X: NDArray[np.float64], ks: list[int], rng: np.random.Generator) -> dict[int, NDArray[np.int64]]:
    """The registry's ``cluster_many`` for ``kmeans_1d_exact``: every k from one sort."""
    return kmeans_1d_exact(X, ks)
