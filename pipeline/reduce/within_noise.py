"""The k's a decision cannot tell apart from k̂ given its Monte Carlo error: every k the rule could have chosen had
the curve it reads moved within the intervals :mod:`ordercube.pipeline.reduce.uncertainty` gives.

The intervals come from the caller as one function, ``interval(statistic)``: the statistic (a function of the values
over k, applied along the last axis) with its estimate and the bounds at the report's level, from the trials (t
intervals of the mean: the values a rule reads are means over trials) or from the bootstrap replicates over resamples
(centred percentile intervals) of a criterion reduced from stored assignments. Nothing here draws or refits. Bounds
that cannot be computed (one trial, or no spread) are the estimate itself: the value is then exact for these trials.

By rule (:mod:`ordercube.tasks.criteria.rules`):

- argmin / argmax (``smallest``, ``largest``, the Gap statistic's ``globalmax``): k is in the set when it ties with
  k̂ (within ``TIE_RTOL``) or the interval of the paired difference value(k) - value(k̂), oriented so that a positive
  difference favours k̂, reaches 0 (Efron & Tibshirani 1993, ch. 13: k̂ is not better than k beyond the error).
- a threshold (``largest_above``: Prediction Strength, Tibshirani & Walther 2005, and Monti et al.'s (2003) Δ(k)
  with coca's threshold; ``first_above``, ``first_below``): each k's value may reach the threshold (its interval
  reaches it) or surely does (the whole interval does); k is in the set when it may qualify and no k the rule
  prefers to it surely qualifies (for ``largest_above`` a larger k, for the first-k rules a smaller one). "No
  choice" is in the set when no k surely qualifies.
- the Gap statistic's standard-error rules (Tibshirani, Walther & Hastie 2001, step 3; R's ``cluster::maxSE``):
  the same as a first k above a threshold, on the margins Gap(k) - Gap(k+1) + se_factor s_{k+1} (``Tibs2001SEmax``;
  ``firstmax`` without the s term) against 0, the last k when no margin qualifies; ``firstSEmax`` / ``globalSEmax``
  on the margins Gap(k) - Gap(c) + se_factor s_c for every first or global maximum c the set of those allows.
- Clest (Dudoit & Fridlyand 2002): the k's whose d_k may reach ``d_min`` (among those whose p-value passes) and that
  no k surely passing beats beyond the error; k = 1 (no choice on the grid) when none surely passes.
- the lower median of the trials' own choices (``median_of_choices``, Frank et al. 2011): the k's between the
  percentiles of its bootstrap over trials, computed exactly (a trial bootstrap of m choices gives the lower
  median <= v with the probability that Binomial(m, F(v)) reaches (m - 1) // 2 + 1, F the share of choices <= v).

A criterion reduced from stored assignments adds the choices that at least (1 - level) / 2 of its bootstrap
replicates make on their own curves ("no choice" where a test gates the curve, as M3C's), and a criterion whose
decision names an ``error_output`` (M3C's RCSI standard error over its reference data sets, which a bootstrap over
resamples keeps fixed while another seed draws them anew) widens every interval by it
(:func:`ordercube.pipeline.reduce.uncertainty.replicate_interval`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import xarray as xr
from numpy.typing import NDArray

from ordercube.pipeline.reduce.select import DECISION_DIMS
from ordercube.tasks.criteria import Decision
from ordercube.tasks.criteria.rules import ARGMAX_RULES, ARGMIN_RULES, at_least, below, tied_with

#: The per-k field of :func:`ordercube.pipeline.reduce.uncertainty.decision_uncertainty`: the k's within noise.
K_SET = "k_set"
Statistic = Callable[[NDArray[np.float64]], NDArray[np.float64]]
Interval = Callable[[Statistic], tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]]


@dataclass(frozen=True)
class NoiseSet:
    """The k's (a mask over the grid) a rule cannot tell apart from its k̂; ``none``: "no choice" is among them;
    ``tied``: a k ties with k̂ exactly (within ``TIE_RTOL``)."""

    members: NDArray[np.bool_]
    none: bool = False
    tied: bool = False

    @property
    def size(self) -> int:
        """How many choices the set holds ("no choice" counted as one)."""
        return int(self.members.sum()) + int(self.none)


def rule_words(decision: Decision) -> str:
    """How the rule picks its k̂ among the k's it cannot tell apart, in words."""
    rule, ties = decision.rule, "the smallest" if decision.ties == "smallest" else "the largest"
    if decision.aggregate == "median_of_choices" and rule not in ("gap", "clest"):
        return "the lower median of the trials' own choices"
    threshold = "" if decision.threshold is None else f"{float(decision.threshold):g}"
    return {"smallest": f"the smallest value ({ties} k of a tie)", "largest": f"the largest value ({ties} k of a tie)",
            "largest_above": f"the largest k whose value reaches {threshold}",
            "first_above": f"the smallest k whose value reaches {threshold}",
            "first_below": f"the smallest k whose value is below {threshold}",
            "gap": f"the Gap statistic's {decision.method} rule (se_factor {decision.se_factor})",
            "clest": f"the largest d_k among the k's with p <= {decision.p_max} and d_k >= {decision.d_min}"
            }.get(rule, rule)


