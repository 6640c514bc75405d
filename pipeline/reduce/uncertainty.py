"""How sure is each k̂: the score at k̂ with its standard error, the runner-up and the paired difference to it
with a confidence interval, the share of trials that chose k̂ with a bootstrap interval, and flags.

A reducer like the others (``ordercube.pipeline.reduce.select``): from the per-trial scores and the decision rules to an
``xarray.Dataset`` over (dataset, n, model), one variable per criterion and field (``lange_runner_up``).

- ``score``, ``score_se``: the mean over trials of the criterion's value at k̂ and its standard error
  (sd / sqrt(trials)). For Clest the value is d_k = t_k - mean_b t0_kb (Dudoit & Fridlyand, step 4).
- ``runner_up``, ``difference`` (``_low``, ``_high``): for the argmin / argmax rules (``smallest``,
  ``largest``, ``gap``, ``clest``), the runner-up is the best k other than k̂ on the curve the rule reads (the
  mean, or the per-k medians where the rule aggregates by the median), and the
  difference is the mean over trials of value(runner-up) - value(k̂), oriented so that a positive
  difference favours k̂, with a t interval at ``LEVEL``. The trials are paired (every k of a trial has the
  same sample and split), so the paired difference has a far smaller variance than either mean.
  For the threshold rules (``largest_above``: Prediction Strength; ``first_above``, ``first_below``) k̂
  flips when its own mean crosses the threshold or when a k the rule would prefer crosses it the other way;
  the runner-up is that k with the mean nearest to the threshold, and the difference is the smaller of the
  two margins to the threshold (positive: on the side the decision needs), with a one-sample t interval.
- ``frequency`` (``_low``, ``_high``): the share of trials (those with a choice) whose own choice is k̂, and
  the percentile interval of the bootstrap that resamples the trials with replacement. It is computed
  exactly: that bootstrap distribution of a share of m trials is Binomial(m, share) / m, so no random draw
  is needed and the interval is the same on every machine. At a share of 0 or 1 it has no width, as every
  percentile bootstrap of a proportion: its bounds are then NaN (not computable from these trials).
- A criterion reduced from stored assignments (:mod:`ordercube.pipeline.reduce.assignments`) has one curve, not one
  value per trial: its intervals come from the bootstrap over resamples instead. ``score_se`` is the replicates'
  standard deviation at k̂, the difference's interval the percentile interval of the replicates' differences
  (Efron & Tibshirani 1993, ch. 13) moved by their median bias
  (:func:`centred_interval`), ``frequency`` the share of replicates whose
  own choice is k̂ (no interval: it is itself the bootstrap's measure of how settled k̂ is), ``few_trials``
  counts the resamples read.
- A t interval needs two trials and a spread: with one trial, or the same value in every trial (Prediction
  Strength of 1 at k = 2), its bounds are NaN, never an interval of no width.
- flags: ``at_grid_edge`` (k̂ at an edge of the k's with values beyond which the rule could have chosen: the
  largest k for every rule but the first k above or below a threshold; the smallest, where the criterion is
  defined below it, for every rule but the largest k above a threshold (Tibshirani & Walther 2005: a smaller k
  is never preferred to one that qualifies)), ``not_separated`` (the difference's interval contains 0),
  ``runner_up_better`` (the whole interval is below 0: the runner-up scores better, and the rule
  chose k̂ for another reason, e.g. the Gap statistic's standard-error rule; for a threshold rule, k̂ or the
  runner-up is on the wrong side of the threshold beyond noise), ``few_trials`` (fewer than ``FEW_TRIALS``
  trials with a value), ``within_noise`` (the rule cannot tell k̂ from another choice given these intervals:
  ``k_set`` holds more than one k, or k and "no choice") and ``tied`` (a k ties with k̂ exactly, within
  ``TIE_RTOL``; it is in ``k_set``).
- ``k_set`` (over k) and ``none_in_set``: every choice the rule could have made had the values it reads moved
  within the intervals above (:mod:`ordercube.pipeline.reduce.within_noise`, one rule at a time), k̂ among them; the
  rule's choice among them is k̂ (:func:`ordercube.pipeline.reduce.within_noise.rule_words` says how it picks).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr
from numpy.typing import NDArray

from ordercube.pipeline.reduce.select import (
    DECISION_DIMS, choice_per_trial, decided_on, deciding_rules, per_trial, select_k,
)
from ordercube.pipeline.reduce.within_noise import (
    K_SET, Interval, NoiseSet, Statistic, median_choice_set, within_noise,
)
from ordercube.tasks.adaptive import t_quantile
from ordercube.tasks.criteria import CRITERIA, Decision
from ordercube.tasks.criteria.rules import EDGES, choose_along, mean_curve, median_curve

LEVEL = 0.95
FEW_TRIALS = 10
# Rules whose best value is the largest one; the others want the smallest.
HIGHER_IS_BETTER = frozenset({"largest", "largest_above", "first_above", "gap", "clest"})
THRESHOLD_RULES = frozenset({"largest_above", "first_above", "first_below"})
FIELDS = ("frequency", "frequency_low", "frequency_high", "score", "score_se", "runner_up", "difference", "difference_low",
          "difference_high", "none_in_set", "at_grid_edge", "not_separated", "runner_up_better", "few_trials",
          "within_noise", "tied")
FLAGS = ("at_grid_edge", "not_separated", "runner_up_better", "few_trials", "within_noise", "tied")


def compared_values(scores: xr.Dataset, name: str, decision: Decision) -> xr.DataArray:
    """The per-trial values the rule compares across k (Clest: d_k against the trials' mean reference)."""
    if decision.rule == "clest":
        return scores["clest"] - scores["clest_null"].mean("trial")
    return scores[decided_on(name, decision)]


def _mean_interval(values: NDArray[np.float64], level: float) -> tuple[float, float, float]:
    """Mean of ``values`` and its t interval (NaN bounds for fewer than two values)."""
    values = values[~np.isnan(values)]
    if values.size == 0:
        return np.nan, np.nan, np.nan
    mean = float(values.mean())
    if values.size < 2:
        return mean, np.nan, np.nan
    half = float(t_quantile(0.5 + level / 2, values.size - 1)) * float(values.std(ddof=1)) / np.sqrt(values.size)
    return mean, mean - half, mean + half


def bootstrap_share_interval(hits: int, trials: int, level: float = LEVEL) -> tuple[float, float]:
    """The percentile interval of the trials' bootstrap of a share ``hits / trials``, exactly.

    Resampling ``trials`` trials with replacement gives Binomial(trials, hits / trials) hits; the bounds are
    its (1 - level) / 2 and (1 + level) / 2 quantiles divided by ``trials``.
    """
    from scipy.special import bdtr

    p = hits / trials
    cdf = bdtr(np.arange(trials + 1), trials, p) if 0 < p < 1 else (np.arange(trials + 1) >= hits).astype(float)
    low = int(np.searchsorted(cdf, (1 - level) / 2 - 1e-12))
    high = int(np.searchsorted(cdf, (1 + level) / 2 - 1e-12))
    return low / trials, high / trials


def _runner_up(mean: NDArray[np.float64], at: int, decision: Decision) -> int:
    """Index of the runner-up on the mean curve (-1 when there is none)."""
    sign = -1.0 if decision.rule in HIGHER_IS_BETTER else 1.0
    oriented = np.where(np.isnan(mean), np.inf, sign * mean)
    if decision.rule in THRESHOLD_RULES:
        # the k the rule would prefer if it crossed: above k̂ for largest_above, below it for first_*
        positions = np.arange(mean.size)
        rival = positions > at if decision.rule == "largest_above" else positions < at
        oriented = np.where(rival, oriented, np.inf)
    else:
        oriented[at] = np.inf
    best = int(np.argmin(oriented))
    return best if np.isfinite(oriented[best]) else -1


def _difference(values: NDArray[np.float64], at: int, runner: int, decision: Decision,
                level: float) -> tuple[float, float, float]:
    sign = -1.0 if decision.rule in HIGHER_IS_BETTER else 1.0
    if decision.rule not in THRESHOLD_RULES:
        return _mean_interval(sign * (values[:, runner] - values[:, at]), level)
    threshold = float(decision.threshold)  # type: ignore[arg-type]
    # k̂ must stay on the good side of the threshold, the runner-up on the other
    margins = [_mean_interval(-sign * (values[:, at] - threshold), level)]
    if runner >= 0:
        margins.append(_mean_interval(sign * (values[:, runner] - threshold), level))
    return min(margins, key=lambda margin: margin[0])


def trial_interval(values: NDArray[np.float64], level: float = LEVEL) -> Interval:
    """``interval(statistic)`` (:mod:`ordercube.pipeline.reduce.within_noise`) from per-trial ``values`` (trials, K):
    the mean over trials of the statistic of each trial and its t interval, per column of the statistic."""
    def interval(statistic: Statistic) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        per_trial = np.asarray(statistic(values), dtype=np.float64)
        columns = [_mean_interval(per_trial[:, j], level) for j in range(per_trial.shape[1])]
        estimate, low, high = (np.array(part, dtype=np.float64) for part in zip(*columns)) if columns else (np.empty(0),) * 3
        return _exact_where_missing(estimate, low, high)

    return interval


def replicate_interval(curve: NDArray[np.float64], replicates: NDArray[np.float64] | None,
                       level: float = LEVEL, extra_se: NDArray[np.float64] | None = None) -> Interval:
    """``interval(statistic)`` from one ``curve`` (K,) and its bootstrap ``replicates`` (replicates, K): the statistic
    of the curve and the centred percentile interval of its replicates (:func:`centred_interval`).

    ``extra_se`` (K,): each k's standard error from draws the bootstrap over resamples keeps fixed (M3C's reference
    data sets), taken as independent of it: each half-width grows to sqrt(half² + (z se_s)²), se_s the error the
    statistic (linear in the curve, as the rules' differences and margins are) carries from ``extra_se``."""
    def interval(statistic: Statistic) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        estimate = np.asarray(statistic(curve), dtype=np.float64)
        if replicates is None or len(replicates) < 2:
            low = high = estimate
        else:
            low, high = _exact_where_missing(estimate, *centred_interval(
                estimate, np.asarray(statistic(replicates), dtype=np.float64).T, level))[1:]
        if extra_se is None:
            return estimate, low, high
        spread = _carried(statistic, curve, extra_se) * float(_normal_quantile(0.5 + level / 2))
        return estimate, estimate - np.hypot(estimate - low, spread), estimate + np.hypot(high - estimate, spread)

    return interval


def _normal_quantile(q: float) -> float:
    """The standard normal quantile ``q``."""
    from scipy.special import ndtri

    return float(ndtri(q))


def _carried(statistic: Statistic, curve: NDArray[np.float64], se: NDArray[np.float64]) -> NDArray[np.float64]:
    """The standard error a linear ``statistic`` of ``curve`` carries from independent errors ``se`` per k (NaN: none),
    by its exact finite differences."""
    base = np.nan_to_num(np.asarray(curve, dtype=np.float64))
    at_base = np.asarray(statistic(base), dtype=np.float64)
    steps = np.eye(base.size)  # one unit at each k: the statistic's coefficient of that k
    coefficients = np.asarray(statistic(base[None, :] + steps), dtype=np.float64) - at_base
    return np.sqrt(((coefficients * np.nan_to_num(np.asarray(se, dtype=np.float64))[:, None]) ** 2).sum(axis=0))


def _replicates_choose(replicates: NDArray[np.float64] | None, decision: Decision, level: float
                       ) -> tuple[NDArray[np.bool_] | None, bool]:
    """The k's (a mask) and "no choice" that at least (1 - level) / 2 of the bootstrap replicates choose by their own
    curves (the replicates' distribution of k̂, whose share at k̂ the reducer reports), for the rules on one curve."""
    if replicates is None or len(replicates) < 2 or decision.rule in ("gap", "clest"):
        return None, False
    threshold = None if decision.threshold is None else float(decision.threshold)
    picks = choose_along(replicates, decision.rule, ties=decision.ties, threshold=threshold)
    floor = (1 - level) / 2 * len(picks)
    counts = np.bincount(picks[picks >= 0], minlength=replicates.shape[1])
    return counts >= floor, bool((picks < 0).sum() >= floor)


def _exact_where_missing(estimate: NDArray[np.float64], low: NDArray[np.float64], high: NDArray[np.float64]
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Bounds that cannot be computed (one value, no replicates) as the estimate: exact for these trials."""
    missing = ~(np.isfinite(low) & np.isfinite(high))
    return estimate, np.where(missing, estimate, low), np.where(missing, estimate, high)


def _noise_fields(out: dict[str, Any], noise: NoiseSet) -> None:
    out[K_SET] = noise.members
    out["none_in_set"] = float(noise.none)
    out["within_noise"] = float(noise.size > 1)
    out["tied"] = float(noise.tied)


def group_uncertainty(values: NDArray[np.float64], ks: NDArray[np.int64], k_hat: int, choices: NDArray[np.int64],
                      decision: Decision, *, min_k: int = 1, level: float = LEVEL,
                      spread: NDArray[np.float64] | None = None, eligible: NDArray[np.bool_] | None = None
                      ) -> dict[str, Any]:
    """Every field of the module's docstring for one (dataset, n, model) group.

    ``values`` : ndarray of shape (trials, len(ks)), NaN where a cell has no value; ``choices``: each
    trial's own k (-1 for none); ``spread``: the Gap statistic's per-trial s_k beside its values; ``eligible``:
    Clest's k's whose p-value passes. ``k_set`` is a mask over ``ks`` (:mod:`ordercube.pipeline.reduce.within_noise`).
    """
    out: dict[str, Any] = dict.fromkeys(FIELDS, np.nan)
    trials = int((~np.isnan(values)).any(axis=1).sum())
    out["few_trials"] = float(trials < FEW_TRIALS)
    out["runner_up_better"] = 0.0
    chose = choices[choices >= 0]
    if chose.size and k_hat >= 0:
        hits = int((chose == k_hat).sum())
        out["frequency"] = hits / chose.size
        out["frequency_low"], out["frequency_high"] = bootstrap_share_interval(hits, chose.size, level)
    # the curve the rule reads: the per-k medians for aggregate "median" (a k missing in a trial has none)
    curve = median_curve(values) if decision.aggregate == "median" else mean_curve(values)
    present = ~np.isnan(values).all(axis=0)
    in_grid = k_hat in ks and bool(present[np.flatnonzero(ks == k_hat)[0]])
    at = int(np.flatnonzero(ks == k_hat)[0]) if in_grid else -1
    if decision.aggregate == "median_of_choices" and decision.rule not in ("gap", "clest"):
        noise = median_choice_set(choices, ks, level)
    else:
        rows = values if spread is None else np.concatenate([values, spread], axis=1)
        noise = within_noise(curve, at, decision, trial_interval(rows, level), eligible=eligible)
    _noise_fields(out, noise)
    if not in_grid:  # no k̂, or Clest's k̂ = 1 outside the grid
        out["at_grid_edge"] = out["not_separated"] = 0.0
        return out
    out["at_grid_edge"] = float(at_grid_edge(k_hat, ks[present], decision.rule, min_k))
    score = values[:, at][~np.isnan(values[:, at])]
    out["score"] = float(score.mean())
    out["score_se"] = float(score.std(ddof=1) / np.sqrt(score.size)) if score.size > 1 else np.nan
    runner = _runner_up(curve, at, decision)
    if runner >= 0 or decision.rule in THRESHOLD_RULES:
        out["runner_up"] = float(ks[runner]) if runner >= 0 else np.nan
        out["difference"], out["difference_low"], out["difference_high"] = _difference(values, at, runner, decision, level)
    low, high = out["difference_low"], out["difference_high"]
    out["not_separated"] = float(bool(low <= 0.0 <= high))
    out["runner_up_better"] = float(bool(high < 0.0))
    return _without_zero_width(out)


def reduced_group_uncertainty(curve: NDArray[np.float64], replicates: NDArray[np.float64] | None,
                              ks: NDArray[np.int64], k_hat: int, decision: Decision, *, share: float, trials: int,
                              min_k: int = 1, level: float = LEVEL, extra_se: NDArray[np.float64] | None = None
                              ) -> dict[str, Any]:
    """The fields of the module's docstring for one group of a criterion reduced from stored assignments.

    ``curve`` : ndarray of shape (len(ks),), its values on every resample; ``replicates`` : ndarray of shape
    (replicates, len(ks)), the bootstrap's (None: no intervals); ``share``: the share of replicates choosing
    ``k_hat``; ``trials``: the resamples read; ``extra_se``: the error of draws the bootstrap keeps fixed
    (:func:`replicate_interval`). The k's within noise also hold those that at least (1 - level) / 2 of the
    replicates choose by their own curves, and "no choice" where as many choose none.
    """
    out: dict[str, Any] = dict.fromkeys(FIELDS, np.nan)
    out["few_trials"] = float(trials < FEW_TRIALS)
    out["runner_up_better"] = 0.0
    out["frequency"] = share
    present = ~np.isnan(curve)
    in_grid = k_hat in ks and bool(present[np.flatnonzero(ks == k_hat)[0]])
    at = int(np.flatnonzero(ks == k_hat)[0]) if in_grid else -1
    noise = within_noise(curve, at, decision, replicate_interval(curve, replicates, level, extra_se))
    chosen, none = _replicates_choose(replicates, decision, level)
    if chosen is not None:  # what the replicates' own choices show beyond the intervals (a test that gates the curve)
        noise = NoiseSet(noise.members | chosen, none=noise.none or none, tied=noise.tied)
    _noise_fields(out, noise)
    if not in_grid:
        out["at_grid_edge"] = out["not_separated"] = 0.0
        return out
    out["at_grid_edge"] = float(at_grid_edge(k_hat, ks[present], decision.rule, min_k))
    out["score"] = float(curve[at])
    boot = np.empty((0, curve.size)) if replicates is None else replicates[~np.isnan(replicates[:, at])]
    out["score_se"] = float(boot[:, at].std(ddof=1)) if len(boot) > 1 else np.nan
    runner = _runner_up(curve, at, decision)
    if runner >= 0 or decision.rule in THRESHOLD_RULES:
        out["runner_up"] = float(ks[runner]) if runner >= 0 else np.nan
        out["difference"] = _difference(curve[None, :], at, runner, decision, level)[0]
        differences = np.array([_difference(row[None, :], at, runner, decision, level)[0] for row in boot])
        differences = differences[~np.isnan(differences)]
        if differences.size > 1:
            low, high = centred_interval(np.float64(out["difference"]), differences, level)
            out["difference_low"], out["difference_high"] = float(low), float(high)
    low, high = out["difference_low"], out["difference_high"]
    out["not_separated"] = float(bool(low <= 0.0 <= high))
    out["runner_up_better"] = float(bool(high < 0.0))
    return _without_zero_width(out)


def centred_interval(estimate: NDArray[np.float64], replicates: NDArray[np.float64], level: float
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The percentile interval at ``level`` of the bootstrap ``replicates`` (last axis) moved by their median bias:
    the (1 - level) / 2 and (1 + level) / 2 quantiles of ``replicates - (median(replicates) - estimate)``; NaN
    without replicates.

    Why moved: a replicate draws the resamples with replacement, so it holds about 63% of the distinct ones, and a
    statistic of co-clustering rates compared with a window (PAC; Senbabaoglu et al. 2014) is then biased in the
    replicates. Measured on 20 resamples of three planted groups: PAC 0.880, the replicates' median 0.81, their
    plain percentile interval [0.729, 0.869], which misses both the estimate and the value at 320 resamples (0.897);
    moved, [0.79, 0.93] holds both. With a bootstrap distribution centred on the estimate the two are the same.
    """
    if replicates.shape[-1] == 0:
        return estimate * np.nan, estimate * np.nan
    tail = (1 - level) / 2 * 100
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "All-NaN slice encountered", RuntimeWarning)  # groups not computed
        shift = np.nanmedian(replicates, axis=-1) - estimate
        low, high = np.nanpercentile(replicates, [tail, 100 - tail], axis=-1)
    return low - shift, high - shift


def _without_zero_width(fields: dict[str, float]) -> dict[str, float]:
    """The intervals of no width (every trial the same value, a share of 0 or 1) as NaN bounds: they cannot be
    computed from these trials, and a width of 0 would read as certainty. The flags are read before."""
    for name in ("difference", "frequency"):
        if fields[f"{name}_low"] == fields[f"{name}_high"]:
            fields[f"{name}_low"] = fields[f"{name}_high"] = np.nan
    return fields


def at_grid_edge(k_hat: int, ks_with_values: NDArray[np.int64], rule: str, min_k: int) -> bool:
    """Whether the rule could have chosen a k beyond the grid: k̂ at an edge of the k's with values that matters
    for the rule (``ordercube.tasks.criteria.rules.EDGES``; the lower one only where the criterion is defined below it)."""
    edges = EDGES.get(rule, ())
    upper = "upper" in edges and k_hat == ks_with_values.max()
    lower = "lower" in edges and k_hat == ks_with_values.min() and k_hat > min_k
    return bool(upper or lower)


def decision_uncertainty(scores: xr.Dataset, decide: Mapping[str, Mapping[str, Any]] | None = None, *,
                         level: float = LEVEL, chosen: xr.Dataset | None = None,
                         choices: xr.Dataset | None = None, reduced: xr.Dataset | None = None) -> xr.Dataset:
    """The fields of the module's docstring for every deciding criterion, as ``{criterion}_{field}`` over
    (dataset, n, model); flags are booleans, ``runner_up`` an integer (-1: none).

    ``chosen`` and ``choices``: ``select_k`` and ``choice_per_trial`` of the same scores and ``decide``, when
    the caller has them already. ``reduced``: :func:`ordercube.pipeline.reduce.assignments.reduced_scores` of the
    same ``decide``, whose bootstrap replicates give the intervals of the criteria reduced from assignments.
    """
    chosen = select_k(scores, decide) if chosen is None else chosen
    choices = choice_per_trial(scores, decide) if choices is None else choices
    out = {}
    for name, decision in deciding_rules(scores, decide).items():
        k_hat = chosen[name].transpose(*DECISION_DIMS).values
        min_k = CRITERIA[name].min_k if name in CRITERIA else 1
        shape = k_hat.shape
        fields = {field: np.full(shape, np.nan) for field in FIELDS}
        fields[K_SET] = np.zeros((*shape, scores.sizes["k"]), dtype=bool)
        if not per_trial(scores[name]):
            _reduced_fields(fields, scores, reduced, name, decision, k_hat, min_k, level)
        else:
            _trial_fields(fields, scores, choices, name, decision, k_hat, min_k, level)
        coords = {dim: scores[dim] for dim in DECISION_DIMS}
        out[f"{name}_{K_SET}"] = xr.DataArray(fields.pop(K_SET), dims=(*DECISION_DIMS, "k"),
                                              coords={**coords, "k": scores["k"]})
        for field, array in fields.items():
            if field in FLAGS or field == "none_in_set":
                array = array == 1.0
            elif field == "runner_up":
                array = np.nan_to_num(array, nan=-1).astype(np.int64)
            out[f"{name}_{field}"] = xr.DataArray(array, dims=DECISION_DIMS, coords=coords)
    return xr.Dataset(out, attrs={**scores.attrs, "level": level, "few_trials": FEW_TRIALS})


def _trial_fields(fields: dict[str, NDArray[np.float64]], scores: xr.Dataset, choices: xr.Dataset, name: str,
                  decision: Decision, k_hat: NDArray[np.int64], min_k: int, level: float) -> None:
    values = compared_values(scores, name, decision).transpose(*DECISION_DIMS, "trial", "k").values
    picks = choices[name].transpose(*DECISION_DIMS, "trial").values
    spread = eligible = None
    if decision.rule == "gap" and "gap_sd" in scores:  # the standard-error rules read s_k beside Gap
        spread = scores["gap_sd"].transpose(*DECISION_DIMS, "trial", "k").values
    if decision.rule == "clest":
        eligible = _clest_passes(scores, decision)
    for index in np.ndindex(k_hat.shape):
        group = group_uncertainty(values[index], scores["k"].values, int(k_hat[index]), picks[index], decision,
                                  min_k=min_k, level=level, spread=None if spread is None else spread[index],
                                  eligible=None if eligible is None else eligible[index])
        for field, value in group.items():
            fields[field][index] = value


def _clest_passes(scores: xr.Dataset, decision: Decision) -> NDArray[np.bool_]:
    """Where Clest's p-value passes ``p_max`` (dims DECISION_DIMS, k): the share of the trials' reference values
    t0_kb at or above the median t_k (Dudoit & Fridlyand 2002, step 4, as :func:`ordercube.tasks.criteria.clest.clest_choice`)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "All-NaN slice encountered", RuntimeWarning)
        observed = scores["clest"].median("trial")
    null = scores["clest_null"]
    held = null.notnull().sum("trial")
    p = (null >= observed).sum("trial") / held.where(held > 0)
    return (p <= float(decision.p_max)).transpose(*DECISION_DIMS, "k").values  # type: ignore[arg-type]


def _reduced_fields(fields: dict[str, NDArray[np.float64]], scores: xr.Dataset, reduced: xr.Dataset | None, name: str,
                    decision: Decision, k_hat: NDArray[np.int64], min_k: int, level: float) -> None:
    output = decided_on(name, decision)
    curves = scores[output].transpose(*DECISION_DIMS, "k").values
    ks = scores["k"].values
    boot = share = trials = None
    if reduced is not None and f"{output}_boot" in reduced:
        at = {dim: scores[dim].values for dim in (*DECISION_DIMS, "k")}
        boot = reduced[f"{output}_boot"].reindex(at).transpose(*DECISION_DIMS, "replicate", "k").values
        share = reduced[f"{name}_k_hat_share"].reindex({dim: at[dim] for dim in DECISION_DIMS}).transpose(*DECISION_DIMS).values
        trials = reduced[f"{name}_trials"].reindex({dim: at[dim] for dim in DECISION_DIMS}).transpose(*DECISION_DIMS).values
    extra = None
    if decision.error_output and decision.error_output in scores:  # e.g. M3C's RCSI error over its references
        extra = scores[decision.error_output].transpose(*DECISION_DIMS, "k").values
    for index in np.ndindex(k_hat.shape):
        group = reduced_group_uncertainty(curves[index], None if boot is None else boot[index], ks, int(k_hat[index]),
                                          decision, share=np.nan if share is None else float(share[index]),
                                          trials=0 if trials is None else int(np.nan_to_num(trials[index])),
                                          min_k=min_k, level=level, extra_se=None if extra is None else extra[index])
        for field, value in group.items():
            fields[field][index] = value
