"""Reducers: pure functions from the cube (an ``xarray.Dataset``) to decisions and summaries.

Each takes and returns an ``xarray.Dataset`` with one variable per criterion, so they compose:
``select_k(criterion_scores(cube))``. Only cells with status ok carry values; everything else is NaN
and is left out of every mean, never silently counted. Coordinates are sorted (extensions append
labels at the end of the cube).

Decision rules: each criterion declares its own (``tasks.criteria.Decision``), and the deciding
reducers take ``thresholds={criterion: value}`` to re-decide a stored cube without recomputing.
For an instability (``smallest``) k̂ is the argmin over k of the mean score; **exact ties go to the
largest k**. Ties are exact float equalities and in practice mean "perfectly reproducible" (an
instability of 0, e.g. k = 2 and k = 3 on well-separated clouds where the two small ones merge
stably): the finer of two equally reproducible solutions is the one the data supports, since the
coarser adds nothing the finer does not reproduce. For Prediction Strength (``largest_above``) k̂ is
the largest k whose mean score reaches the threshold.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import xarray as xr

from pipeline.store import BASELINE
from tasks.criteria import CRITERIA, Decision

DECISION_DIMS = ("dataset", "n", "model")


def _sorted(ds: xr.Dataset) -> xr.Dataset:
    return ds.sortby([dim for dim in ("n", "k", "trial") if dim in ds.dims])


def criteria_in(cube: xr.Dataset) -> list[str]:
    """Criterion variables present in the cube."""
    return [str(name) for name in cube.data_vars if name not in ("status", "reason", "seconds", BASELINE)]


def criterion_scores(cube: xr.Dataset) -> xr.Dataset:
    """Per-trial scores, one variable per criterion, each read by its own decision rule.

    ``lange``: seed 002 eq. (5), the raw disagreement divided by the random-labeling baseline of the
    same (n, k): ``S_n = S(alpha) / S(rho_k)``. ``pairwise``: the raw theta_k of seed 001 Thm. 3.
    ``prediction_strength``: ps(k) as stored (larger is better).
    """
    cube = _sorted(cube)
    scores = {}
    for name in criteria_in(cube):
        values = cube[name].where(cube["status"] == 1)
        normalised = name in CRITERIA and CRITERIA[name].normalised_by_random_labels
        scores[name] = values / cube[BASELINE] if normalised else values
    return xr.Dataset(scores, attrs={"true_k": cube.attrs.get("ordercube_true_k", "{}")})


def summarise(scores: xr.Dataset) -> xr.Dataset:
    """Mean, standard deviation, quartiles and number of trials of every score over ``trial``."""
    out = {}
    with warnings.catch_warnings():
        # cells that are not planned or not ok are NaN by design: an all-NaN slice is a normal case
        warnings.filterwarnings("ignore", "All-NaN slice encountered", RuntimeWarning)
        warnings.filterwarnings("ignore", "Degrees of freedom <= 0", RuntimeWarning)
        for name, values in scores.data_vars.items():
            out[f"{name}_mean"] = values.mean("trial")
            out[f"{name}_std"] = values.std("trial", ddof=1)
            out[f"{name}_q25"] = values.quantile(0.25, "trial").drop_vars("quantile")
            out[f"{name}_q75"] = values.quantile(0.75, "trial").drop_vars("quantile")
            out[f"{name}_trials"] = values.notnull().sum("trial")
    return xr.Dataset(out, attrs=scores.attrs)


def _argmin_k(values: xr.DataArray) -> xr.DataArray:
    """The k of the smallest value along ``k`` (largest k on exact ties), -1 where all are NaN."""
    values = values.sortby("k", ascending=False)
    filled = values.fillna(np.inf)
    index = filled.argmin("k")  # first occurrence in descending k: the largest k among exact ties
    chosen = values["k"].isel(k=index).drop_vars("k", errors="ignore")
    return chosen.where(np.isfinite(filled.min("k")), -1).astype(np.int64)


def decisions(scores: xr.Dataset, thresholds: Mapping[str, float] | None = None) -> dict[str, Decision]:
    """Each criterion's decision rule, with ``thresholds`` replacing the default thresholds."""
    thresholds = dict(thresholds or {})
    out = {}
    for name in map(str, scores.data_vars):
        decision = CRITERIA[name].decision if name in CRITERIA else Decision()
        if name in thresholds:
            if decision.threshold is None:
                raise ValueError(f"threshold for {name!r}: its decision rule ({decision.rule}) has no threshold; "
                                 "thresholds apply to " + ", ".join(
                                     sorted(n for n, c in CRITERIA.items() if c.decision.threshold is not None)))
            decision = replace(decision, threshold=float(thresholds.pop(name)))
        out[name] = decision
    if thresholds:
        raise ValueError(f"threshold for {sorted(thresholds)[0]!r}: no such criterion in the cube; it has {sorted(out)}")
    return out