def _argbest(curve: NDArray[np.float64], at: int, sign: float, interval: Interval) -> NoiseSet:
    """An argmin (``sign`` 1) or argmax (-1) rule's set around index ``at``."""
    present = ~np.isnan(curve)
    _, low, _ = interval(lambda x: sign * (x - x[..., at:at + 1]))
    tied = present & tied_with(curve, curve[at])
    with np.errstate(invalid="ignore"):
        members = present & (tied | (low <= 0.0))
    members[at] = True
    tied[at] = False
    return NoiseSet(members, tied=bool(tied.any()))


def _possible(may: NDArray[np.bool_], sure: NDArray[np.bool_], *, last: bool) -> tuple[NDArray[np.bool_], bool]:
    """The positions a "first (``last``: last) qualifying position" rule could take, and whether "none" could:
    a position that may qualify with none the rule prefers surely qualifying."""
    if last:
        preferred = np.concatenate([np.cumsum(sure[::-1])[::-1][1:], [0]]) > 0
    else:
        preferred = np.concatenate([[0], np.cumsum(sure)[:-1]]) > 0
    return may & ~preferred, not bool(sure.any())


def _threshold(curve: NDArray[np.float64], decision: Decision, interval: Interval) -> NoiseSet:
    present = ~np.isnan(curve)
    _, low, high = interval(lambda x: x)
    threshold = float(decision.threshold)  # type: ignore[arg-type]
    if decision.rule == "first_below":
        may, sure = below(low, threshold), below(high, threshold)
    else:
        may, sure = at_least(high, threshold), at_least(low, threshold)
    members, none = _possible(may & present, sure & present, last=decision.rule == "largest_above")
    return NoiseSet(members, none=none)


def _first_margin(margins: Statistic, count: int, interval: Interval, default_last: bool) -> NDArray[np.bool_]:
    """The positions a "first margin >= 0" rule could take among ``count`` (the last one when none qualifies, if
    ``default_last``)."""
    _, low, high = interval(margins)
    may, sure = at_least(high, 0.0), at_least(low, 0.0)
    members, none = _possible(may, sure, last=False)
    out = np.zeros(count, dtype=bool)
    out[:members.size] = members
    if default_last and none:
        out[count - 1] = True
    return out


def _gap(curve: NDArray[np.float64], at: int, decision: Decision, interval: Interval) -> NoiseSet:
    """The Gap statistic's rules on the k's with a value; the rows' columns are Gap, then s_k."""
    K = curve.size
    present = np.flatnonzero(~np.isnan(curve))
    count, factor = present.size, float(decision.se_factor or 0.0)
    if count == 0 or at < 0:
        return NoiseSet(np.zeros(K, dtype=bool))
    f, s = (lambda x: x[..., present]), (lambda x: x[..., K + present])

    def on_present(mask: NDArray[np.bool_]) -> NoiseSet:
        members = np.zeros(K, dtype=bool)
        members[present[mask]] = True
        members[at] = True
        return NoiseSet(members)

    def first_max() -> NDArray[np.bool_]:
        return _first_margin(lambda x: f(x)[..., :-1] - f(x)[..., 1:], count, interval, True)

    def global_max() -> NDArray[np.bool_]:
        best = int(np.flatnonzero(present == int(np.nanargmax(curve)))[0])
        return _argbest(curve[present], best, -1.0, lambda statistic: interval(lambda x: statistic(f(x)))).members

    if decision.method == "globalmax":
        return on_present(global_max())
    if decision.method == "firstmax":
        return on_present(first_max())
    if decision.method == "Tibs2001SEmax":
        return on_present(_first_margin(lambda x: f(x)[..., :-1] - f(x)[..., 1:] + factor * s(x)[..., 1:], count,
                                        interval, True))
    tops = first_max() if decision.method == "firstSEmax" else global_max()
    members = np.zeros(count, dtype=bool)
    for c in np.flatnonzero(tops):
        members[:c + 1] |= _first_margin(lambda x, c=c: f(x)[..., :c + 1] - f(x)[..., c:c + 1] + factor * s(x)[..., c:c + 1],
                                         c + 1, interval, False)
    return on_present(members)


