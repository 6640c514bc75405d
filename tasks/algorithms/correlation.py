"""Correlation clustering of signed graphs by annealed Gibbs sampling, with the paper's transfer rule.

Frank, Chehreghani & Buhmann (2011), "The Minimum Transfer Cost Principle for Model-Order Selection",
Sec. 6.

Graphs
------
A graph on n nodes is a symmetric weight matrix ``W`` of shape (n, n), float64, zero diagonal, weights in
[-1, 1]; ``W[i, j] = 0`` means no edge. The paper's graphs (Sec. 6, :func:`signed_graph`) are complete
with weights +-1.

Cost, eq. (8)
---------------------
``R(s, W) = sum_{i<j, s_i = s_j, W_ij != 0} (1 - W_ij)/2 + sum_{i<j, s_i != s_j, W_ij != 0} (1 + W_ij)/2``,
for +-1 weights the number of negative intra-cluster plus positive inter-cluster edges. With
``|E|`` the number of edges, ``W_tot = sum_{i<j} W_ij`` and ``W_in(s) = sum_{i<j, s_i = s_j} W_ij``,

    R(s, W) = (|E| + W_tot) / 2 - W_in(s),

so minimising R is maximising the weight inside clusters.

Transfer, eqs. (9)-(10)
-----------------------------------
A node i with edges to nodes j labelled by s (a training node's own graph, or a new node's cross edges to
the training nodes) has, summing over edges only (``W_ij != 0``) and writing
``S_iv = sum_{j: s_j = v} W_ij``, ``m_iv`` the number of edges from i into cluster v, ``S_i = sum_v S_iv``
and ``m_i = sum_v m_iv``:

    H(i, v) = -1/2 sum_{j in s_v} (W_ij - 1) + 1/2 sum_{u != v} sum_{j in s_u} (W_ij + 1)
            = -1/2 (S_iv - m_iv) + 1/2 ((S_i - S_iv) + (m_i - m_iv))
            = (S_i + m_i) / 2 - S_iv.

The first term does not depend on v, so ``argmin_v H(i, v) = argmax_v S_iv``. An edge of weight 0 adds 1/2
to H(i, v) for every v (whichever side of it i falls), and to R a constant 1/2 whatever the labels, so an
edge of weight 0 and no edge are the same up to a constant that does not depend on the labels; S never
sees either. Empty clusters take part with ``S_iv = 0``: a node whose edges are mostly negative opens a new
cluster, which is how the sampler leaves the extra clusters of a large k empty (Sec. 6).

Sampler (details the paper leaves open)
---------------------------------------
Moving node i from cluster a to v changes R by ``S_ia - S_iv`` (``S_iv`` without i itself; the diagonal is
zero), so ``P(s_i = v | rest) ∝ exp(-H(i, v) / T) ∝ exp((S_iv - max_u S_iu) / T)`` is the Gibbs
conditional of the Boltzmann distribution ``exp(-R(s) / T)``: sweeps of it at falling T anneal R. Each
restart starts from labels uniform in 0..k-1, sweeps the nodes in index order at
``T = start_temperature * n, x cooling`` per sweep while ``T >= final_temperature``
(:func:`temperature_schedule`; n = 450: 80 sweeps from T = 45), then moves each node to its best cluster
(ties: keep the current one if it is among the best, else the smallest index) until a sweep moves none.
The restart of lowest R is kept (ties: the first).

The compiled kernel keeps the table of all S_iv (stored as k rows of n, so that the O(n) update when a node
moves runs along contiguous rows) and a visit costs O(k). All random numbers are drawn beforehand from the
caller's Generator (the initial labels, then one uniform per annealing visit), so a result is a function of
the Generator's state alone.
:func:`gibbs_reference` is the same sampler written plainly (a numpy row sum per visit) and consumes the
same numbers in the same order; the two agree bit for bit whenever the sums S are exact in floating point
(+-1 weights, or any weights on a grid of 2**-m), since the table adds them up in another order.

Measured (``benchmarks/bench_correlation.py``, this project's 2-core machine while another test run kept
it busy, three runs; one half of the experiment: 450 nodes, 3 clusters of 150, q = 0.3, p = 0.8,
k = 1..10, 10 restarts each, 100 runs of the sampler): compiled 0.31-0.41 s for all of it, 3.1-4.1 ms per
(k, restart), from 1 ms at k = 1 to 5 ms at k = 10 (the k Boltzmann weights of each visit dominate; the
vectorised O(n) moves cost under a sixth); the plain reference 40-46 s (2 restarts per k, scaled by 5),
0.40-0.46 s per (k, restart): a ratio of 110-150.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit
from numpy.typing import NDArray

UNDERFLOW = -746.0  # exp(x) rounds to 0.0 below -745.14: skipping the call changes no bit
# Each zero-temperature move raises W_in strictly, so in exact arithmetic the sweeps end long before this cap.
MAX_ZERO_TEMPERATURE_SWEEPS = 1000


@dataclass(frozen=True)
class GibbsResult:
    """The best of the restarts of the annealed Gibbs sampler, and the spread over restarts.

    Attributes
    ----------
    labels : ndarray of shape (n_nodes,)
        Labels in 0..k-1 of the restart with the lowest cost (the first on ties); some clusters may be empty.
    cost : float
        Its cost, eq. (8).
    restart_costs : ndarray of shape (restarts,)
        The cost of every restart.
    restart_converged : ndarray of shape (restarts,), bool
        Whether the restart's zero-temperature sweeps ended with a sweep that moved no node (False: they
        stopped at the cap).
    """

    labels: NDArray[np.int64]
    cost: float
    restart_costs: NDArray[np.float64]
    restart_converged: NDArray[np.bool_]

    @property
    def k_effective(self) -> int:
        """The number of non-empty clusters of ``labels``."""
        return k_effective(self.labels)


@njit(cache=True, nogil=True)
def _cost(W: NDArray[np.float64], labels: NDArray[np.int64]) -> float:
    """Eq. (8) over the upper triangle, row by row."""
    n = W.shape[0]
    total = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            weight = W[i, j]
            if weight != 0.0:
                if labels[i] == labels[j]:
                    total += (1.0 - weight) * 0.5
                else:
                    total += (1.0 + weight) * 0.5
    return total


def correlation_cost(W: NDArray[np.floating], labels: NDArray[np.integer]) -> float:
    """The correlation-clustering cost, eq. (8), each undirected edge counted once.

    Parameters
    ----------
    W : ndarray of shape (n, n)
        Symmetric weights in [-1, 1], 0 meaning no edge; only the upper triangle is read.
    labels : ndarray of shape (n,)
        Any integer labels.

    Returns
    -------
    float
        ``sum`` over intra-cluster edges of ``(1 - W_ij)/2`` plus over inter-cluster edges of
        ``(1 + W_ij)/2``: for +-1 weights, negative intra- plus positive inter-cluster edges.
    """
    W = np.ascontiguousarray(W, dtype=np.float64)
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or labels.shape != W.shape[:1]:
        raise ValueError(f"W and labels: expected shapes (n, n) and (n,), got {W.shape} and {labels.shape}")
    return float(_cost(W, labels))


def k_effective(labels: NDArray[np.integer]) -> int:
    """The number of non-empty clusters (distinct values) of ``labels``, shape (n,)."""
    return int(np.unique(labels).size)


def transfer_labels(
    W_cross: NDArray[np.floating], labels_train: NDArray[np.integer], k: int
) -> NDArray[np.int64]:
    """Labels of new nodes from their edges to labelled training nodes, eqs. (9)-(10).

    ``argmin_v H(i', s_v) = argmax_v sum_{j: labels_train[j] = v} W_cross[i', j]`` (module docstring); an
    empty training cluster competes with sum 0, and ties go to the smallest v, so the result is
    deterministic.

    Parameters
    ----------
    W_cross : ndarray of shape (n_new, n_train)
        Weights in [-1, 1] of the edges from each new node to each training node, 0 meaning no edge.
    labels_train : ndarray of shape (n_train,)
        Training labels in 0..k-1.
    k : int
        The number of clusters, >= 1.

    Returns
    -------
    ndarray of shape (n_new,)
        Labels in 0..k-1, int64.
    """
    W_cross = np.asarray(W_cross, dtype=np.float64)
    labels_train = np.asarray(labels_train)
    if W_cross.ndim != 2 or labels_train.shape != W_cross.shape[1:]:
        raise ValueError(f"W_cross and labels_train: expected shapes (n_new, n_train) and (n_train,), "
                         f"got {W_cross.shape} and {labels_train.shape}")
    _check_labels(labels_train, k, "labels_train")
    sums = np.zeros((W_cross.shape[0], k))
    for v in range(k):  # column sums per cluster (not a matrix product, whose rounding may follow the BLAS threads)
        sums[:, v] = W_cross[:, labels_train == v].sum(axis=1)
    return np.argmax(sums, axis=1).astype(np.int64)


def temperature_schedule(
    n: int, *, start_temperature: float = 0.1, cooling: float = 0.9, final_temperature: float = 0.01
) -> NDArray[np.float64]:
    """The annealing temperatures, one per sweep: ``start_temperature * n`` times ``cooling`` per sweep,
    while at least ``final_temperature``; shape (sweeps,), empty if the start is already below it."""
    temperatures = []
    temperature = start_temperature * n
    while temperature >= final_temperature:
        temperatures.append(temperature)
        temperature *= cooling
    return np.array(temperatures, dtype=np.float64)


@njit(cache=True, nogil=True)
def _move(W: NDArray[np.float64], S: NDArray[np.float64], i: int, source: int, target: int) -> None:
    """Update the table ``S[v, j] = sum_{l: label l = v} W[j, l]`` for node i moving ``source`` -> ``target``
    (W is symmetric: row i holds the column; both rows of S are contiguous, so the loop vectorises)."""
    removed, added, row = S[source], S[target], W[i]
    for j in range(row.size):
        removed[j] -= row[j]
        added[j] += row[j]


@njit(cache=True, nogil=True)
def _gibbs_restarts(W: NDArray[np.float64], k: int, temperatures: NDArray[np.float64], uniforms: NDArray[np.float64],
                    labels: NDArray[np.int64], costs: NDArray[np.float64], converged: NDArray[np.bool_],
                    max_zero_sweeps: int) -> None:
    """Anneal every restart in place: ``labels`` (restarts, n) holds the initial labels on entry, the final ones
    on return; ``uniforms`` has shape (restarts, sweeps, n); ``costs`` and ``converged`` shape (restarts,)."""
    n = W.shape[0]
    S = np.empty((k, n))  # S[v, i]: the weight from node i into cluster v
    weights = np.empty(k)
    for r in range(labels.shape[0]):
        s = labels[r]
        S[:] = 0.0
        for i in range(n):
            for j in range(n):
                S[s[j], i] += W[i, j]
        for t in range(temperatures.size):
            temperature = temperatures[t]
            for i in range(n):
                top = S[0, i]
                for v in range(1, k):
                    top = max(top, S[v, i])
                total = 0.0
                for v in range(k):
                    exponent = (S[v, i] - top) / temperature
                    weights[v] = math.exp(exponent) if exponent > UNDERFLOW else 0.0
                    total += weights[v]
                threshold = uniforms[r, t, i] * total
                chosen, cumulative = k - 1, 0.0
                for v in range(k):
                    cumulative += weights[v]
                    if cumulative > threshold:
                        chosen = v
                        break
                if chosen != s[i]:
                    _move(W, S, i, s[i], chosen)
                    s[i] = chosen
        converged[r] = False
        for _ in range(max_zero_sweeps):
            moved = False
            for i in range(n):
                best, chosen = -np.inf, 0
                for v in range(k):
                    if S[v, i] > best:
                        best, chosen = S[v, i], v
                if S[s[i], i] < best:
                    _move(W, S, i, s[i], chosen)
                    s[i] = chosen
                    moved = True
            if not moved:
                converged[r] = True
                break
        costs[r] = _cost(W, s)


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k: expected an integer >= 1, got {k!r}")
    return int(k)


def _check_labels(labels: NDArray[np.integer], k: int, name: str) -> None:
    _check_k(k)
    if labels.size and (labels.min() < 0 or labels.max() >= k):
        raise ValueError(f"{name}: expected labels in 0..{k - 1} (k = {k}), got {labels.min()}..{labels.max()}")


def _check_graph(W: NDArray[np.floating]) -> NDArray[np.float64]:
    W = np.ascontiguousarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 1:
        raise ValueError(f"W: expected a square weight matrix of shape (n, n), n >= 1, got shape {W.shape}")
    if not np.all(np.abs(W) <= 1.0):
        raise ValueError("W: expected finite weights in [-1, 1], got "
                         f"{np.nanmin(W)}..{np.nanmax(W)}{' and NaN' if np.isnan(W).any() else ''}")
    if np.any(np.diag(W) != 0.0) or not np.array_equal(W, W.T):
        raise ValueError("W: expected a symmetric matrix with zero diagonal (an undirected graph without self-loops); "
                         "symmetrise it, e.g. (W + W.T) / 2, and zero its diagonal")
    return W


def _draws(n: int, k: int, rng: np.random.Generator, restarts: int,
           temperatures: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The initial labels (restarts, n), then one uniform per annealing visit (restarts, sweeps, n)."""
    if isinstance(restarts, bool) or not isinstance(restarts, int | np.integer) or restarts < 1:
        raise ValueError(f"restarts: expected an integer >= 1, got {restarts!r}")
    initial = rng.integers(k, size=(restarts, n), dtype=np.int64)
    uniforms = rng.random((restarts, temperatures.size, n))
    return initial, uniforms


