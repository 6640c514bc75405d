"""Preprocessing steps for array datasets, registered by name (pure array transforms).

A step is ``step(X, **params) -> X`` on the data matrix (rows are the objects that get clustered).
Steps that drop or reorder rows also return which input rows they kept, so labels follow the rows.
The steps can express seed 002's gene-expression preprocessing: floor/ceiling, log, standardising
rows and columns, keeping the most variable features, PCA to d components.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


def clip(X: Array, *, floor: float | None = None, ceiling: float | None = None) -> Array:
    """Values below ``floor`` become ``floor``, above ``ceiling`` become ``ceiling``."""
    return np.clip(X, floor, ceiling)


def log(X: Array, *, base: float = 2.0, offset: float = 0.0) -> Array:
    """``log_base(X + offset)``; every value must then be positive."""
    shifted = X + offset
    if np.nanmin(shifted) <= 0:
        raise ValueError(f"log needs positive values, got a minimum of {np.nanmin(shifted)}; "
                         "add a clip step with a positive floor or set offset")
    return np.log(shifted) / np.log(base)


def standardize(X: Array, *, axis: Literal["rows", "columns"] = "columns") -> Array:
    """Zero mean and unit variance along each row or each column (constant ones become zero)."""
    along = 1 if axis == "rows" else 0
    centred = X - np.nanmean(X, axis=along, keepdims=True)
    sd = np.nanstd(X, axis=along, keepdims=True)
    return np.divide(centred, sd, out=np.zeros_like(centred), where=sd > 0)


def top_variance(X: Array, *, features: int) -> Array:
    """Keep the ``features`` columns of largest variance, in their original order."""
    keep = np.sort(np.argsort(np.nanvar(X, axis=0), kind="stable")[::-1][:features])
    return X[:, keep]


def pca(X: Array, *, components: int) -> Array:
    """Scores on the first ``components`` principal axes (SVD of the column-centred matrix).

    The sign of each axis is fixed so that its largest-magnitude loading is positive, which makes the
    result independent of the LAPACK build.
    """
    centred = X - X.mean(axis=0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    axes = vt[:components]
    signs = np.sign(axes[np.arange(axes.shape[0]), np.abs(axes).argmax(axis=1)])
    return centred @ (axes * signs[:, None]).T


def impute(X: Array, *, strategy: Literal["column_mean", "row_mean"] = "row_mean") -> Array:
    """Replace missing values by the mean of their column or of their row."""
    along = 0 if strategy == "column_mean" else 1
    present = ~np.isnan(X)
    counts = present.sum(axis=along, keepdims=True)
    if (counts == 0).any():
        what = "row" if along == 1 else "column"
        raise ValueError(f"impute: a {what} has no values to take a mean from; add a '- drop_missing: "
                         "{max_missing: M}' step before it")
    means = np.where(present, X, 0.0).sum(axis=along, keepdims=True) / counts
    return np.where(present, X, means)


@dataclass(frozen=True)
class Step:
    """A registered step: ``transform`` and whether it drops or reorders the rows."""

    name: str
    transform: Callable[..., Array]
    changes_objects: bool = False


STEPS: dict[str, Step] = {
    step.name: step
    for step in [
        Step("clip", clip),
        Step("log", log),
        Step("standardize", standardize),
        Step("top_variance", top_variance),
        Step("pca", pca),
        Step("impute", impute),
        Step("transpose", lambda X: X.T, changes_objects=True),
    ]
}


def drop_missing_rows(X: Array, *, max_missing: int = 0) -> tuple[Array, NDArray[np.int64]]:
    """Rows with at most ``max_missing`` missing values, and their indices in ``X``."""
    keep = np.flatnonzero(np.isnan(X).sum(axis=1) <= max_missing)
    return X[keep], keep


def apply_steps(
    X: Array, steps: Sequence[tuple[str, Mapping[str, Any]]]
) -> tuple[Array, NDArray[np.int64] | None]:
    """Apply ``steps`` in order.

    Returns
    -------
    X : ndarray of shape (n_objects, n_features)
    rows : ndarray of shape (n_objects,) or None
        For each output row, the input row it came from; None when a step (transpose) made the
        objects something else than the input rows.
    """
    rows: NDArray[np.int64] | None = np.arange(X.shape[0])
    for name, params in steps:
        if name == "drop_missing":
            X, keep = drop_missing_rows(X, **params)
            rows = None if rows is None else rows[keep]
            continue
        step = STEPS[name]
        X = step.transform(X, **params)
        if step.changes_objects:
            rows = None
    return X, rows


STEP_NAMES = sorted([*STEPS, "drop_missing"])