def _clest(curve: NDArray[np.float64], at: int, decision: Decision, interval: Interval,
           eligible: NDArray[np.bool_]) -> NoiseSet:
    """Clest on d_k (``curve``); ``eligible``: the k's whose p-value passes p_max."""
    present = ~np.isnan(curve) & eligible
    _, low, high = interval(lambda x: x)
    d_min = float(decision.d_min)  # type: ignore[arg-type]
    may, sure = present & at_least(high, d_min), present & at_least(low, d_min)
    members = may.copy()
    for j in np.flatnonzero(may):
        _, beaten, _ = interval(lambda x, j=j: x[..., sure] - x[..., j:j + 1])
        with np.errstate(invalid="ignore"):
            members[j] = not bool((beaten > 0).any())
    if at >= 0:
        members[at] = True
    return NoiseSet(members, none=not bool(sure.any()))


def median_choice_set(choices: NDArray[np.int64], ks: NDArray[np.int64], level: float) -> NoiseSet:
    """The k's between the (1 - level) / 2 and (1 + level) / 2 quantiles of the trials' bootstrap of the lower median
    of their own choices (-1: no choice, left out), exactly (the module's docstring)."""
    from scipy.special import bdtr

    chose = np.asarray(choices)[np.asarray(choices) >= 0]
    members = np.zeros(len(ks), dtype=bool)
    if chose.size == 0:
        return NoiseSet(members, none=True)
    m, need = chose.size, (chose.size - 1) // 2 + 1
    share = np.array([(chose <= k).mean() for k in ks])
    # P(lower median <= k) = P(Binomial(m, share) >= need) = 1 - P(Binomial <= need - 1)
    at_most = np.where(share >= 1.0, 1.0, 1.0 - bdtr(need - 1, m, np.minimum(share, 1.0)))
    below_k = np.concatenate([[0.0], at_most[:-1]])
    members = (at_most >= (1 - level) / 2 - 1e-12) & (below_k <= (1 + level) / 2 + 1e-12)
    return NoiseSet(members & np.isin(ks, np.unique(chose)))


def within_noise(curve: NDArray[np.float64], at: int, decision: Decision, interval: Interval, *,
                 eligible: NDArray[np.bool_] | None = None) -> NoiseSet:
    """The k's ``decision``'s rule cannot tell apart from its choice (index ``at`` of ``curve``, -1: none).

    Parameters
    ----------
    curve : ndarray of shape (K,)
        The curve the rule reads (the Gap statistic: its Gap curve).
    at : int
        k̂'s index (-1: the rule chose none).
    decision : Decision
    interval : callable
        ``interval(statistic)`` → (estimate, low, high) of ``statistic`` (values over the grid → anything, on the last
        axis) from the trials or the bootstrap replicates; for the Gap statistic the values are Gap then s_k (2K).
    eligible : ndarray of bool, optional
        Clest: the k's whose p-value passes ``p_max``.
    """
    curve = np.asarray(curve, dtype=np.float64)
    if decision.rule == "gap":
        return _gap(curve, at, decision, interval)
    if decision.rule == "clest":
        return _clest(curve, at, decision, interval, np.ones(curve.size, bool) if eligible is None else eligible)
    if decision.rule in ARGMIN_RULES or decision.rule in ARGMAX_RULES:
        if at < 0:
            return NoiseSet(np.zeros(curve.size, dtype=bool), none=True)
        return _argbest(curve, at, 1.0 if decision.rule in ARGMIN_RULES else -1.0, interval)
    if decision.threshold is not None:
        result = _threshold(curve, decision, interval)
        if at >= 0:
            result.members[at] = True
        return result
    return NoiseSet(np.arange(curve.size) == at)


def set_words(uncertainty: xr.Dataset, criterion: str) -> xr.DataArray:
    """``{criterion}_k_set`` as words per group: its k's ascending, then "none" where no choice is among them."""
    members = uncertainty[f"{criterion}_{K_SET}"].transpose(*DECISION_DIMS, "k")
    none = uncertainty[f"{criterion}_none_in_set"].transpose(*DECISION_DIMS).values
    ks = members["k"].values
    words = np.empty(none.shape, dtype=object)
    for index in np.ndindex(none.shape):
        shown = [str(k) for k in ks[members.values[index]]] + (["none"] if none[index] else [])
        words[index] = " ".join(shown)
    return xr.DataArray(words, dims=DECISION_DIMS, coords={dim: members[dim] for dim in DECISION_DIMS})
