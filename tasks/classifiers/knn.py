"""k-nearest-neighbour error rates for every k of a trial from one neighbour sort (Daudin & Mary-Huard 2008, Sec. 4).

Daudin & Mary-Huard (2008), "Model Selection in Classification: the Swapping Method", select k by minimising the
penalised empirical error of eq. (5)::

    C(phi_k) = L_n(phi_k) + (2/n) sum_i p_i (1 - p_i) [phi_k(x_i | Y_i = 1) - phi_k(x_i | Y_i = 0)]

where ``L_n`` is the empirical error rate (EER, Sec. 1), ``phi(x_i | Y_i = y)`` the rule refitted with
``Y_i`` set to ``y`` (Theorem 1, eq. (3), Sec. 2) and ``p_i`` the robust plug-in of eq. (4), which
for kNN is eq. (6): ``p_i = (m_i + n0/2) / (k + n0)``, ``m_i`` the number of 1s among the k
neighbours of ``x_i``; ``n0 = 10`` (Sec. 2).

A learning point is its own first neighbour (resubstitution): otherwise swapping ``Y_i`` could never change
``phi(x_i)`` and the penalty would vanish (implied by Sec. 4.1). Sorting each point's neighbours once serves
every k: with cumulative sums of the sorted labels, the vote of any k is one subtraction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

SwapRule = Literal["exact", "literal"]
SWAP_RULES: tuple[str, ...] = ("exact", "literal")

# Elements of the (pairs x p) difference block recomputed at a time for near-tied distances: ~32 MB.
_CHUNK = 4_000_000


def knn_scores(
    X_learn: NDArray[np.float64],
    y_learn: NDArray[np.int64],
    ks: Sequence[int],
    *,
    X_test: NDArray[np.float64] | None = None,
    y_test: NDArray[np.int64] | None = None,
    n0: float = 10.0,
    swap_rule: SwapRule = "exact",
) -> dict[str, NDArray[np.float64]]:
    """Resubstitution, swapping, leave-one-out and test error of Euclidean kNN for each k in ``ks``.

    The vote predicts 1 iff the number of 1s among the k neighbours exceeds the number of 0s; a tie (even
    k) predicts 0, the smaller label, as scikit-learn's ``KNeighborsClassifier`` does. Neighbours are
    ordered by (distance, index); a learning point comes first in its own list even when a duplicate
    lies at distance 0.

    Parameters
    ----------
    X_learn : ndarray of shape (n, p)
    y_learn : ndarray of shape (n,)
        Labels in {0, 1}.
    ks : sequence of int
        Numbers of neighbours, each in ``1 .. n - 1`` (leave-one-out needs k other points); any order.
    X_test : ndarray of shape (n_test, p), optional
    y_test : ndarray of shape (n_test,), optional
        Given together with ``X_test``; labels in {0, 1}.
    n0 : float, default 10.0
        Prior weight of the robust plug-in, eq. (4) and eq. (6).
    swap_rule : {"exact", "literal"}, default "exact"
        How ``phi(x_i | 1) - phi(x_i | 0)`` is read from the neighbours, see :func:`_swap_difference`.

    Returns
    -------
    dict of str to ndarray of shape (len(ks),)
        In the order of ``ks``: ``resubstitution`` (the EER ``L_n``, Sec. 1, self counted among the k),
        ``swap_penalty`` (the sum in eq. (5) with ``p_i`` from eq. (6)), ``swapping`` (their sum, the
        criterion of eq. (5)), ``loo_cv`` (each point voted on by its k nearest other points) and, when a
        test set is given, ``test_error``.

    Raises
    ------
    ValueError
        If a k is below 1 or above n - 1, a label is not 0 or 1, the shapes disagree, ``n0 < 0``, the
        swap rule is unknown, or ``swap_rule="literal"`` meets an even k.
    """
    X, y, k, rule = _validated(X_learn, y_learn, ks, X_test, y_test, n0, swap_rule)
    top = int(k.max())
    order = _neighbour_order(X, X, self_first=True)[:, : top + 1]
    ones = _ones_among_first(y[order])  # ones[:, j]: 1s among the j nearest, self included
    m = ones[:, k]
    observed = y[:, None]
    resubstitution = (_vote(m, k) != observed).mean(axis=0)
    # m_i counts x_i's own label, the one the fitted rule was built with (eq. (6), Sec. 4.1)
    p_hat = (m + n0 / 2.0) / (k + n0)
    difference = _swap_difference(m, observed, k, rule)
    swap_penalty = 2.0 * (p_hat * (1.0 - p_hat) * difference).mean(axis=0)
    loo = (_vote(ones[:, k + 1] - observed, k) != observed).mean(axis=0)
    scores = {
        "resubstitution": resubstitution,
        "swap_penalty": swap_penalty,
        "swapping": resubstitution + swap_penalty,
        "loo_cv": loo,
    }
    if X_test is not None and y_test is not None:
        Xt = np.asarray(X_test, dtype=np.float64)
        yt = np.asarray(y_test).astype(np.int64)
        order_test = _neighbour_order(Xt, X, self_first=False)[:, :top]
        m_test = _ones_among_first(y[order_test])[:, k]
        scores["test_error"] = (_vote(m_test, k) != yt[:, None]).mean(axis=0)
    return {name: value.astype(np.float64) for name, value in scores.items()}


def _vote(m: NDArray[np.int64], k: NDArray[np.int64]) -> NDArray[np.int64]:
    """Majority vote from ``m`` ones among ``k`` neighbours: 1 iff ``m > k - m``; a tie gives 0."""
    return (2 * m > k).astype(np.int64)


def _swap_difference(m: NDArray[np.int64], observed: NDArray[np.int64], k: NDArray[np.int64],
                     rule: SwapRule) -> NDArray[np.int64]:
    """``phi(x_i | Y_i = 1) - phi(x_i | Y_i = 0)`` for every point and k, from the neighbour counts.

    Swapping ``Y_i`` moves only x_i's own vote (it is its own first neighbour), so with ``m'_i = m_i - Y_i``
    the 1s among the other k - 1 neighbours the difference is ``vote(m'_i + 1) - vote(m'_i)``: for odd k,
    1 iff ``m'_i = (k - 1)/2``, i.e. x_i belongs to a majority that is "short" (Sec. 4.1); for even k, 1 iff
    ``m'_i = k/2`` under the tie-to-0 vote.

    ``rule="literal"`` reads the paper's next sentence as written (Sec. 4.1): 1 iff ``m_i = (k - 1)/2`` or
    ``m_i = (k + 1)/2``. That also counts a point in the *minority* next to a short majority
    (``Y_i = 0, m_i = (k + 1)/2`` or ``Y_i = 1, m_i = (k - 1)/2``), whose swap changes nothing, so it
    overstates the penalty. It is defined for odd k only (Sec. 4.1).

    Parameters
    ----------
    m : ndarray of shape (n, n_k)
        1s among the k neighbours of each point, itself included with its observed label.
    observed : ndarray of shape (n, 1)
    k : ndarray of shape (n_k,)
    rule : {"exact", "literal"}

    Returns
    -------
    ndarray of shape (n, n_k)
        0 or 1.
    """
    if rule == "literal":
        return ((2 * m == k - 1) | (2 * m == k + 1)).astype(np.int64)
    others = m - observed
    return _vote(others + 1, k) - _vote(others, k)


def _ones_among_first(sorted_labels: NDArray[np.int64]) -> NDArray[np.int64]:
    """``out[:, j]`` = number of 1s among the first j columns, for j = 0 .. width (shape (rows, width + 1))."""
    ones = np.zeros((sorted_labels.shape[0], sorted_labels.shape[1] + 1), dtype=np.int64)
    np.cumsum(sorted_labels, axis=1, out=ones[:, 1:])
    return ones


def _neighbour_order(A: NDArray[np.float64], B: NDArray[np.float64], *, self_first: bool) -> NDArray[np.int64]:
    """For each row of ``A``, the rows of ``B`` ordered by (Euclidean distance, index).

    Squared distances come from the Gram expansion ``|a|^2 + |b|^2 - 2 a.b`` (one BLAS product), on data
    centred at ``B``'s mean to keep the norms, and so the cancellation, small. Its rounding error is at most
    ``T = (2p + 8) eps (|a|^2 + max_b |b|^2)`` per row, so two entries whose Gram values are more than ``2T``
    apart are already in their exact order. Entries closer than that to a neighbour in the sorted row
    (duplicates, ties on gridded data) are recomputed from the differences ``a - b`` of the data as given,
    so equal distances compare equal and fall back to index order; those rows are sorted again.

    Parameters
    ----------
    A : ndarray of shape (n_a, p)
    B : ndarray of shape (n_b, p)
    self_first : bool
        ``A`` is ``B``: put each point first in its own row whatever its duplicates.

    Returns
    -------
    ndarray of shape (n_a, n_b)
    """
    centre = B.mean(axis=0)
    Ac, Bc = A - centre, B - centre
    norm_a, norm_b = np.einsum("ij,ij->i", Ac, Ac), np.einsum("ij,ij->i", Bc, Bc)
    d2 = np.maximum(norm_a[:, None] + norm_b[None, :] - 2.0 * (Ac @ Bc.T), 0.0)
    if self_first:
        np.fill_diagonal(d2, -np.inf)
    order = np.argsort(d2, axis=1, kind="stable")
    if B.shape[0] < 2:
        return order
    tolerance = (2 * A.shape[1] + 8) * np.finfo(np.float64).eps * (norm_a + norm_b.max())
    sorted_d2 = np.take_along_axis(d2, order, axis=1)
    close = np.diff(sorted_d2, axis=1) <= 2.0 * tolerance[:, None]
    near = np.zeros(order.shape, dtype=bool)
    near[:, 1:] |= close
    near[:, :-1] |= close
    rows, positions = np.nonzero(near)
    if rows.size:
        cols = order[rows, positions]
        d2[rows, cols] = _exact_squared_distances(A, B, rows, cols)
        redo = np.unique(rows)
        order[redo] = np.argsort(d2[redo], axis=1, kind="stable")
    return order


def _exact_squared_distances(A: NDArray[np.float64], B: NDArray[np.float64], rows: NDArray[np.intp],
                             cols: NDArray[np.intp]) -> NDArray[np.float64]:
    """``|A[rows[t]] - B[cols[t]]|^2`` for each t (shape (len(rows),)), in blocks of bounded memory."""
    out = np.empty(rows.size, dtype=np.float64)
    step = max(1, _CHUNK // max(A.shape[1], 1))
    for start in range(0, rows.size, step):
        diff = A[rows[start : start + step]] - B[cols[start : start + step]]
        out[start : start + step] = np.einsum("ij,ij->i", diff, diff)
    return out


def _validated(X_learn: NDArray[np.float64], y_learn: NDArray[np.int64], ks: Sequence[int],
               X_test: NDArray[np.float64] | None, y_test: NDArray[np.int64] | None, n0: float,
               swap_rule: str) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], SwapRule]:
    """Checked learning arrays, ``ks`` as an int64 array, and the swap rule; raises ``ValueError``."""
    X = np.asarray(X_learn, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X_learn: expected a 2-D array (n, p), got shape {X.shape}")
    n = X.shape[0]
    y = _checked_labels(y_learn, n, "y_learn")
    k = np.asarray(ks)
    if k.ndim != 1 or k.size == 0 or not np.issubdtype(k.dtype, np.integer):
        raise ValueError(f"ks: expected a non-empty sequence of integers, got {list(np.ravel(k))}")
    k = k.astype(np.int64)
    if k.min() < 1:
        raise ValueError(f"ks: every k must be >= 1, got k = {int(k.min())}")
    if k.max() > n - 1:
        top = int(k.max())
        raise ValueError(f"k = {top} needs at least {top + 1} learning points for leave-one-out, the learning "
                         f"set has {n}; lower the largest k or use a larger learning set")
    if swap_rule not in SWAP_RULES:
        raise ValueError(f"swap_rule = {swap_rule!r} is not one of {list(SWAP_RULES)}")
    if swap_rule == "literal" and np.any(k % 2 == 0):
        raise ValueError(f"swap_rule = 'literal' is defined for odd k only (Daudin & Mary-Huard, Sec. 4.1), got k = "
                         f"{int(k[k % 2 == 0][0])}; use odd ks or swap_rule = 'exact'")
    if not n0 >= 0:
        raise ValueError(f"n0: expected a prior weight >= 0, got {n0}")
    if (X_test is None) != (y_test is None):
        raise ValueError("X_test and y_test must be given together or not at all")
    if X_test is not None:
        Xt = np.asarray(X_test)
        if Xt.ndim != 2 or Xt.shape[1] != X.shape[1]:
            raise ValueError(f"X_test: expected shape (n_test, {X.shape[1]}) like X_learn, got {Xt.shape}")
        _checked_labels(y_test, Xt.shape[0], "y_test")
    rule: SwapRule = "literal" if swap_rule == "literal" else "exact"
    return X, y, k, rule


def _checked_labels(labels: NDArray[np.int64] | None, n: int, name: str) -> NDArray[np.int64]:
    """``labels`` as int64 of shape (n,), or a ``ValueError`` naming ``name`` and the offending values."""
    y = np.asarray(labels)
    if y.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},) to match the points, got {y.shape}")
    values = np.unique(y)
    if not np.isin(values, (0, 1)).all():
        raise ValueError(f"{name}: expected labels in {{0, 1}}, got labels {values.tolist()}; recode the two "
                         f"classes as 0 and 1")
    return y.astype(np.int64)
