"""Preprocessing steps for array datasets, registered by name (pure array transforms).

A step is ``step(X, **params) -> X`` on the data matrix (rows are the objects that get clustered).
Steps that drop or reorder rows also return which input rows they kept, so labels follow the rows.
The steps can express the gene-expression preprocessing of Roth et al. (2002): floor/ceiling, log, standardising
rows and columns, keeping the most variable features, PCA to d components; and Dudoit & Fridlyand's
gene filter (floor/ceiling, max/min fold and max - min difference per gene).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.params import Param, ParamError, check_params, choice, integer, number, show

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


def drop_missing_rows(X: Array, *, max_missing: int = 0) -> tuple[Array, NDArray[np.int64]]:
    """Rows with at most ``max_missing`` missing values, and their indices in ``X``."""
    keep = np.flatnonzero(np.isnan(X).sum(axis=1) <= max_missing)
    return X[keep], keep


def gene_filter(X: Array, *, floor: float = 100.0, ceiling: float = 16000.0, min_fold: float = 5.0,
                min_difference: float = 500.0) -> Array:
    """Dudoit & Fridlyand's thresholding and filtering of microarray intensities (genes are the columns).

    Dudoit, S. & Fridlyand, J. (2002), "A prediction-based resampling method for estimating the number
    of clusters in a dataset", Genome Biology 3(7): research0036, section "Datasets" (the leukemia data),
    preprocessing as in Dudoit, Fridlyand & Speed (2002, JASA 97: 77-87): (i) thresholding, a floor of
    100 and a ceiling of 16,000; (ii) filtering, the exclusion of genes with max/min <= 5 or max - min
    <= 500 over the samples; (iii) a base-10 logarithm (a separate step here: ``- log: {base: 10}``).
    The defaults are those published values; a gene is kept when both max/min > ``min_fold`` and
    max - min > ``min_difference``, as the paper excludes at <= (values as published, not checked against the paper's text).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_genes)
        Raw intensities, samples in rows. Put the step before a ``transpose`` that makes genes the
        objects: it filters columns.

    Returns
    -------
    ndarray of shape (n_samples, n_kept_genes)
        The floored and ceilinged intensities of the genes that pass, in their original order.
    """
    clipped = np.clip(X, floor, ceiling)
    high, low = np.nanmax(clipped, axis=0), np.nanmin(clipped, axis=0)  # a gene of NaN only is dropped
    keep = (high / low > min_fold) & (high - low > min_difference)
    return clipped[:, keep]


def _floor_below_ceiling(params: Mapping[str, Any]) -> None:
    floor, ceiling = params.get("floor"), params.get("ceiling")
    if floor is not None and ceiling is not None and floor > ceiling:
        raise ParamError("floor", f"floor = {show(floor)} is above ceiling = {show(ceiling)}", "swap them")


@dataclass(frozen=True)
class Step:
    """A registered step.

    Attributes
    ----------
    transform : callable
        ``transform(X, **params)`` → the new matrix, or ``(X, kept_rows)`` when ``selects_rows``.
    changes_objects : bool
        The output rows are other objects than the input rows (transpose).
    selects_rows : bool
        The step keeps a subset of the rows and says which.
    ranges : mapping
        Every parameter the step takes, with the values it accepts (:class:`ordercube.tasks.params.Param`).
    required : tuple of str
        Parameters without a default.
    check : callable or None
        ``check(params)`` tests the parameters together and raises ``ParamError``.
    """

    name: str
    transform: Callable[..., Any]
    changes_objects: bool = False
    selects_rows: bool = False
    ranges: Mapping[str, Param] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    check: Callable[[Mapping[str, Any]], None] | None = None

    @property
    def defaults(self) -> dict[str, Any]:
        """The defaults of the transform's keyword parameters."""
        signature = inspect.signature(self.transform)
        return {name: p.default for name, p in signature.parameters.items()
                if p.kind is p.KEYWORD_ONLY and p.default is not p.empty}

    def validate(self, params: Mapping[str, Any]) -> None:
        """``ParamError`` naming an unknown or missing parameter or a value out of range (typos included)."""
        check_params(params, self.ranges, required=self.required, check=self.check)


# Counts are bounded only to keep them within 64-bit integers; a bound finer than the data's own
# size (more components than columns) is harmless: the step keeps what there is.
COUNT = integer(1, 2**62)
STEPS: dict[str, Step] = {
    step.name: step
    for step in [
        Step("clip", clip, ranges={"floor": number(allow_none=True), "ceiling": number(allow_none=True)},
             check=_floor_below_ceiling),
        Step("log", log, ranges={"base": number(0.0, low_open=True, excluded=(1.0,)), "offset": number()}),
        Step("standardize", standardize, ranges={"axis": choice("rows", "columns")}),
        Step("top_variance", top_variance, ranges={"features": COUNT}, required=("features",)),
        Step("pca", pca, ranges={"components": COUNT}, required=("components",)),
        Step("impute", impute, ranges={"strategy": choice("column_mean", "row_mean")}),
        Step("drop_missing", drop_missing_rows, selects_rows=True, ranges={"max_missing": integer(0, 2**62)}),
        Step("transpose", lambda X: X.T, changes_objects=True),
        Step("gene_filter", gene_filter, ranges={"floor": number(0.0, low_open=True), "ceiling": number(0.0, low_open=True),
                                                 "min_fold": number(1.0), "min_difference": number(0.0)},
             check=lambda params: _floor_below_ceiling({"floor": 100.0, "ceiling": 16000.0, **params})),
    ]
}


def apply_steps(
    X: Array, steps: Sequence[tuple[str, Mapping[str, Any]]]
) -> tuple[Array, NDArray[np.int64] | None]:
    """Apply ``steps`` in order (their parameters checked by :meth:`Step.validate` at config load).

    Returns
    -------
    X : ndarray of shape (n_objects, n_features)
    rows : ndarray of shape (n_objects,) or None
        For each output row, the input row it came from; None when a step (transpose) made the
        objects something else than the input rows.
    """
    rows: NDArray[np.int64] | None = np.arange(X.shape[0])
    for name, params in steps:
        step = STEPS[name]
        if step.selects_rows:
            X, keep = step.transform(X, **params)
            rows = None if rows is None else rows[keep]
            continue
        X = step.transform(X, **params)
        if step.changes_objects:
            rows = None
    return X, rows


STEP_NAMES = sorted(STEPS)