def _largest_above(values: xr.DataArray, threshold: float) -> xr.DataArray:
    """The largest k whose value is at least ``threshold``, -1 where none is."""
    ks = xr.DataArray(values["k"].values, dims="k", coords={"k": values["k"]})
    return ks.where(values >= threshold).max("k", skipna=True).fillna(-1).astype(np.int64)


def _choose(values: xr.DataArray, decision: Decision) -> xr.DataArray:
    if decision.rule == "largest_above":
        return _largest_above(values, float(decision.threshold))  # type: ignore[arg-type]
    return _argmin_k(values)


def select_k(scores: xr.Dataset, thresholds: Mapping[str, float] | None = None) -> xr.Dataset:
    """k̂ per (dataset, n, model) for each criterion, by its decision rule on the mean over trials."""
    rules = decisions(scores, thresholds)
    return xr.Dataset({name: _choose(values.mean("trial"), rules[str(name)]) for name, values in scores.data_vars.items()},
                      attrs=scores.attrs)


def choice_per_trial(scores: xr.Dataset, thresholds: Mapping[str, float] | None = None) -> xr.Dataset:
    """Each trial's own choice of k (same rule as :func:`select_k`), -1 for a trial without a choice."""
    rules = decisions(scores, thresholds)
    return xr.Dataset({name: _choose(values, rules[str(name)]) for name, values in scores.data_vars.items()},
                      attrs=scores.attrs)


def selection_frequency(choices: xr.Dataset, k: xr.DataArray) -> xr.Dataset:
    """For every k, the fraction of trials (among those with a choice) that chose it."""
    out = {}
    for name, choice in choices.data_vars.items():
        valid = (choice >= 0).sum("trial")
        hits = xr.concat([(choice == value).sum("trial") for value in k.values], dim=k)
        out[name] = (hits / valid.where(valid > 0)).transpose(*DECISION_DIMS, "k")
    return xr.Dataset(out, attrs=choices.attrs)


def true_k(ds: xr.Dataset) -> xr.DataArray:
    """The known number of clusters of each dataset (-1 when unknown), from the cube's attributes."""
    known = json.loads(ds.attrs.get("true_k", "{}"))
    names = ds["dataset"].values
    return xr.DataArray([int(known.get(str(name), -1)) for name in names], dims="dataset", coords={"dataset": names})


def failure_rate(scores: xr.Dataset, thresholds: Mapping[str, float] | None = None) -> xr.Dataset:
    """Fraction of trials whose choice missed the dataset's true k (NaN when k is unknown).

    For an instability, seed 001's definition ("theta_3 was not the smallest of the three"): a trial
    fails when some other k scores strictly lower than the true k, or when the true k has no value in
    that trial. Without exact ties this is the trial's own choice differing from the true k; with a tie
    at the minimum the true k is among the smallest and the trial does not count as a failure,
    whichever k the tie rule picks. For a threshold rule, a trial fails when its choice is not the true
    k. Trials without any value are left out.
    """
    truth = true_k(scores)
    rules = decisions(scores, thresholds)
    out = {}
    for name, values in scores.data_vars.items():
        valid = values.notnull().any("k")
        if rules[str(name)].rule == "smallest":
            at_truth = _at_true_k(values, truth)
            failed = valid & ~(at_truth <= values.min("k"))
        else:
            failed = valid & (_choose(values, rules[str(name)]) != truth)
        count = valid.sum("trial")
        out[name] = (failed.sum("trial") / count.where(count > 0)).where(truth >= 0)
    return xr.Dataset(out, attrs=scores.attrs)


def _at_true_k(values: xr.DataArray, truth: xr.DataArray) -> xr.DataArray:
    """Each dataset's values at its own true k (NaN where that k is not in the cube or unknown)."""
    rows = []
    for name in values["dataset"].values:
        k = int(truth.sel(dataset=name))
        row = values.sel(dataset=name)
        at_k = row.sel(k=k) if k in values["k"].values else xr.full_like(row.isel(k=0), np.nan)
        rows.append(at_k.drop_vars("k"))
    return xr.concat(rows, dim="dataset")


def sqrt_n_scaled(summary: xr.Dataset) -> xr.Dataset:
    """Mean scores multiplied by sqrt(n): flat in n when an instability shrinks like 1/sqrt(n)."""
    means = {str(name).removesuffix("_mean"): values for name, values in summary.data_vars.items()
             if str(name).endswith("_mean")}
    return xr.Dataset({name: values * np.sqrt(values["n"]) for name, values in means.items()}, attrs=summary.attrs)
