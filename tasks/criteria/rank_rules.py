"""Rank rules of matrix models, read off their curves (Frank, Chehreghani & Buhmann 2011, Sec. 4.2): Owen & Perry's
OP-CV rank (the lowest median held-out error over permutations) and Molloy's coverage and increment rules."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ordercube.tasks.algorithms.lowrank import as_ranks, coverage_shares, increments
from ordercube.tasks.criteria.rules import best_index, median_curve


def coverage_rank(X: ArrayLike, ks: Sequence[int] | ArrayLike, share: float = 0.8) -> int | None:
    """Molloy's rule (i): the smallest k of ``ks`` whose g(rank-k) covers >= ``share`` of X's 1-entries; None if none."""
    ks = as_ranks(ks)
    qualifying = ks[coverage_shares(X, ks) >= share]
    return int(qualifying.min()) if qualifying.size else None


def increment_rank(X: ArrayLike, ks: Sequence[int] | ArrayLike, threshold: float = 0.001) -> int | None:
    """Molloy's rule (ii): the smallest k of ``ks`` with ``‖g_k − g_{k+1}‖₁ / ‖X‖₁ < threshold``; None if none."""
    ks = as_ranks(ks)
    qualifying = ks[increments(X, ks) < threshold]
    return int(qualifying.min()) if qualifying.size else None


def opcv_rank(errors: ArrayLike, ks: Sequence[int] | ArrayLike) -> int | None:
    """The paper's decision: the k of the lowest median error over permutations (Frank et al. 2011, Sec. 4.2).

    A k that is NaN in any permutation has no median and is not chosen; a permutation without any value is left
    out; medians equal within ``ordercube.tasks.criteria.rules.TIE_RTOL`` tie, to the smallest k. None when no k has a
    median. The reducers decide ``aggregate: median`` with the same functions.

    Parameters
    ----------
    errors : array_like of shape (permutations, len(ks))
        From :func:`ordercube.tasks.algorithms.lowrank.opcv_errors`.
    ks : sequence of int
    """
    errors, ks = np.asarray(errors, dtype=np.float64), as_ranks(ks)
    if errors.ndim != 2 or errors.shape[1] != ks.size:
        raise ValueError(f"opcv_rank: expected errors of shape (permutations, {ks.size}), got {errors.shape}")
    order = np.argsort(ks, kind="stable")  # the rule reads k ascending
    best = best_index(median_curve(errors[:, order]), lower_is_better=True, ties="smallest")
    return int(ks[order][best]) if best >= 0 else None
