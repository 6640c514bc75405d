"""The registered classifiers' trial kernels: one call per trial computes every k (``Classifier.classify``).

Each takes the trial's learning set and test set (the test set may be empty), the ks, and the
generator's ``target`` when its error rates are known exactly, and returns the supervised criteria's
values by variable name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

Scores = dict[str, NDArray[np.float64]]


def knn_trial(X_learn: NDArray[np.float64], y_learn: NDArray[np.int64], X_test: NDArray[np.float64],
              y_test: NDArray[np.int64], ks: Sequence[int], target: tuple[Any, ...] | None, *, genes: int = 0,
              odd_only: bool = False, n0: float = 10.0, swap_rule: str = "exact") -> Scores:
    """k nearest neighbours (Daudin & Mary-Huard 2008, Sec. 4.1) on the learning set's top ``genes`` columns by |t|, chosen on
    the learning set only (0: every column); ``odd_only`` is checked when the config is read."""
    from ordercube.tasks.classifiers.knn import knn_scores
    from ordercube.tasks.classifiers.selection import top_by_t

    if genes and genes < X_learn.shape[1]:
        columns = top_by_t(X_learn, y_learn, genes)
        X_learn, X_test = X_learn[:, columns], X_test[:, columns]
    has_test = y_test.size > 0
    return knn_scores(X_learn, y_learn, list(ks), X_test=X_test if has_test else None,
                      y_test=y_test if has_test else None, n0=n0, swap_rule=swap_rule)


def interval_trial(X_learn: NDArray[np.float64], y_learn: NDArray[np.int64], X_test: NDArray[np.float64],
                   y_test: NDArray[np.int64], ks: Sequence[int], target: tuple[Any, ...] | None, *,
                   n0: float = 10.0, swap_rule: str = "exact") -> Scores:
    """The empirical-risk minimiser with at most k intervals on [0, 1] (Daudin & Mary-Huard 2008, Sec. 3.2); exact true and
    conditional error rates when the generator's target (Kearns' d, eta) is known. The swap rule has no
    literal variant here (the paper states it for kNN only)."""
    from ordercube.tasks.classifiers.intervals import interval_erm_scores

    return interval_erm_scores(X_learn[:, 0], y_learn, list(ks), n0=n0, target=target)
