"""Reports: the k̂ table (printed and as ``selection.csv``) and the figures, all from the reducers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from pipeline.grid import DIMS, Coords, planned_mask
from pipeline.reduce import (
    choice_per_trial, criterion_scores, failure_rate, select_k, selection_frequency, sqrt_n_scaled, summarise, true_k,
)
from tasks.cell import Status

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def status_counts(cube: xr.Dataset) -> dict[str, int]:
    """Planned cells by status: the integer keys ``total, ok, failed, infeasible, pending``."""
    coords = Coords(**{dim: tuple(cube[dim].values.tolist()) for dim in DIMS})
    mask = planned_mask(json.loads(cube.attrs["ordercube_plan"]), coords)
    status = cube["status"].values[mask]
    counts = {s.name.lower(): int((status == s).sum()) for s in Status}
    return {"total": int(mask.sum()), "ok": counts["ok"], "failed": counts["failed"],
            "infeasible": counts["infeasible"], "pending": counts["pending"]}


def selection_table(cube: xr.Dataset, thresholds: Mapping[str, float] | None = None) -> pd.DataFrame:
    """One row per (dataset, n, method, criterion): k̂, how often trials chose it, the failure rate."""
    scores = criterion_scores(cube)
    chosen, choices = select_k(scores, thresholds), choice_per_trial(scores, thresholds)
    frequency, truth = selection_frequency(choices, scores["k"]), true_k(scores)
    failures = failure_rate(scores, thresholds)
    rows = []
    for criterion in scores.data_vars:
        trials = scores[criterion].notnull().any("k").sum("trial")
        for dataset in scores["dataset"].values:
            for n in scores["n"].values:
                for model in scores["model"].values:
                    at = {"dataset": dataset, "n": n, "model": model}
                    if int(trials.sel(at)) == 0:
                        continue
                    k_hat = int(chosen[criterion].sel(at))
                    rows.append({
                        "dataset": str(dataset), "n": int(n), "method": str(model), "criterion": criterion,
                        "k_hat": k_hat,
                        "k_hat_frequency": float(frequency[criterion].sel(at).sel(k=k_hat)) if k_hat > 0 else np.nan,
                        "true_k": int(truth.sel(dataset=dataset)),
                        "failure_rate": float(failures[criterion].sel(at)),
                        "trials": int(trials.sel(at)),
                    })
    return pd.DataFrame(rows)


def _panels(count: int) -> tuple[Figure, np.ndarray]:
    from matplotlib.figure import Figure  # imported when drawing; never pyplot, never the global backend

    columns = min(count, 3)
    rows = int(np.ceil(count / columns))
    figure = Figure(figsize=(4.5 * columns, 3.4 * rows))
    axes = figure.subplots(rows, columns, squeeze=False)
    for ax in axes.ravel()[count:]:
        ax.set_visible(False)
    return figure, axes.ravel()


def plot_curves_vs_k(summary: xr.Dataset, criterion: str, path: Path) -> None:
    """Mean score vs k for every (dataset, method), one line per n, quartiles shaded."""
    pairs = [(d, m) for d in summary["dataset"].values for m in summary["model"].values
             if summary[f"{criterion}_trials"].sel(dataset=d, model=m).sum() > 0]
    figure, axes = _panels(len(pairs))
    for ax, (dataset, model) in zip(axes, pairs):
        for n in summary["n"].values:
            at = {"dataset": dataset, "model": model, "n": n}
            mean = summary[f"{criterion}_mean"].sel(at)
            if mean.notnull().sum() == 0:
                continue
            line, = ax.plot(mean["k"], mean, marker="o", ms=3, label=f"n={n}")
            ax.fill_between(mean["k"], summary[f"{criterion}_q25"].sel(at), summary[f"{criterion}_q75"].sel(at),
                            color=line.get_color(), alpha=0.15)
        ax.set(title=f"{dataset} / {model}", xlabel="k", ylabel=f"{criterion} (mean, quartiles)")
        ax.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def _pairs_with_values(data: xr.DataArray) -> list[tuple[str, str]]:
    return [(d, m) for d in data["dataset"].values for m in data["model"].values
            if data.sel(dataset=d, model=m).notnull().sum() > 0]


def _draw_vs_n(ax: Axes, curve: xr.DataArray, *, ylabel: str, log: bool, errors: xr.DataArray | None = None) -> None:
    """One panel: ``curve`` against n (log axis), one line per k when it has a k dimension.

    With ``errors`` the curve is a fraction: error bars of that size, y from 0 to at least 0.5 as in
    seed 001's failure-rate panels, so a few failures do not fill the panel.
    """
    per_k = "k" in curve.dims
    for k in (curve["k"].values if per_k else [None]):
        y = curve.sel(k=k) if per_k else curve
        ax.plot(curve["n"], y, marker="o", ms=3, label=f"k={k}" if per_k else None)
    if errors is not None:
        ax.errorbar(curve["n"], curve, yerr=errors, fmt="none", capsize=2)
        ax.set_ylim(0.0, max(0.5, 1.05 * float(curve.max())))
    ax.set(xlabel="n", ylabel=ylabel, xscale="log")
    if log:
        ax.set_yscale("log")
    if per_k:
        ax.legend(fontsize=7, ncol=2)


def plot_vs_n(data: xr.DataArray, path: Path, *, ylabel: str, log: bool, errors: xr.DataArray | None = None) -> None:
    """A quantity vs n, one panel per (dataset, method): one line per k if ``data`` has k, else one line."""
    pairs = _pairs_with_values(data)
    figure, axes = _panels(max(len(pairs), 1))
    for ax, (dataset, model) in zip(axes, pairs):
        at = {"dataset": dataset, "model": model}
        _draw_vs_n(ax, data.sel(at), ylabel=ylabel, log=log, errors=None if errors is None else errors.sel(at))
        ax.set_title(f"{dataset} / {model}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def plot_scaling_study(mean: xr.DataArray, scaled: xr.DataArray, failures: xr.DataArray, errors: xr.DataArray,
                       criterion: str, path: Path) -> None:
    """Seed 001's Figures 1 and 2 in one picture: a row per (dataset, method), three columns.

    Mean score per k vs n (log-log); sqrt(n) x mean (flat where the score shrinks like 1/sqrt(n)); the
    failure rate vs n with ± 1 binomial SE. Seed 001 plots against m = n/2 (the size of one half).
    """
    from matplotlib.figure import Figure

    pairs = _pairs_with_values(mean)
    figure = Figure(figsize=(13.5, 3.2 * max(len(pairs), 1)))
    axes = figure.subplots(max(len(pairs), 1), 3, squeeze=False)
    for row, (dataset, model) in zip(axes, pairs):
        at = {"dataset": dataset, "model": model}
        _draw_vs_n(row[0], mean.sel(at), ylabel=f"mean {criterion}", log=True)
        _draw_vs_n(row[1], scaled.sel(at), ylabel=f"sqrt(n) * mean {criterion}", log=True)
        _draw_vs_n(row[2], failures.sel(at), ylabel="failure rate ± 1 SE", log=False, errors=errors.sel(at))
        for ax in row:
            ax.set_title(f"{dataset} / {model}", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def plot_selection_frequency(frequency: xr.Dataset, chosen: xr.Dataset, criterion: str, path: Path,
                             truth: xr.DataArray) -> None:
    """How often trials chose each k, as a k x n heatmap for every (dataset, method); k̂ circled, true k dashed."""
    data = frequency[criterion]
    pairs = [(d, m) for d in data["dataset"].values for m in data["model"].values
             if data.sel(dataset=d, model=m).notnull().sum() > 0]
    figure, axes = _panels(max(len(pairs), 1))
    for ax, (dataset, model) in zip(axes, pairs):
        grid = data.sel(dataset=dataset, model=model).transpose("k", "n")
        ns, ks = grid["n"].values, grid["k"].values
        image = ax.imshow(grid.values, origin="lower", aspect="auto", vmin=0, vmax=1, cmap="viridis")
        k_hat = chosen[criterion].sel(dataset=dataset, model=model).values
        shown = k_hat > 0
        ax.plot(np.flatnonzero(shown), np.searchsorted(ks, k_hat[shown]), "o", mfc="none", mec="red", ms=9)
        if int(truth.sel(dataset=dataset)) in ks:
            ax.axhline(np.searchsorted(ks, int(truth.sel(dataset=dataset))), color="white", ls="--", lw=0.8)
        ax.set_xticks(range(len(ns)), [str(n) for n in ns], rotation=45, fontsize=7)
        ax.set_yticks(range(len(ks)), [str(k) for k in ks], fontsize=7)
        ax.set(title=f"{dataset} / {model}", xlabel="n", ylabel="k chosen by the trial")
        figure.colorbar(image, ax=ax, label="fraction of trials")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def write_report(cube: xr.Dataset, out: Path, thresholds: Mapping[str, float] | None = None) -> pd.DataFrame:
    """``selection.csv`` and the PNG figures of every criterion in ``out``; returns the table.

    ``thresholds`` re-decides threshold criteria (``{"prediction_strength": 0.8}``) from the stored values.
    """
    out.mkdir(parents=True, exist_ok=True)
    table = selection_table(cube, thresholds)
    table.to_csv(out / "selection.csv", index=False)
    scores = criterion_scores(cube)
    summary, failures = summarise(scores), failure_rate(scores, thresholds)
    scaled = sqrt_n_scaled(summary)
    chosen = select_k(scores, thresholds)
    frequency = selection_frequency(choice_per_trial(scores, thresholds), scores["k"])
    for criterion in map(str, scores.data_vars):
        plot_curves_vs_k(summary, criterion, out / f"{criterion}_vs_k.png")
        mean = summary[f"{criterion}_mean"]
        trials = scores[criterion].notnull().any("k").sum("trial")
        standard_error = np.sqrt(failures[criterion] * (1 - failures[criterion]) / trials.where(trials > 0))
        plot_vs_n(mean, out / f"{criterion}_mean_vs_n.png", ylabel=f"mean {criterion}", log=True)
        plot_vs_n(failures[criterion], out / f"{criterion}_failure_rate_vs_n.png",
                  ylabel="failure rate (true k not smallest) ± 1 SE", log=False, errors=standard_error)
        plot_vs_n(scaled[criterion], out / f"{criterion}_sqrt_n_scaled_vs_n.png", ylabel=f"sqrt(n) * mean {criterion}",
                  log=True)
        if scores.sizes["n"] > 1:
            plot_scaling_study(mean, scaled[criterion], failures[criterion], standard_error, criterion,
                               out / f"{criterion}_scaling.png")
        plot_selection_frequency(frequency, chosen, criterion, out / f"{criterion}_selection_frequency.png",
                                 true_k(scores))
    return table
