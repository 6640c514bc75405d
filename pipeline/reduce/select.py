"""Reducers: pure functions from the cube (an ``xarray.Dataset``) to decisions and summaries.

Each takes and returns an ``xarray.Dataset`` with one variable per criterion, so they compose:
``select_k(criterion_scores(cube))``. Only cells with status ok carry values; everything else is NaN
and is left out of every mean, never silently counted. Coordinates are sorted (extensions append
labels at the end of the cube).

Decision rules: each criterion declares its own (``ordercube.tasks.criteria.Decision``), and the deciding
reducers take ``decide={criterion: {field: value}}`` (a threshold, the tie rule, the Gap statistic's rule,
Clest's p_max and d_min) to re-decide a stored cube without recomputing. The rules on a curve over k are
:mod:`ordercube.tasks.criteria.rules` (one implementation, also behind the adaptive replay and ``opcv_rank``): the argmin
or argmax with values equal within ``TIE_RTOL`` tied and **ties to the smallest k** by default
(``ties="largest"`` on request), the largest k reaching a threshold (Prediction Strength), the first k above
or below one (Molloy's rules). The curve is the mean over trials (NaN cells left out), the per-k median (a k
missing in a trial that has values has none and is never chosen) or, for ``median_of_choices``, the trials'
own choices. The Gap statistic applies R's ``maxSE`` rule to the mean Gap curve with the mean s_k (and to each
trial's own curve); Clest compares the median over trials with the trials' reference sets.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import xarray as xr

from ordercube.pipeline.errors import InputError
from ordercube.pipeline.cube.attrs import BASELINE
from ordercube.tasks.cell import Status
from ordercube.tasks.criteria import ADJUSTABLE, AGGREGATES, CRITERIA, GAP_METHODS, VARIABLES, Decision
from ordercube.tasks.criteria import rules
from ordercube.tasks.criteria.clest import clest_choice
from ordercube.tasks.criteria.gap import max_se

DECISION_DIMS = ("dataset", "n", "model")
#: Allowed ranges of the numeric decision fields (every one must also be finite): Clest's p_max is a
#: p-value bound, the Gap rule's se_factor a count of standard errors.
FIELD_RANGES: dict[str, tuple[float, float]] = {"p_max": (0.0, 1.0), "se_factor": (0.0, np.inf)}


def _sorted(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with n, k and trial ascending; a dimension already in order is left alone (sorting it anyway would copy
    every variable of a 10^7-cell cube, its reasons among them, for nothing)."""
    unsorted = [dim for dim in ("n", "k", "trial") if dim in ds.dims
                and not (dim in ds.indexes and ds.indexes[dim].is_monotonic_increasing)]
    return ds.sortby(unsorted) if unsorted else ds


def criteria_in(cube: xr.Dataset) -> list[str]:
    """Criterion variables present in the cube (every output: ``gap`` and ``gap_sd``): those over the cells'
    dimensions (not the stored assignments, which have parts and items too)."""
    return [str(name) for name, values in cube.data_vars.items()
            if name not in ("status", "reason", "seconds", BASELINE) and set(values.dims) == set(cube["status"].dims)]


def per_trial(values: xr.DataArray) -> bool:
    """Whether a score has a value per trial; a criterion reduced from stored assignments has one curve over k
    (:mod:`ordercube.pipeline.reduce.assignments`), which the per-trial reducers leave out."""
    return "trial" in values.dims


def with_reduced(scores: xr.Dataset, curves: xr.Dataset) -> xr.Dataset:
    """``scores`` with the curves of the criteria reduced from stored assignments beside them (dims dataset, n,
    model, k: no trial), so that :func:`select_k` and the report read both alike."""
    if not curves.data_vars:
        return scores
    # a cube whose criteria are all reduced has no per-trial scores, and so no coordinates to align with
    return scores.assign({name: values.reindex({dim: scores[dim].values for dim in values.dims if dim in scores.coords})
                          for name, values in curves.data_vars.items()})


def criteria_of(scores: xr.Dataset) -> list[str]:
    """The criteria whose values ``scores`` holds, by name (a criterion's first variable is its name)."""
    return [str(name) for name in scores.data_vars if VARIABLES.get(str(name), str(name)) == str(name)]


