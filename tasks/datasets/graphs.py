"""Signed graphs with planted clusters (Frank, Chehreghani & Buhmann 2011, Sec. 6): the ``signed_graph`` dataset's
sampler, a complete graph whose nodes are the objects of correlation clustering."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray


def signed_graph(
    sizes: Sequence[int], q: float, p: float, rng: np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """A complete signed graph with planted clusters (Sec. 6).

    Intra-cluster edges get +1 and inter-cluster edges -1; each inter-cluster edge is then set to +1 with
    probability ``q``; then each edge is, with probability ``p``, replaced by +1 or -1 with probability 1/2
    each. Three arrays of uniforms over the upper triangle (row-major, ``i < j``) are drawn in this order:
    flips, replacements, signs; the lower triangle mirrors it.

    Parameters
    ----------
    sizes : sequence of int
        The cluster sizes, each >= 1; nodes are numbered cluster by cluster.
    q : float
        Probability in [0, 1] of turning an inter-cluster edge positive ("structure complexity").
    p : float
        Probability in [0, 1] of replacing an edge by a random sign ("noise").
    rng : numpy.random.Generator

    Returns
    -------
    W : ndarray of shape (n, n)
        Symmetric, float64, weights +-1 off the diagonal, zero diagonal; ``n = sum(sizes)``.
    labels : ndarray of shape (n,)
        The planted clusters 0..len(sizes)-1, int64.
    """
    sizes = [int(size) for size in sizes]
    if not sizes or min(sizes) < 1:
        raise ValueError(f"sizes: expected at least one cluster size, each >= 1, got {sizes}")
    for name, value in (("q", q), ("p", p)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name}: expected a probability in [0, 1], got {value}")
    labels = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    n = labels.size
    upper_i, upper_j = np.triu_indices(n, 1)
    flipped = rng.random(upper_i.size) < q
    replaced = rng.random(upper_i.size) < p
    positive = rng.random(upper_i.size) < 0.5
    inside = labels[upper_i] == labels[upper_j]
    weights = np.where(inside | flipped, 1.0, -1.0)
    weights[replaced] = np.where(positive[replaced], 1.0, -1.0)
    W = np.zeros((n, n))
    W[upper_i, upper_j] = weights
    W[upper_j, upper_i] = weights
    return W, labels


def planted_graph(n: int, rng: np.random.Generator, *, clusters: int = 3, q: float = 0.3,
                  p: float = 0.7) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """The synthetic dataset ``signed_graph``: :func:`signed_graph` on ``n`` nodes in ``clusters`` clusters of
    equal size (the first ``n % clusters`` one node larger); rows are nodes, the matrix is the graph."""
    sizes = [n // clusters + (1 if c < n % clusters else 0) for c in range(clusters)]
    return signed_graph([size for size in sizes if size > 0], q, p, rng)  # fewer nodes than clusters: a config check