def _schedule(n: int, start_temperature: float, cooling: float, final_temperature: float) -> NDArray[np.float64]:
    if not (start_temperature > 0.0 and final_temperature > 0.0 and 0.0 < cooling < 1.0):
        raise ValueError("start_temperature, cooling, final_temperature: expected > 0, in (0, 1), > 0, got "
                         f"{start_temperature}, {cooling}, {final_temperature}")
    return temperature_schedule(n, start_temperature=start_temperature, cooling=cooling,
                                final_temperature=final_temperature)


def _best(labels: NDArray[np.int64], costs: NDArray[np.float64], converged: NDArray[np.bool_]) -> GibbsResult:
    best = int(np.argmin(costs))
    return GibbsResult(labels=labels[best].copy(), cost=float(costs[best]), restart_costs=costs,
                       restart_converged=converged)


def correlation_gibbs_restarts(
    W: NDArray[np.floating], k: int, rng: np.random.Generator, *, restarts: int = 10,
    start_temperature: float = 0.1, cooling: float = 0.9, final_temperature: float = 0.01,
    max_zero_sweeps: int = MAX_ZERO_TEMPERATURE_SWEEPS,
) -> GibbsResult:
    """Correlation clustering of ``W`` by annealed Gibbs sampling (module docstring), compiled.

    Parameters
    ----------
    W : ndarray of shape (n, n)
        Symmetric weights in [-1, 1], zero diagonal, 0 meaning no edge.
    k : int
        The number of labels, >= 1 (an upper bound on the number of clusters: some may stay empty).
    rng : numpy.random.Generator
        Draws ``restarts * n`` initial labels, then ``restarts * sweeps * n`` uniforms (8 bytes each, held at
        once: 2.9 MB for n = 450 and 10 restarts).
    restarts : int
        Independent runs from random labels; the one of lowest cost is returned.
    start_temperature, cooling, final_temperature : float
        The schedule of :func:`temperature_schedule`: ``start_temperature * n``, times ``cooling`` per sweep,
        while ``>= final_temperature``.
    max_zero_sweeps : int
        Cap on the zero-temperature sweeps that follow the annealing.

    Returns
    -------
    GibbsResult
    """
    W, k = _check_graph(W), _check_k(k)
    n = W.shape[0]
    temperatures = _schedule(n, start_temperature, cooling, final_temperature)
    labels, uniforms = _draws(n, k, rng, restarts, temperatures)
    costs = np.empty(restarts)
    converged = np.empty(restarts, dtype=np.bool_)
    _gibbs_restarts(W, k, temperatures, uniforms, labels, costs, converged, int(max_zero_sweeps))
    return _best(labels, costs, converged)