def criterion_scores(cube: xr.Dataset) -> xr.Dataset:
    """Per-trial scores, one variable per criterion, each read by its own decision rule.

    ``lange``: Roth et al. (2002), eq. (5), the raw disagreement divided by the random-labeling baseline of the
    same (n, k): ``S_n = S(alpha) / S(rho_k)``. ``pairwise``: the raw theta_k of Shamir & Tishby (2007), Thm. 3.
    ``prediction_strength``: ps(k) as stored (larger is better). Every other variable as stored
    (``gap`` with its ``gap_sd``, ``clest`` with ``clest_null``, ``bic``, ``aic``, ``agreement``).
    """
    cube = _sorted(cube)
    scores = {}
    for name in criteria_in(cube):
        values = cube[name].where(cube["status"] == 1)
        normalised = name in CRITERIA and CRITERIA[name].normalised_by_random_labels
        if normalised and _baseline_lost(cube, values):  # deleted from the store: never a silently absent criterion
            raise InputError(f"cube_or_scores: {name} is divided by the random-labelling baseline {BASELINE!r}, which "
                             "this cube lacks; open it with ordercube.open_cube(PATH) (its cells then count as "
                             "pending) and run 'ordercube run CONFIG' to compute the baseline again")
        scores[name] = values / cube[BASELINE] if normalised else values
    # The true k travels as the cube's coordinate; a cube built in memory without one may give it as JSON.
    # the cube's coordinates go along even without a per-trial criterion (one whose criteria are all reduced from
    # stored assignments): its datasets' true k among them
    coords = {name: cube[name] for name in (*cube["status"].dims, "true_k") if name in cube.coords}
    out = xr.Dataset(scores, coords=coords, attrs={"true_k": cube.attrs.get("ordercube_true_k", "{}")})
    skipped = cube["status"] == Status.SKIPPED
    if bool(skipped.any()):  # an adaptive cube: the trials in which no k was skipped, for the per-trial reducers
        out = out.assign_coords(complete_trial=~skipped.any("k"))
    return out


def _baseline_lost(cube: xr.Dataset, values: xr.DataArray) -> bool:
    """Whether the random-labelling baseline is missing, or NaN at an (n, k) where ``values`` (of cells marked ok)
    are not: lost from the store, while NaN where the criterion has no value (k = 1) is by design."""
    if BASELINE not in cube:
        return True
    held = values.notnull().any([dim for dim in values.dims if dim not in cube[BASELINE].dims])
    return bool((held & cube[BASELINE].isnull()).any())


def common_prefix(scores: xr.Dataset) -> xr.Dataset:
    """``scores`` on the trials that hold every k of their group: all of them, except in an adaptive cube (the
    adaptive rule stops some k's before others, ordercube.pipeline.run.rounds), where it is the prefix of trials before the
    first elimination. A per-trial reducer (each trial's choice of k, the failure rate) compares the k's of
    one trial, so it reads only these; the means and their k̂ use every trial of each k."""
    if "complete_trial" not in scores.coords:
        return scores
    kept = scores[[name for name, values in scores.data_vars.items() if per_trial(values)]]
    return scores.assign(kept.where(scores["complete_trial"]).data_vars)


def summarise(scores: xr.Dataset) -> xr.Dataset:
    """Mean, standard deviation, standard error of the mean, median, quartiles and number of trials of every
    score over ``trial`` (``{name}_mean``, ``_std``, ``_se``, ``_median``, ``_q25``, ``_q75``, ``_trials``)."""
    out = {}
    with warnings.catch_warnings():
        # cells that are not planned or not ok are NaN by design: an all-NaN slice is a normal case
        warnings.filterwarnings("ignore", "All-NaN slice encountered", RuntimeWarning)
        warnings.filterwarnings("ignore", "Degrees of freedom <= 0", RuntimeWarning)
        for name, values in scores.data_vars.items():
            if not per_trial(values):  # one curve: its value is its mean and median; no spread over trials
                out |= {f"{name}_{stat}": values for stat in ("mean", "median")}
                out |= {f"{name}_{stat}": xr.full_like(values, np.nan) for stat in ("std", "se", "q25", "q75")}
                out[f"{name}_trials"] = values.notnull().astype(np.int64)
                continue
            out[f"{name}_mean"] = values.mean("trial")
            out[f"{name}_std"] = values.std("trial", ddof=1)
            out[f"{name}_median"] = values.median("trial")
            out[f"{name}_q25"] = values.quantile(0.25, "trial").drop_vars("quantile")
            out[f"{name}_q75"] = values.quantile(0.75, "trial").drop_vars("quantile")
            out[f"{name}_trials"] = values.notnull().sum("trial")
            out[f"{name}_se"] = out[f"{name}_std"] / np.sqrt(out[f"{name}_trials"].where(out[f"{name}_trials"] > 0))
    return xr.Dataset(out, attrs=scores.attrs)


