"""Reducers for classifiers whose order is chosen with labels (Daudin & Mary-Huard 2008): per-trial choices read back.

Daudin & Mary-Huard (2008, Table 1) report, per setting, the mean chosen k (N) and the mean error *at each trial's own choice* (R)
of three selectors: the swapping method (S), leave-one-out CV and the oracle (O, the least test or
true error over the same candidates); then the relative gain of S over CV,
G = 100 (L_CV - L_S) / (L_CV - L_O), the 95% quantiles of L_S - L_O and L_CV - L_O, and the mean
|k_O - k̂|. All of it is read from the stored cube (no recomputation) with each criterion's tie rule
(ties to the smallest k; ``decide={name: {"ties": "largest"}}`` is the sensitivity variant).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ordercube.pipeline.reduce.select import choice_per_trial

ORACLES = ("test_error", "true_error")  # the error the oracle minimises and every selector is judged by
SELECTORS = ("swapping", "loo_cv")
BOOTSTRAP_DRAWS = 2000


def oracle_of(scores: xr.Dataset) -> str | None:
    """The variable that judges the choices: the held-out test error, else the exact true error."""
    return next((name for name in ORACLES if name in scores), None)


def at_choice(values: xr.DataArray, choice: xr.DataArray) -> xr.DataArray:
    """``values`` (…, k, trial) read at each trial's own k̂ (``choice``, -1: none → NaN); generalises the
    agreement at k̂ to any variable (the paper's R: the test or true error at the chosen k)."""
    ks = values["k"].values
    index = xr.DataArray(np.searchsorted(ks, choice.values.clip(min=ks[0])), dims=choice.dims, coords=choice.coords)
    picked = values.isel(k=index.clip(max=ks.size - 1)).drop_vars("k", errors="ignore")
    return picked.where(choice >= 0)


def _bootstrap_interval(statistic: Any, columns: list[np.ndarray], *, level: float = 0.90) -> tuple[float, float]:
    """A paired percentile bootstrap interval over trials (the same resampled trials for every column);
    its stream is fixed, so a report is reproducible."""
    rng = np.random.default_rng([3, BOOTSTRAP_DRAWS])
    size = columns[0].size
    draws = np.array([statistic(*(column[rows] for column in columns))
                      for rows in rng.integers(0, size, size=(BOOTSTRAP_DRAWS, size))])
    low, high = np.nanquantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


def _gain(cv: np.ndarray, swap: np.ndarray, oracle: np.ndarray) -> float:
    denominator = cv.mean() - oracle.mean()
    return float(100 * (cv.mean() - swap.mean()) / denominator) if denominator > 0 else np.nan


def _difference(cv: np.ndarray, swap: np.ndarray, oracle: np.ndarray) -> float:
    return float(cv.mean() - swap.mean())


def selection_rows(scores: xr.Dataset, decide: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """One row per (dataset, n, method, selector): N, R (the oracle's error at the trial's k̂; mean and its
    standard error), the selector's own estimate at k̂ (its optimism is estimate - R), mean ``|k_O - k̂|`` and
    the 95% quantile of L_selector - L_O over trials."""
    oracle = oracle_of(scores)
    if oracle is None:
        return pd.DataFrame()
    choices = choice_per_trial(scores, decide)
    selectors = [oracle, *[name for name in SELECTORS if name in choices]]
    errors = {name: at_choice(scores[oracle], choices[name]) for name in selectors}
    estimates = {name: at_choice(scores[name], choices[name]) for name in selectors}
    rows = []
    for at in settings_with_values(scores[oracle]):
        best = errors[oracle].sel(at).values
        for name in selectors:
            chosen, error = choices[name].sel(at).values, errors[name].sel(at).values
            valid = (chosen >= 0) & ~np.isnan(error)
            own = estimates[name].sel(at).values[valid]
            rows.append({**{key: _plain(value) for key, value in at.items()}, "selector": name, "trials": int(valid.sum()),
                         "N": chosen[valid].mean(), "R": error[valid].mean(),
                         "R_se": error[valid].std(ddof=1) / np.sqrt(valid.sum()) if valid.sum() > 1 else np.nan,
                         "estimate_at_k_hat": own.mean(),
                         "mean_abs_k_minus_k_oracle": np.abs(chosen[valid] - choices[oracle].sel(at).values[valid]).mean(),
                         "q95_excess_over_oracle": np.quantile(error[valid] - best[valid], 0.95)})
    return pd.DataFrame(rows).rename(columns={"model": "method"})


def gain_rows(scores: xr.Dataset, decide: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """Per (dataset, n, method): the gain G of the swapping method over CV with a paired bootstrap 90%
    interval, and L_CV - L_S (the difference G divides, which stays meaningful when L_CV - L_O is ~0)."""
    oracle = oracle_of(scores)
    if oracle is None or not all(name in scores for name in SELECTORS):
        return pd.DataFrame()
    choices = choice_per_trial(scores, decide)
    errors = {name: at_choice(scores[oracle], choices[name]) for name in (oracle, *SELECTORS)}
    rows = []
    for at in settings_with_values(scores[oracle]):
        columns = [errors[name].sel(at).values for name in ("loo_cv", "swapping", oracle)]
        valid = np.logical_and.reduce([~np.isnan(column) for column in columns])
        cv, swap, best = (column[valid] for column in columns)
        if not valid.any():
            continue
        rows.append({**{key: _plain(value) for key, value in at.items()}, "trials": int(valid.sum()),
                     "L_cv_minus_L_oracle": float(cv.mean() - best.mean()),
                     "G": _gain(cv, swap, best), **dict(zip(("G_low", "G_high"), _bootstrap_interval(_gain, [cv, swap, best]))),
                     "L_cv_minus_L_swap": _difference(cv, swap, best),
                     **dict(zip(("diff_low", "diff_high"), _bootstrap_interval(_difference, [cv, swap, best])))})
    return pd.DataFrame(rows).rename(columns={"model": "method"})


def settings_with_values(values: xr.DataArray) -> list[dict[str, Any]]:
    """The (dataset, n, model) where ``values`` (per k and trial, or already summarised) holds a value."""
    present = values.notnull().any([dim for dim in values.dims if dim not in ("dataset", "n", "model")])
    return [{"dataset": d, "n": n, "model": m} for d in present["dataset"].values for n in present["n"].values
            for m in present["model"].values if bool(present.sel(dataset=d, n=n, model=m))]


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else value