def correlation_gibbs(
    W: NDArray[np.floating], k: int, rng: np.random.Generator, *, restarts: int = 10,
    start_temperature: float = 0.1, cooling: float = 0.9, final_temperature: float = 0.01,
) -> NDArray[np.int64]:
    """The labels, shape (n,), of :func:`correlation_gibbs_restarts` (the registry's ``cluster``)."""
    return correlation_gibbs_restarts(W, k, rng, restarts=restarts, start_temperature=start_temperature,
                                      cooling=cooling, final_temperature=final_temperature).labels


def gibbs_reference(
    W: NDArray[np.floating], k: int, rng: np.random.Generator, *, restarts: int = 10,
    start_temperature: float = 0.1, cooling: float = 0.9, final_temperature: float = 0.01,
    max_zero_sweeps: int = MAX_ZERO_TEMPERATURE_SWEEPS,
) -> GibbsResult:
    """:func:`correlation_gibbs_restarts` written plainly, without numba: the tests' and benchmark's baseline.

    Same parameters, random numbers and tie rules; each visit sums node i's row per cluster afresh
    (``numpy.bincount``) instead of keeping a table. The Boltzmann weights use ``math.exp``, as the compiled
    loop does: numpy's SIMD ``exp`` differs from the C library's in the last bit for about 5% of arguments on
    AVX-512 machines, which would let a draw fall on the other side of a cumulative weight now and then.
    """
    W, k = _check_graph(W), _check_k(k)
    n = W.shape[0]
    temperatures = _schedule(n, start_temperature, cooling, final_temperature)
    labels, uniforms = _draws(n, k, rng, restarts, temperatures)
    costs = np.empty(restarts)
    converged = np.zeros(restarts, dtype=np.bool_)
    for r in range(restarts):
        s = labels[r]
        for t, temperature in enumerate(temperatures):
            for i in range(n):
                sums = np.bincount(s, weights=W[i], minlength=k)
                top = sums.max()
                cumulative = np.cumsum([math.exp((value - top) / temperature) for value in sums])
                drawn = np.searchsorted(cumulative, uniforms[r, t, i] * cumulative[-1], side="right")
                s[i] = min(int(drawn), k - 1)
        for _ in range(max_zero_sweeps):
            moved = False
            for i in range(n):
                sums = np.bincount(s, weights=W[i], minlength=k)
                if sums[s[i]] < sums.max():
                    s[i] = int(np.argmax(sums))
                    moved = True
            if not moved:
                converged[r] = True
                break
        costs[r] = correlation_cost(W, s)
    return _best(labels, costs, converged)