def decisions(scores: xr.Dataset, decide: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Decision]:
    """Each criterion's decision rule, with the fields given in ``decide`` replaced.

    ``decide`` maps a criterion to new values of its rule's adjustable fields, e.g.
    ``{"prediction_strength": {"threshold": 0.8}, "gap": {"method": "globalmax"}, "clest": {"p_max": 0.1}}``.
    A ``ValueError`` names a criterion or field that does not exist, or a value that is not allowed.
    """
    if decide is not None and not (isinstance(decide, Mapping)
                                   and all(isinstance(fields, Mapping) for fields in decide.values())):
        raise ValueError(f"expected {{CRITERION: {{FIELD: VALUE}}}}, got {decide!r}; e.g. {{'lange': {{'ties': 'largest'}}}}")
    return decisions_of(criteria_of(scores), decide)


def decisions_of(names: list[str], decide: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Decision]:
    """:func:`decisions` of the criteria ``names``. A field of ``decide`` that names an option of a criterion
    reduced from stored assignments (``pac.window``) is that criterion's option, not its rule's: it is checked
    where the criterion is computed (:func:`ordercube.pipeline.reduce.assignments.resolved_options`)."""
    decide = {name: dict(fields) for name, fields in (decide or {}).items()}
    out = {}
    for name in names:
        decision = CRITERIA[name].decision if name in CRITERIA else Decision()
        changes = decide.pop(name, {})
        if name in CRITERIA and CRITERIA[name].reduce is not None:
            changes = {field: value for field, value in changes.items() if field not in CRITERIA[name].options}
        allowed = ADJUSTABLE[decision.rule]
        for field, value in changes.items():
            if field not in allowed:
                raise ValueError(f"{name}.{field}: the decision rule of {name} ({decision.rule}) has "
                                 + (f"the fields {list(allowed)}" if allowed else "nothing to adjust"))
            if field == "method":
                if value not in GAP_METHODS:
                    raise ValueError(f"{name}.method = {value!r} is not one of {list(GAP_METHODS)}")
            elif field == "ties":
                if value not in ("largest", "smallest"):
                    raise ValueError(f"{name}.ties = {value!r} is not one of ['largest', 'smallest']")
            elif field == "aggregate":
                if value not in AGGREGATES:
                    raise ValueError(f"{name}.aggregate = {value!r} is not one of {list(AGGREGATES)}")
            else:
                bounds = decision.threshold_range if field == "threshold" else FIELD_RANGES.get(field)
                changes[field] = _decision_number(name, field, value, bounds)
        out[name] = replace(decision, **changes)
    if decide:
        raise ValueError(f"{sorted(decide)[0]!r}: no such criterion in the cube; it has {sorted(out)}")
    return out


def _decision_number(name: str, field: str, value: Any, bounds: tuple[float, float] | None) -> float:
    """``value`` as a finite float within ``bounds`` (inclusive); a ``ValueError`` naming it otherwise (NaN
    would silently change every comparison, and with it k̂; a threshold outside the criterion's values makes
    every k qualify, or none)."""
    low, high = bounds or (-np.inf, np.inf)
    expected = "a number (finite" + ("" if np.isinf(low) else f", in [{low:g}, {high:g}]" if np.isfinite(high)
                                     else f", >= {low:g}") + ")"
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        number = np.nan
    if not (np.isfinite(number) and low <= number <= high):
        raise ValueError(f"{name}.{field} = {value!r}: expected {expected}")
    return number


def _gap_choice(gap: xr.DataArray, sd: xr.DataArray, decision: Decision) -> xr.DataArray:
    """R's ``maxSE`` on each Gap curve (k ascending), over the k that hold a value; -1 where none does."""
    ks = gap["k"].values

    def choose(f: np.ndarray, se: np.ndarray) -> np.int64:
        present = ~np.isnan(f)
        if not present.any():
            return np.int64(-1)
        index = max_se(f[present], se[present], method=str(decision.method), se_factor=float(decision.se_factor))
        return np.int64(ks[present][index])

    return xr.apply_ufunc(choose, gap, sd, input_core_dims=[["k"], ["k"]], vectorize=True, output_dtypes=[np.int64])


