"""Boolean matrix factorisation by GreConD, and the transfer cost of a Boolean factorisation (Frank et al. 2011, Sec. 5).

**The algorithm.** GreConD (Belohlavek & Vychodil, "Discovery of optimal factors in binary data via a novel
method of matrix decomposition", J. Comput. Syst. Sci. 76(1), 2010, 3-20, Fig. 2) factorises a 0/1 matrix
``X`` (n users x d permissions) as ``X ≈ Z ∘ U``, ``(Z ∘ U)_ij = OR_t (Z_it AND U_tj)``, with formal
concepts as factors. With ``A↑`` the permissions every user of ``A`` holds and ``B↓`` the users who hold
every permission of ``B``, a concept is a pair ``(C, D)`` with ``C = D↓`` and ``D = C↑``: a maximal
all-ones rectangle of ``X``. Factors are added one at a time; each is grown greedily from ``D = ∅``:
while some permission ``j ∉ D`` makes the concept ``((D ∪ {j})↓, (D ∪ {j})↓↑)`` cover more of the still
uncovered ones of ``X`` than the current one, take the best such ``j`` (the lowest index on ties) and set
``D = (D ∪ {j})↓↑``. The concept ``(D↓, D)`` is the next factor (a column of ``Z``, a row of ``U``); its
cells leave the uncovered set. This repeats until every one is covered or ``k_max`` factors exist.
Because every factor is an all-ones rectangle of ``X``, the factorisation is *from below*: ``Z ∘ U``
never covers a 0 of ``X``, for any prefix of the factors. One run gives the factorisations of every
``k <= k_max`` as prefixes: the first ``k`` factors. When everything is covered before ``k_max``, fewer
factors are returned, and a caller asking for a larger ``k`` gets the same (exact) factorisation:
:func:`boolean_product` and :func:`bmf_transfer_costs` use all the factors for such ``k``.

Candidates are all permissions not in ``D``, as in the paper's pseudo-code (the MATLAB code of the
authors' group tries only permissions that still have an uncovered one: a speed-up that can pick a
different concept, since a covered permission can close to a larger uncovered rectangle). The compiled
kernel prunes a candidate when the uncovered ones in its extent's rows cannot beat the best value found
so far; this bound is exact, so the factors are those of the plain algorithm, which
:func:`greconD_numpy` computes by matrix products (all candidates of a step at once); the tests compare
the two.

**Deviation from the paper.** Frank, Chehreghani & Buhmann (2011, Sec. 5) fit the factors by maximising
the likelihood of Streich et al.'s multi-assignment clustering (MAC): a probabilistic OR model (each role
leaves a permission unemitted with probability β_tj, plus a mixture noise of rate ε) fitted by
deterministic annealing, with Boolean U = 1{β < ½}. MAC has no public code; GreConD is a deterministic,
noise-free covering heuristic that never sets a bit that ``X`` lacks (no over-covering), whereas MAC's
roles can cover a 0 of the training matrix when that explains the other users better. GreConD's factors
for k come from greedy rectangle covering, not from a likelihood, and its sequence of models is nested
(MAC refits for every k). The transfer cost is the paper's (Sec. 5) unchanged: a test user ``x'`` is
mapped to its nearest training user ``i`` in Hamming distance (the lowest index on ties) and pays
``sum_j |x'_j - OR_{t<=k} (Z_it AND U_tj)|`` bits; :func:`bmf_transfer_costs` averages this over the test
users. Record the fitting algorithm as a deviation from the paper; (d3), k̂ = 248, is not expected from it.
Because GreConD reproduces its training rows exactly once it has covered them, the cost at k >= the
number of factors is the mean Hamming distance of the test users to their neighbours; on the real
substitutes the benchmark finds the curve falling to that floor without an interior minimum, so (d1)
can fail for this fitting algorithm rather than for the principle.

**Measured** (``benchmarks/bench_boolean_mf.py``; 2-core machine under other jobs' load, numpy with one
BLAS thread): on 2,400 x 500 training users of density 0.05 (60 planted roles, 1 % of zeros set, 2 % of
ones cleared), GreConD up to k = 400 takes 0.39 s compiled against 44-59 s for :func:`greconD_numpy` (113-152x;
identical factors); the transfer costs of 600 test users for the 12 k of the shipped grid take 5 ms compiled
against 64-72 ms for the numpy per-k loop (13-14x). The paper's Sec. 5 experiment (5 folds x 2 datasets, one
fit to k = 400 and one transfer curve each) projects to 4 s compiled (7-10 min in numpy); run on the real
substitutes it takes 0.7-0.9 s in all (americas_small 3,000 x 500: 0.6-0.9 s for 5 folds, each covered
exactly by 110-121 factors; apj 2,044 x 500: 0.09 s, 341-345 factors).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

_ONE = np.uint64(1)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_S1, _S2, _S4, _S56 = np.uint64(1), np.uint64(2), np.uint64(4), np.uint64(56)


@dataclass(frozen=True)
class BooleanFactors:
    """The factors of ``X ≈ Z ∘ U`` in the order they were found (the first ``k`` are the rank-k model).

    Attributes
    ----------
    Z : ndarray of shape (n_users, n_factors), bool
        User-role assignment: ``Z[i, t]`` is whether user ``i`` has role ``t``.
    U : ndarray of shape (n_factors, n_permissions), bool
        Role-permission assignment: ``U[t, j]`` is whether role ``t`` grants permission ``j``.
    covered : ndarray of shape (n_factors,), int64
        Ones of ``X`` covered by the first ``t + 1`` factors (non-decreasing; GreConD covers no zeros).
    n_ones : int
        Ones in ``X``; ``covered[-1] == n_ones`` when the factorisation is exact.
    """

    Z: NDArray[np.bool_]
    U: NDArray[np.bool_]
    covered: NDArray[np.int64]
    n_ones: int

    @property
    def n_factors(self) -> int:
        """Number of factors found (at most the ``k_max`` asked for)."""
        return int(self.U.shape[0])

    @property
    def coverage(self) -> NDArray[np.float64]:
        """Fraction of the ones of ``X`` covered after each factor, shape (n_factors,)."""
        return self.covered / max(self.n_ones, 1)


@njit(cache=True, nogil=True)
def _popcount(x: np.uint64) -> np.int64:
    x = x - ((x >> _S1) & _M1)
    x = (x & _M2) + ((x >> _S2) & _M2)
    x = (x + (x >> _S4)) & _M4
    return np.int64((x * _H01) >> _S56)


@njit(cache=True, nogil=True)
def _pack_rows(X: NDArray[np.bool_]) -> NDArray[np.uint64]:
    """Rows of ``X`` (n, d) as bit sets, shape (n, ceil(d / 64)); bit ``j % 64`` of word ``j // 64``."""
    n, d = X.shape
    bits = np.zeros((n, (d + 63) // 64), dtype=np.uint64)
    for i in range(n):
        for j in range(d):
            if X[i, j]:
                bits[i, j >> 6] |= _ONE << np.uint64(j & 63)
    return bits


@njit(cache=True, nogil=True)
def _columns(X: NDArray[np.bool_]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The users of each permission, column ``j`` being ``rows[start[j]:start[j + 1]]`` in increasing order."""
    n, d = X.shape
    start = np.zeros(d + 1, dtype=np.int64)
    for i in range(n):
        for j in range(d):
            if X[i, j]:
                start[j + 1] += 1
    start = np.cumsum(start)
    rows = np.empty(start[d], dtype=np.int64)
    filled = start[:d].copy()
    for i in range(n):
        for j in range(d):
            if X[i, j]:
                rows[filled[j]] = i
                filled[j] += 1
    return start, rows


@njit(cache=True, nogil=True)
def _grow_concept(rows: NDArray[np.uint64], uncovered: NDArray[np.uint64], remaining_in_row: NDArray[np.int64],
                  column_start: NDArray[np.int64], column_rows: NDArray[np.int64], extent: NDArray[np.int64],
                  in_extent: NDArray[np.bool_], intent: NDArray[np.uint64]) -> tuple[int, int]:
    """Grow the next factor from ``D = ∅`` into ``extent`` (row list), ``in_extent`` and ``intent`` (bit set).

    Returns the extent's size and the uncovered ones the concept covers. The extent of ``D ∪ {j}`` is
    the rows of column ``j`` in the current extent ``C = D↓``. A candidate whose extent rows hold no more
    uncovered ones than the best value so far cannot win (ties go to the lowest ``j``, met first).
    """
    n, words = rows.shape
    d = column_start.size - 1
    candidate, best_extent = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    candidate_intent, best_intent = np.empty(words, dtype=np.uint64), np.empty(words, dtype=np.uint64)
    intent[:] = 0
    in_extent[:] = True
    for i in range(n):
        extent[i] = i
    extent_size, value = n, 0
    while True:
        best, best_j, best_size = value, -1, 0
        for j in range(d):
            if (intent[j >> 6] >> np.uint64(j & 63)) & _ONE:
                continue
            size, bound = 0, 0
            for p in range(column_start[j], column_start[j + 1]):
                i = column_rows[p]
                if in_extent[i]:
                    candidate[size] = i
                    size += 1
                    bound += remaining_in_row[i]
            if bound <= best:
                continue
            candidate_intent[:] = rows[candidate[0]]
            for q in range(1, size):
                for w in range(words):
                    candidate_intent[w] &= rows[candidate[q], w]
            gain = 0
            for q in range(size):
                for w in range(words):
                    gain += _popcount(uncovered[candidate[q], w] & candidate_intent[w])
            if gain > best:
                best, best_j, best_size = gain, j, size
                best_intent[:] = candidate_intent
                best_extent[:size] = candidate[:size]
        if best_j < 0:
            return extent_size, value
        value = best
        intent[:] = best_intent
        for q in range(extent_size):
            in_extent[extent[q]] = False
        extent_size = best_size
        for q in range(extent_size):
            extent[q] = best_extent[q]
            in_extent[extent[q]] = True


@njit(cache=True, nogil=True)
def _greconD(X: NDArray[np.bool_], k_max: int) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.int64], int]:
    """GreConD on bit sets; returns ``Z`` (n, k_max), ``U`` (k_max, d), ``covered`` (k_max,) and the count found."""
    n, d = X.shape
    rows = _pack_rows(X)
    words = rows.shape[1]
    uncovered = rows.copy()
    remaining_in_row = np.zeros(n, dtype=np.int64)
    for i in range(n):
        for w in range(words):
            remaining_in_row[i] += _popcount(uncovered[i, w])
    remaining = remaining_in_row.sum()
    column_start, column_rows = _columns(X)
    Z = np.zeros((n, k_max), dtype=np.bool_)
    U = np.zeros((k_max, d), dtype=np.bool_)
    covered = np.zeros(k_max, dtype=np.int64)
    extent, in_extent = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.bool_)
    intent = np.empty(words, dtype=np.uint64)
    total, found = 0, 0
    while found < k_max and remaining > 0:
        extent_size, value = _grow_concept(rows, uncovered, remaining_in_row, column_start, column_rows, extent,
                                           in_extent, intent)
        for q in range(extent_size):
            i = extent[q]
            Z[i, found] = True
            remaining_in_row[i] = 0
            for w in range(words):
                uncovered[i, w] &= ~intent[w]
                remaining_in_row[i] += _popcount(uncovered[i, w])
        for j in range(d):
            U[found, j] = (intent[j >> 6] >> np.uint64(j & 63)) & _ONE
        remaining -= value
        total += value
        covered[found] = total
        found += 1
    return Z, U, covered, found


def _boolean_matrix(X: ArrayLike, name: str) -> NDArray[np.bool_]:
    array = np.asarray(X)
    if array.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D 0/1 matrix (users x permissions), got shape {array.shape}")
    if array.dtype != np.bool_:
        if not (np.issubdtype(array.dtype, np.number) and np.all((array == 0) | (array == 1))):
            raise ValueError(f"{name}: expected only 0 and 1 (or booleans), got dtype {array.dtype} with other "
                             "values; binarise the matrix first")
    return np.ascontiguousarray(array, dtype=np.bool_)


def _check_k_max(k_max: int) -> int:
    if isinstance(k_max, bool) or not isinstance(k_max, int | np.integer) or k_max < 1:
        raise ValueError(f"k_max: expected an integer >= 1, got {k_max!r}")
    return int(k_max)


def greconD(X: ArrayLike, k_max: int) -> BooleanFactors:
    """Up to ``k_max`` Boolean factors of ``X`` by GreConD (compiled), nested: the first k are the rank-k model.

    Parameters
    ----------
    X : array_like of shape (n_users, n_permissions)
        A 0/1 (or boolean) matrix.
    k_max : int
        Most factors to find. Fewer are returned when they already cover every one of ``X`` exactly;
        for any larger k a caller uses all of them (the factorisation is then exact).

    Returns
    -------
    BooleanFactors
        ``Z`` of shape (n_users, n_factors), ``U`` of shape (n_factors, n_permissions), the ones covered
        after each factor. ``Z ∘ U`` never covers a 0 of ``X``.
    """
    matrix = _boolean_matrix(X, "X")
    k_max = _check_k_max(k_max)
    Z, U, covered, found = _greconD(matrix, k_max)
    return BooleanFactors(Z=np.ascontiguousarray(Z[:, :found]), U=np.ascontiguousarray(U[:found]),
                          covered=covered[:found].copy(), n_ones=int(matrix.sum()))


def greconD_numpy(X: ArrayLike, k_max: int) -> BooleanFactors:
    """:func:`greconD` in plain numpy (the reference of the tests and the benchmark): the same factors.

    Every step scores all candidates at once by two matrix products: with ``E`` the (n, d) indicator of
    the extents of ``D ∪ {j}`` (column j), the intents are the rows of ``E.T @ (1 - X)`` equal to 0
    and the values are the uncovered ones inside them, ``(E.T @ uncovered)`` summed over each intent.
    Slow (O(n d^2) per step): for tests and as the benchmark's baseline.
    """
    matrix = _boolean_matrix(X, "X")
    k_max = _check_k_max(k_max)
    n, d = matrix.shape
    absent = (~matrix).astype(np.float64)
    uncovered = matrix.copy()
    columns_Z, rows_U, covered = [], [], []
    total = 0
    while len(rows_U) < k_max and uncovered.any():
        extent, intent, value = np.ones(n, dtype=bool), np.zeros(d, dtype=bool), 0
        while True:
            extents = (extent[:, None] & matrix).astype(np.float64)
            intents = (extents.T @ absent) == 0
            gains = np.rint(((extents.T @ uncovered.astype(np.float64)) * intents).sum(axis=1)).astype(np.int64)
            gains[intent] = -1
            j = int(np.argmax(gains))
            if gains[j] <= value:
                break
            extent, intent, value = extents[:, j] > 0, intents[j], int(gains[j])
        uncovered[np.ix_(extent, intent)] = False
        total += value
        columns_Z.append(extent)
        rows_U.append(intent)
        covered.append(total)
    Z = np.array(columns_Z, dtype=bool).T.reshape(n, len(rows_U))
    U = np.array(rows_U, dtype=bool).reshape(len(rows_U), d)
    return BooleanFactors(Z=np.ascontiguousarray(Z), U=U, covered=np.array(covered, dtype=np.int64),
                          n_ones=int(matrix.sum()))


def boolean_product(Z: ArrayLike, U: ArrayLike, k: int) -> NDArray[np.bool_]:
    """The OR of the first ``k`` factors, ``OR_{t<k} (Z[:, t] AND U[t, :])``, shape (n_users, n_permissions).

    Parameters
    ----------
    Z : array_like of shape (n_users, n_factors), 0/1
    U : array_like of shape (n_factors, n_permissions), 0/1
    k : int
        Factors to use, >= 0; beyond ``n_factors``, all of them (the factorisation stopped because it was
        exact). ``k = 0`` gives the all-zero matrix.
    """
    Z, U = _boolean_matrix(Z, "Z"), _boolean_matrix(U, "U")
    if Z.shape[1] != U.shape[0]:
        raise ValueError(f"Z has {Z.shape[1]} factors (columns) but U has {U.shape[0]} (rows); pass the Z and U "
                         "of one factorisation")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0:
        raise ValueError(f"k: expected an integer >= 0, got {k!r}")
    # float32 counts are exact up to 2**24 factors
    return (Z[:, :k].astype(np.float32) @ U[:k].astype(np.float32)) > 0


@njit(cache=True, nogil=True)
def _nearest_rows(train: NDArray[np.uint64], test: NDArray[np.uint64]) -> NDArray[np.int64]:
    """Index of the nearest row of ``train`` (bit sets) in Hamming distance for each row of ``test``."""
    nearest = np.empty(test.shape[0], dtype=np.int64)
    for a in range(test.shape[0]):
        best, chosen = np.iinfo(np.int64).max, 0
        for i in range(train.shape[0]):
            distance = 0
            for w in range(train.shape[1]):
                distance += _popcount(train[i, w] ^ test[a, w])
            if distance < best:
                best, chosen = distance, i
        nearest[a] = chosen
    return nearest


@njit(cache=True, nogil=True)
def _transfer_totals(test: NDArray[np.uint64], nearest: NDArray[np.int64], Z: NDArray[np.bool_],
                     U: NDArray[np.uint64]) -> NDArray[np.int64]:
    """Bits wrong summed over the test users for k = 0 .. n_factors, shape (n_factors + 1,).

    Adding a factor only turns bits on: a new bit costs 1 where the test user lacks it and saves 1
    where the user has it, so each k costs its new bits only.
    """
    n_factors, words = U.shape
    totals = np.zeros(n_factors + 1, dtype=np.int64)
    reconstruction = np.empty(words, dtype=np.uint64)
    for a in range(test.shape[0]):
        i = nearest[a]
        cost = 0
        for w in range(words):
            cost += _popcount(test[a, w])
        reconstruction[:] = 0
        totals[0] += cost
        for t in range(n_factors):
            if Z[i, t]:
                for w in range(words):
                    new = U[t, w] & ~reconstruction[w]
                    cost += _popcount(new) - 2 * _popcount(new & test[a, w])
                    reconstruction[w] |= new
            totals[t + 1] += cost
    return totals


def _transfer_inputs(X1: ArrayLike, factors: BooleanFactors, X2: ArrayLike, ks: ArrayLike
                     ) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.int64]]:
    train, test = _boolean_matrix(X1, "X1"), _boolean_matrix(X2, "X2")
    if test.shape[1] != train.shape[1]:
        raise ValueError(f"X2 has {test.shape[1]} permissions (columns) but X1 has {train.shape[1]}; both must "
                         "describe the same permissions")
    if test.shape[0] == 0:
        raise ValueError("X2: expected at least one test user (row), got none")
    if factors.Z.shape[0] != train.shape[0] or factors.U.shape[1] != train.shape[1]:
        raise ValueError(f"factors: Z {factors.Z.shape} and U {factors.U.shape} do not factorise X1 {train.shape}; "
                         "pass the factors fitted on X1")
    orders = np.asarray(ks)
    if orders.ndim != 1 or not np.issubdtype(orders.dtype, np.integer) or np.any(orders < 0):
        raise ValueError(f"ks: expected a 1-D sequence of integers >= 0, got {ks!r}")
    return train, test, orders.astype(np.int64)


def bmf_transfer_costs(X1: ArrayLike, factors: BooleanFactors, X2: ArrayLike, ks: ArrayLike) -> NDArray[np.float64]:
    """Frank et al.'s (2011) transfer cost (Sec. 5) of the first k factors of ``X1`` to the users of ``X2``, for each k.

    Each test user ``x'`` (a row of ``X2``) is mapped to its nearest training user ``i`` (row of ``X1``) in
    Hamming distance, the lowest index on ties, and pays ``sum_j |x'_j - OR_{t<k} (Z[i, t] AND U[t, j])|``;
    the costs are averaged over the test users. The neighbours are found once and all k in one pass.

    Parameters
    ----------
    X1 : array_like of shape (n_train, n_permissions), 0/1
        The training users the factors were fitted on.
    factors : BooleanFactors
        Factors of ``X1`` (``Z`` of shape (n_train, n_factors)), e.g. from :func:`greconD`.
    X2 : array_like of shape (n_test, n_permissions), 0/1
        The test users.
    ks : array_like of int, shape (n_k,)
        Numbers of factors, >= 0; a k beyond ``factors.n_factors`` uses all of them (the same cost as
        ``n_factors``: GreConD stopped there because the factorisation of ``X1`` was exact).

    Returns
    -------
    ndarray of shape (n_k,), float64
        Mean bits per test user that the transferred model gets wrong.
    """
    train, test, orders = _transfer_inputs(X1, factors, X2, ks)
    test_bits = _pack_rows(test)
    nearest = _nearest_rows(_pack_rows(train), test_bits)
    totals = _transfer_totals(test_bits, nearest, np.ascontiguousarray(factors.Z), _pack_rows(factors.U))
    return totals[np.minimum(orders, factors.n_factors)] / test.shape[0]


def nearest_rows_numpy(X1: ArrayLike, X2: ArrayLike) -> NDArray[np.int64]:
    """Nearest row of ``X1`` (n_train, d) in Hamming distance for each row of ``X2`` (n_test, d), lowest on ties."""
    train, test = _boolean_matrix(X1, "X1").astype(np.float64), _boolean_matrix(X2, "X2").astype(np.float64)
    distances = test @ (1.0 - train).T + (1.0 - test) @ train.T
    return np.argmin(distances, axis=1)


def bmf_transfer_costs_numpy(X1: ArrayLike, factors: BooleanFactors, X2: ArrayLike, ks: ArrayLike
                             ) -> NDArray[np.float64]:
    """:func:`bmf_transfer_costs` by a direct loop over k in numpy (the reference of the tests and the benchmark)."""
    train, test, orders = _transfer_inputs(X1, factors, X2, ks)
    nearest = nearest_rows_numpy(train, test)
    costs = np.empty(orders.size)
    for position, k in enumerate(orders):
        reconstruction = boolean_product(factors.Z, factors.U, int(k))[nearest]
        costs[position] = np.count_nonzero(reconstruction != test) / test.shape[0]
    return costs