# The engine's view of a graph (Frank et al. 2011, Sec. 6): the objects are nodes, and a trial's half is the block of
# rows of its nodes, with the columns of its own nodes first and then the other half's, so that a half's own
# graph is its leading square block and its edges to the other half are the columns after it. Nothing in the
# engine knows: a graph algorithm reads the leading block, the transfer reads the trailing columns.


def own_graph(half: NDArray[np.float64]) -> NDArray[np.float64]:
    """The graph among a half's own nodes: its leading square block, shape (m, m)."""
    return half[:, : half.shape[0]]


def gibbs_on_half(X: NDArray[np.float64], k: int, rng: np.random.Generator, *, restarts: int = 10,
                  start_temperature: float = 0.1, cooling: float = 0.9,
                  final_temperature: float = 0.01) -> NDArray[np.int64]:
    """The registry's ``cluster`` for ``correlation_gibbs``: the sampler on a half's own graph."""
    return correlation_gibbs(own_graph(X), k, rng, restarts=restarts, start_temperature=start_temperature,
                             cooling=cooling, final_temperature=final_temperature)


def gibbs_fit_on_half(X: NDArray[np.float64], k: int, rng: np.random.Generator, *, restarts: int = 10,
                      start_temperature: float = 0.1, cooling: float = 0.9,
                      final_temperature: float = 0.01) -> tuple[NDArray[np.int64], GibbsResult]:
    """The registry's ``fit``: the labels of :func:`gibbs_on_half` and the restarts they come from."""
    result = correlation_gibbs_restarts(own_graph(X), k, rng, restarts=restarts, start_temperature=start_temperature,
                                        cooling=cooling, final_temperature=final_temperature)
    return result.labels, result


def graph_transfer(X_train: NDArray[np.float64], labels: NDArray[np.int64], k: int,
                   X_new: NDArray[np.float64]) -> NDArray[np.int64]:
    """The predictor of eqs. (9)-(10): new nodes labelled through their edges to the training half's nodes (the
    trailing ``len(X_train)`` columns of ``X_new``, in the training half's order)."""
    return transfer_labels(X_new[:, X_new.shape[1] - X_train.shape[0]:], labels, k)