def _clest_choice(observed: xr.DataArray, null: xr.DataArray, decision: Decision, *, per_trial: bool) -> xr.DataArray:
    """Dudoit & Fridlyand's rule: t_k (the median over trials, or one trial's own value) against the
    trials' reference medians t0_kb (B0 = number of trials)."""
    ks = observed["k"].values

    def choose(t: np.ndarray, t0: np.ndarray) -> np.int64:
        return np.int64(clest_choice(t, t0, ks, p_max=float(decision.p_max), d_min=float(decision.d_min)))

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "All-NaN slice encountered", RuntimeWarning)
        statistic = observed if per_trial else observed.median("trial")
    reference = null.rename(trial="reference")
    return xr.apply_ufunc(choose, statistic, reference, input_core_dims=[["k"], ["k", "reference"]], vectorize=True,
                          output_dtypes=[np.int64])


def _kernel(function: Any, values: xr.DataArray, core: tuple[str, ...], out: tuple[str, ...] = ()) -> xr.DataArray:
    """``function`` (a :mod:`ordercube.tasks.criteria.rules` kernel on trailing axes) over the dims ``core`` of ``values``,
    giving the dims ``out`` (their coordinates kept)."""
    return xr.apply_ufunc(function, values.transpose(..., *core), input_core_dims=[list(core)],
                          output_core_dims=[list(out)])


def _rule_choice(curve: xr.DataArray, decision: Decision) -> xr.DataArray:
    """The k that ``decision``'s rule (:func:`ordercube.tasks.criteria.rules.choose_along`) takes on each curve, -1: none."""
    ks = curve["k"].values
    threshold = None if decision.threshold is None else float(decision.threshold)
    index = _kernel(lambda values: rules.choose_along(values, decision.rule, ties=decision.ties, threshold=threshold),
                    curve, ("k",))
    return index.copy(data=np.where(index.values >= 0, ks[np.maximum(index.values, 0)], -1).astype(np.int64))


def _choose(scores: xr.Dataset, name: str, decision: Decision, *, per_trial: bool) -> xr.DataArray:
    """k̂ of criterion ``name`` by ``decision``: from the trials (``decision.aggregate``), or for every trial."""
    if not per_trial and decision.aggregate == "median_of_choices" and per_trial_scores(scores, name):
        return _kernel(rules.lower_median_choice, _choose(scores, name, decision, per_trial=True), ("trial",))

    if not per_trial and decision.aggregate == "median_of_choices" and not per_trial_scores(scores, name):
        decision = replace(decision, aggregate="mean")  # one curve: no trials to take the median choice of

    def curve(variable: str) -> xr.DataArray:
        if per_trial or "trial" not in scores[variable].dims:
            return scores[variable]
        function = rules.median_curve if decision.aggregate == "median" else rules.mean_curve
        return _kernel(function, scores[variable], ("trial", "k"), ("k",))

    if decision.rule == "gap":
        return _gap_choice(curve("gap"), curve("gap_sd"), decision)
    if decision.rule == "clest":
        return _clest_choice(scores["clest"], scores["clest_null"], decision, per_trial=per_trial)
    return _rule_choice(curve(decided_on(name, decision)), decision)


def decided_on(name: str, decision: Decision) -> str:
    """The output of criterion ``name`` whose curve its rule reads: the one its decision names, else its first."""
    return getattr(decision, "output", "") or name


def per_trial_scores(scores: xr.Dataset, name: str) -> bool:
    """Whether criterion ``name`` has per-trial values in ``scores`` (not one curve reduced from assignments)."""
    return per_trial(scores[name])


def choose_on_curves(curves: xr.Dataset, name: str, decision: Decision) -> xr.DataArray:
    """k̂ of criterion ``name`` by ``decision`` on curves over k without trials (any other dims kept: the bootstrap's
    replicates), -1 where none."""
    return _choose(curves, name, decision, per_trial=False)


def deciding_rules(scores: xr.Dataset, decide: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Decision]:
    """The decision rules of the criteria that choose a k (every one but the diagnostics), ``decide`` applied."""
    return {name: rule for name, rule in decisions(scores, decide).items() if rule.rule != "none"}


def select_k(scores: xr.Dataset, decide: Mapping[str, Mapping[str, Any]] | None = None) -> xr.Dataset:
    """k̂ per (dataset, n, model) for each model-order criterion, by its decision rule on the mean over
    trials (Clest: on the median, against the trials' reference sets)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Mean of empty slice", RuntimeWarning)
        warnings.filterwarnings("ignore", "All-NaN slice encountered", RuntimeWarning)  # per-k medians
        return xr.Dataset({name: _choose(scores, name, rule, per_trial=False)
                           for name, rule in deciding_rules(scores, decide).items()}, attrs=scores.attrs)


def choice_per_trial(scores: xr.Dataset, decide: Mapping[str, Mapping[str, Any]] | None = None) -> xr.Dataset:
    """Each trial's own choice of k (same rule as :func:`select_k`), -1 for a trial without a choice."""
    scores = common_prefix(scores)
    return xr.Dataset({name: _choose(scores, name, rule, per_trial=True)
                       for name, rule in deciding_rules(scores, decide).items() if per_trial_scores(scores, name)},
                      attrs=scores.attrs)


