"""Comparisons between the resamples themselves, and the bootstrap over resamples that states a reduction's
Monte Carlo error."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def adjusted_rand(first: ArrayLike, second: ArrayLike) -> NDArray[np.float64]:
    """Hubert & Arabie's (1985) adjusted Rand index of many pairs of clusterings at once, each on the items both
    hold.

    Parameters
    ----------
    first, second : int arrays of shape (P, N)
        Pair p compares ``first[p]`` with ``second[p]`` on the items i where both are >= 0.

    Returns
    -------
    ndarray of shape (P,)
        ARI = (sum_ab C(n_ab, 2) - E) / ((sum_a C(a_a, 2) + sum_b C(b_b, 2)) / 2 - E), E = sum_a C(a_a, 2)
        sum_b C(b_b, 2) / C(n, 2), on the contingency table n_ab of the common items; 1 where the denominator is
        0 (both clusterings trivial and equal, as scikit-learn's ``adjusted_rand_score``), NaN with fewer than
        two common items.
    """
    first, second = np.asarray(first), np.asarray(second)
    n_pairs = first.shape[0]
    ka = max(int(first.max()) + 1, 1)
    kb = max(int(second.max()) + 1, 1)
    p, i = np.nonzero((first >= 0) & (second >= 0))
    table = np.bincount((p * ka + first[p, i]) * kb + second[p, i],
                        minlength=n_pairs * ka * kb).reshape(n_pairs, ka, kb).astype(np.float64)

    def pairs(x: NDArray[np.float64]) -> NDArray[np.float64]:
        return x * (x - 1) / 2

    n = table.sum(axis=(1, 2))
    index = pairs(table).sum(axis=(1, 2))
    rows, cols = pairs(table.sum(axis=2)).sum(axis=1), pairs(table.sum(axis=1)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = rows * cols / pairs(n)
        top = (rows + cols) / 2 - expected
        ari = np.where(top == 0, 1.0, (index - expected) / top)
    return np.where(n >= 2, ari, np.nan)


def resample_agreement(labels: ArrayLike, rng: np.random.Generator, pairs: int, *,
                       weights: ArrayLike | None = None) -> float:
    """The mean adjusted Rand index between pairs of resampled clusterings, on the items both drew.

    Parameters
    ----------
    labels : int array of shape (R, N)
        The resamples' clusterings, -1 where an item was not drawn.
    rng : numpy.random.Generator
        Draws the pairs.
    pairs : int
        How many pairs (h, h') of distinct rows to draw; every pair once (R (R - 1) / 2 of them) when that is
        fewer.
    weights : array of shape (R,) or None
        A row is drawn with probability proportional to its weight (a bootstrap replicate's counts); None:
        uniformly.

    Returns
    -------
    float
        The mean ARI (:func:`adjusted_rand`) over the pairs with at least two common items; NaN when there are
        none (fewer than two rows of positive weight).

    Notes
    -----
    Ben-Hur, Elisseeff & Guyon (2002) score stability in the same way, by the similarity of two subsamples'
    clusterings on the points they share.
    """
    labels = np.asarray(labels)
    n_rows = labels.shape[0]
    w = np.ones(n_rows) if weights is None else np.asarray(weights, dtype=np.float64)
    rows = np.flatnonzero(w > 0)
    if rows.size < 2:
        return float("nan")
    if pairs >= rows.size * (rows.size - 1) // 2 and weights is None:
        first, second = np.triu_indices(rows.size, 1)
        first, second = rows[first], rows[second]
    else:
        chance = w[rows] / w[rows].sum()
        first = rng.choice(rows, size=pairs, p=chance)
        second = rng.choice(rows, size=pairs, p=chance)
        clash = first == second
        while clash.any():  # a pair of one row with itself says nothing: draw its second row again
            second[clash] = rng.choice(rows, size=int(clash.sum()), p=chance)
            clash = first == second
    values = adjusted_rand(labels[first], labels[second])
    present = ~np.isnan(values)
    return float(values[present].mean()) if present.any() else float("nan")


def bootstrap_weights(trials: ArrayLike, rng: np.random.Generator, replicates: int) -> NDArray[np.float64]:
    """Weights of a bootstrap over resamples: each replicate draws the distinct trials with replacement.

    Parameters
    ----------
    trials : int array of shape (R,)
        The trial of each row (rows of one trial, its parts, are drawn together).
    rng : numpy.random.Generator
    replicates : int

    Returns
    -------
    ndarray of shape (replicates, R)
        Row r of replicate b weighs the number of times its trial was drawn among T draws from the T distinct
        trials (multinomial, equal chances; Efron & Tibshirani 1993, Ch. 6): integers summing to R in every
        replicate when each trial holds the same number of rows.
    """
    trials = np.asarray(trials)
    distinct, inverse = np.unique(trials, return_inverse=True)
    counts = rng.multinomial(distinct.size, np.full(distinct.size, 1.0 / distinct.size), size=replicates)
    return counts[:, inverse].astype(np.float64)
