"""Decision rules: how k̂ follows from a criterion's values over k. One implementation of each, used by the
reducers (the report, ``ordercube.select_k``), the adaptive replay and the tests; plain NumPy on 1-D curves.

**Ties.** Two values are tied when they differ by at most ``TIE_RTOL`` relative to the larger magnitude
(exactly equal values always are). The mean of equal counts over the same trials can differ in the last bits
depending on the order of summation (232 disagreeing pairs at k = 8, 9 and 10 gave three means one unit in the
last place apart): 1e-9 is far above that rounding (about trials x 1.1e-16 relative) and far below any
difference a resampling estimate can resolve (its standard error is rarely below 1e-4 relative). Among tied
values the rule picks the **smallest** k unless told otherwise (``Decision.ties``), the parsimonious choice: no
paper behind the registered criteria states another tie rule (Lange et al. 2002 and Shamir & Tishby 2007 take
"the smallest value", Frank et al. the "lowest transfer costs" and Molloy's "minimal rank", Daudin & Mary-Huard
the minimiser of the penalised criterion). Thresholds are compared with the same tolerance: a Prediction
Strength mean that is 0.9 up to rounding reaches the threshold 0.9.

**Missing values.** ``curve`` NaN means "no value at this k" (not computed, failed, or undefined there) and
is never chosen. The per-k median (Owen & Perry 2009 as Frank et al. run it, Sec. 4.2: the argmin of the
per-k medians over the permutations) is taken over the trials that hold a value at some k; a k missing in any
of them has no median (the missing error could be any) and is never chosen.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray

TIE_RTOL = 1e-9
TIE_RULES = ("smallest", "largest")
# The rules here, by the side they favour: argmin / argmax of the curve, or a threshold crossing.
ARGMIN_RULES, ARGMAX_RULES = frozenset({"smallest"}), frozenset({"largest"})
THRESHOLD_RULES = frozenset({"largest_above", "first_above", "first_below"})
# Which edge of the k grid could hide a better k from each rule (``at_grid_edge``): the argmin / argmax rules,
# Gap and Clest, both; the largest k above a threshold only the upper one (a smaller k is never preferred to one
# that qualifies; Tibshirani & Walther 2005: k = 1 always qualifies); the first k above / below a threshold only
# the lower one (a larger k is never preferred to one that qualifies).
EDGES: dict[str, tuple[str, ...]] = {"smallest": ("lower", "upper"), "largest": ("lower", "upper"),
                                     "gap": ("lower", "upper"), "clest": ("lower", "upper"),
                                     "largest_above": ("upper",), "first_above": ("lower",),
                                     "first_below": ("lower",), "none": ()}


def tied_with(values: NDArray[np.float64], best: NDArray[np.float64] | float,
              rtol: float = TIE_RTOL) -> NDArray[np.bool_]:
    """Where ``values`` equal ``best`` (broadcast) within ``rtol`` relative to the larger magnitude; NaN never."""
    values, best = np.asarray(values, dtype=np.float64), np.asarray(best, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return (values == best) | (np.abs(values - best) <= rtol * np.maximum(np.abs(values), np.abs(best)))


def at_least(curves: NDArray[np.float64], threshold: float, rtol: float = TIE_RTOL) -> NDArray[np.bool_]:
    """Where ``curves`` reach ``threshold`` (within ``rtol``); NaN never does."""
    curves = np.asarray(curves, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return (curves >= threshold) | tied_with(curves, threshold, rtol)


def below(curves: NDArray[np.float64], threshold: float, rtol: float = TIE_RTOL) -> NDArray[np.bool_]:
    """Where ``curves`` fall below ``threshold`` beyond ``rtol`` (a value tied with it is not below); NaN never."""
    curves = np.asarray(curves, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return (curves < threshold) & ~tied_with(curves, threshold, rtol)


def _first(mask: NDArray[np.bool_]) -> NDArray[np.int64]:
    """The first index along the last axis where ``mask`` holds, -1 where it holds nowhere."""
    return np.where(mask.any(axis=-1), mask.argmax(axis=-1), -1).astype(np.int64)


def _last(mask: NDArray[np.bool_]) -> NDArray[np.int64]:
    last = mask.shape[-1] - 1 - mask[..., ::-1].argmax(axis=-1)
    return np.where(mask.any(axis=-1), last, -1).astype(np.int64)


def best_mask(curves: NDArray[np.float64], *, lower_is_better: bool, rtol: float = TIE_RTOL) -> NDArray[np.bool_]:
    """Where each curve (k on the last axis) holds its best value, ties within ``rtol`` included."""
    curves = np.asarray(curves, dtype=np.float64)
    oriented = curves if lower_is_better else -curves
    present = ~np.isnan(oriented)
    best = np.where(present, oriented, np.inf).min(axis=-1, keepdims=True)
    return present & tied_with(oriented, best, rtol)


def choose_along(curves: NDArray[np.float64], rule: str, *, ties: str = "smallest",
                 threshold: float | None = None) -> NDArray[np.int64]:
    """The index (k ascending, on the last axis) that ``rule`` chooses on each curve, -1 for none.

    ``smallest`` / ``largest``: the argmin / argmax, ties by ``ties``. ``largest_above``: the largest k whose
    value reaches ``threshold`` (Prediction Strength, Tibshirani & Walther 2005). ``first_above`` /
    ``first_below``: the smallest k whose value reaches / falls below ``threshold`` (Molloy's coverage and
    increment rules, as Frank et al. quote them, Sec. 4.2: "the minimal rank", "the smallest rank").
    """
    curves = np.asarray(curves, dtype=np.float64)
    if rule in ARGMIN_RULES or rule in ARGMAX_RULES:
        if ties not in TIE_RULES:
            raise ValueError(f"ties = {ties!r}; expected one of {list(TIE_RULES)}")
        best = best_mask(curves, lower_is_better=rule in ARGMIN_RULES)
        return _first(best) if ties == "smallest" else _last(best)
    if threshold is None or rule not in THRESHOLD_RULES:
        raise ValueError(f"rule {rule!r}: expected one of {sorted(ARGMIN_RULES | ARGMAX_RULES | THRESHOLD_RULES)}, "
                         "a threshold rule with its threshold")
    if rule == "largest_above":
        return _last(at_least(curves, threshold))
    return _first(at_least(curves, threshold) if rule == "first_above" else below(curves, threshold))


def choose_index(curve: NDArray[np.float64], rule: str, *, ties: str = "smallest",
                 threshold: float | None = None) -> int:
    """:func:`choose_along` on one curve: an index, -1 for none."""
    return int(choose_along(np.asarray(curve, dtype=np.float64)[None, :], rule, ties=ties, threshold=threshold)[0])


def best_index(curve: NDArray[np.float64], *, lower_is_better: bool, ties: str = "smallest") -> int:
    """The index of the best value of one curve (ties by ``ties``), -1 when it holds no value."""
    return choose_index(curve, "smallest" if lower_is_better else "largest", ties=ties)


def median_curve(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """The per-k median of ``values`` (..., trials, k) over the trials holding a value at some k; NaN at a k
    missing in any of them (module docstring)."""
    values = np.asarray(values, dtype=np.float64)
    missing = np.isnan(values)
    with_values = ~missing.all(axis=-1, keepdims=True)
    incomplete = (missing & with_values).any(axis=-2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN, as they should be
        medians = np.nanmedian(values, axis=-2)
    return np.where(incomplete, np.nan, medians)


def mean_curve(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """The per-k mean of ``values`` (..., trials, k) over the trials with a value at that k (NaN where none)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a k without values: its mean is NaN
        return np.nanmean(np.asarray(values, dtype=np.float64), axis=-2)


def lower_median_choice(choices: NDArray[np.int64]) -> NDArray[np.int64]:
    """The lower median of the trials' own choices (``choices`` (..., trials), -1: none) ignoring trials
    without one; -1 where none chose (Frank et al.: "the median over 20 random splits")."""
    choices = np.asarray(choices, dtype=np.int64)
    ordered = np.sort(np.where(choices >= 0, choices, np.iinfo(np.int64).max), axis=-1)
    count = (choices >= 0).sum(axis=-1)
    at = np.take_along_axis(ordered, np.maximum((count - 1) // 2, 0)[..., None], axis=-1)[..., 0]
    return np.where(count > 0, at, -1).astype(np.int64)