def selection_frequency(choices: xr.Dataset, k: xr.DataArray) -> xr.Dataset:
    """For every k, the fraction of trials (among those with a choice) that chose it."""
    out = {}
    for name, choice in choices.data_vars.items():
        valid = (choice >= 0).sum("trial")
        hits = xr.concat([(choice == value).sum("trial") for value in k.values], dim=k, coords="different", compat="equals")
        out[name] = (hits / valid.where(valid > 0)).transpose(*DECISION_DIMS, "k")
    return xr.Dataset(out, attrs=choices.attrs)


def true_k(ds: xr.Dataset) -> xr.DataArray:
    """The known number of clusters of each dataset (-1 when unknown): the ``true_k`` coordinate of the
    cube (format 3, or added by ``open_cube`` to older ones), else the JSON of a cube built in memory."""
    names = ds["dataset"].values
    if "true_k" in ds.coords:
        values = ds["true_k"].values.astype(np.int64)
    else:
        known = json.loads(ds.attrs.get("true_k", "{}"))
        values = np.array([int(known.get(str(name), -1)) for name in names], dtype=np.int64)
    return xr.DataArray(values, dims="dataset", coords={"dataset": names})


def failure_rate(scores: xr.Dataset, decide: Mapping[str, Mapping[str, Any]] | None = None) -> xr.Dataset:
    """Fraction of trials whose choice missed the dataset's true k (NaN when k is unknown).

    For an argmin rule, Shamir & Tishby's (2007) definition ("theta_3 was not the smallest of the three"): a
    trial fails when some other k scores lower than the true k beyond the tie tolerance
    (``ordercube.tasks.criteria.rules.TIE_RTOL``), or when the true k has no value in that trial. Without ties this is the
    trial's own choice differing from the true k; with a tie at the minimum the true k is among the smallest and
    the trial does not count as a failure, whichever k the tie rule picks. For the other rules, a trial fails
    when its choice is not the true k. Trials without any value are left out, and in an adaptive cube those
    after its common prefix (:func:`common_prefix`).
    """
    truth = true_k(scores)
    scores = common_prefix(scores)
    out = {}
    for name, rule in deciding_rules(scores, decide).items():
        if not per_trial_scores(scores, name):  # one curve reduced from assignments: no trial chose anything
            continue
        # a classifier's order has no "true k" to miss (its oracle is the least test or true error): NaN
        known = truth if name not in CRITERIA or CRITERIA[name].counts_clusters else xr.full_like(truth, -1)
        values = scores[name]
        valid = values.notnull().any("k")
        if rule.rule == "smallest":
            at_truth, best = _at_true_k(values, known), values.min("k")
            failed = valid & ~((at_truth <= best) | xr.apply_ufunc(rules.tied_with, at_truth, best))
        else:
            failed = valid & (_choose(scores, name, rule, per_trial=True) != known)
        count = valid.sum("trial")
        out[name] = (failed.sum("trial") / count.where(count > 0)).where(known >= 0)
    return xr.Dataset(out, attrs=scores.attrs)


def _at_true_k(values: xr.DataArray, truth: xr.DataArray) -> xr.DataArray:
    """Each dataset's values at its own true k (NaN where that k is not in the cube or unknown)."""
    rows = []
    for name in values["dataset"].values:
        k = int(truth.sel(dataset=name))
        row = values.sel(dataset=name)
        at_k = row.sel(k=k) if k in values["k"].values else xr.full_like(row.isel(k=0), np.nan)
        rows.append(at_k.drop_vars("k"))
    return xr.concat(rows, dim="dataset", coords="different", compat="equals")  # the true_k coordinate goes along


def sqrt_n_scaled(summary: xr.Dataset) -> xr.Dataset:
    """Mean scores multiplied by sqrt(n): flat in n when an instability shrinks like 1/sqrt(n)."""
    means = {str(name).removesuffix("_mean"): values for name, values in summary.data_vars.items()
             if str(name).endswith("_mean")}
    return xr.Dataset({name: values * np.sqrt(values["n"]) for name, values in means.items()}, attrs=summary.attrs)
