"""Reports: the k̂ table (printed and as ``selection.csv``) and the figures, all from the reducers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr

from pipeline.grid import DIMS, Coords, planned_mask
from pipeline.store import count_planned
from pipeline.reduce import (
    choice_per_trial, criteria_of, criterion_scores, failure_rate, select_k, selection_frequency, sqrt_n_scaled, summarise,
    true_k,
)
from pipeline.reduce_supervised import supervised_in
from pipeline.sweeps import swept
from tasks.criteria import CRITERIA

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def status_counts(cube: xr.Dataset) -> dict[str, int]:
    """Planned cells by status: the integer keys ``total, ok, failed, infeasible, crashed, pending``."""
    coords = Coords(**{dim: tuple(cube[dim].values.tolist()) for dim in DIMS})
    return count_planned(cube["status"].values, planned_mask(json.loads(cube.attrs["ordercube_plan"]), coords))


def selection_table(cube: xr.Dataset, decide: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """One row per (dataset, n, method, criterion): k̂, how often trials chose it, the failure rate."""
    scores = criterion_scores(cube)
    chosen, choices = select_k(scores, decide), choice_per_trial(scores, decide)
    frequency, truth = selection_frequency(choices, scores["k"]), true_k(scores)
    failures = failure_rate(scores, decide)
    agreement = scores["agreement"].mean("trial") if "agreement" in scores else None
    rows = []
    for criterion in map(str, chosen.data_vars):
        trials = scores[criterion].notnull().any("k").sum("trial")
        for dataset in scores["dataset"].values:
            for n in scores["n"].values:
                for model in scores["model"].values:
                    at = {"dataset": dataset, "n": n, "model": model}
                    if int(trials.sel(at)) == 0:
                        continue
                    k_hat = int(chosen[criterion].sel(at))
                    has_k_hat = k_hat in scores["k"].values
                    row = {
                        "dataset": str(dataset), "n": int(n), "method": str(model), "criterion": criterion,
                        "k_hat": k_hat,
                        "k_hat_frequency": float(frequency[criterion].sel(at).sel(k=k_hat)) if has_k_hat else np.nan,
                        "true_k": int(truth.sel(dataset=dataset)),
                        "failure_rate": float(failures[criterion].sel(at)),
                        "trials": int(trials.sel(at)),
                    }
                    if agreement is not None:  # the known classes matched by the solution at k̂
                        row["agreement_at_k_hat"] = float(agreement.sel(at).sel(k=k_hat)) if has_k_hat else np.nan
                    rows.append(row)
    return pd.DataFrame(rows)


def published_of(cube: xr.Dataset) -> dict[str, dict[str, int]]:
    """The paper's k̂ the config quoted under ``published`` (``{"rings3/kmeans": {"gap": 1}}``)."""
    return json.loads(cube.attrs.get("ordercube_config", "{}")).get("published") or {}


def comparison_matrix(table: pd.DataFrame, published: Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    """k̂ per (dataset/method, n) x criterion, as "cube k̂ / published k̂" where the paper gives one.

    A Table-1-like view of ``selection_table``'s rows; a trailing ``!`` marks a disagreement.
    """
    cells: dict[tuple[str, int], dict[str, str]] = {}
    for row in table.itertuples():
        pair = f"{row.dataset}/{row.method}"
        paper = published.get(pair, {}).get(row.criterion)
        paper = paper if isinstance(paper, int) else None  # a classifier's {N, R}: in Table 1's layout instead
        text = str(row.k_hat) if paper is None else f"{row.k_hat} / {paper}" + ("" if row.k_hat == paper else " !")
        cells.setdefault((pair, int(row.n)), {})[str(row.criterion)] = text
    criteria = list(dict.fromkeys(table["criterion"]))
    index = pd.MultiIndex.from_tuples(list(cells), names=["dataset/method", "n"])
    return pd.DataFrame([[cells[key].get(c, "") for c in criteria] for key in cells], index=index, columns=criteria)


def panels(count: int) -> tuple[Figure, np.ndarray]:
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
    figure, axes = panels(len(pairs))
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


NO_TRUE_K = "no true k known for this dataset:\nfailure rates need labels or 'true_k: K'"


def _say(ax: Axes, text: str, *, ylabel: str) -> None:
    """A panel that states why it has no curve (a log axis over no data is an error in matplotlib)."""
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=8, transform=ax.transAxes)
    ax.set(xlabel="n", ylabel=ylabel, xticks=[], yticks=[])


def _draw_vs_n(ax: Axes, curve: xr.DataArray, *, ylabel: str, log: bool, errors: xr.DataArray | None = None,
               empty: str = NO_TRUE_K) -> None:
    """One panel: ``curve`` against n (log axis), one line per k when it has a k dimension.

    With ``errors`` the curve is a fraction: error bars of that size, y from 0 to at least 0.5 as in
    seed 001's failure-rate panels, so a few failures do not fill the panel. A curve without any value
    (the failure rate of a dataset whose true k is unknown) gives a panel saying ``empty``.
    """
    if int(curve.notnull().sum()) == 0:
        _say(ax, empty, ylabel=ylabel)
        return
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
    figure, axes = panels(max(len(pairs), 1))
    if not pairs:  # e.g. failure rates of a cube whose datasets have no known true k
        _say(axes[0], NO_TRUE_K.replace("this dataset", "any dataset"), ylabel=ylabel)
    for ax, (dataset, model) in zip(axes, pairs):
        at = {"dataset": dataset, "model": model}
        _draw_vs_n(ax, data.sel(at), ylabel=ylabel, log=log, errors=None if errors is None else errors.sel(at))
        ax.set_title(f"{dataset} / {model}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def plot_scaling_study(mean: xr.DataArray, scaled: xr.DataArray, failures: xr.DataArray, errors: xr.DataArray,
                       criterion: str, path: Path, *, log: bool = True) -> None:
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
        _draw_vs_n(row[0], mean.sel(at), ylabel=f"mean {criterion}", log=log)
        _draw_vs_n(row[1], scaled.sel(at), ylabel=f"sqrt(n) * mean {criterion}", log=log)
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
    figure, axes = panels(max(len(pairs), 1))
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


def write_report(cube: xr.Dataset, out: Path, decide: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """``selection.csv`` and the PNG figures of every criterion in ``out``; returns the table.

    ``decide`` re-decides from the stored values (``{"prediction_strength": {"threshold": 0.8}}``).
    """
    out.mkdir(parents=True, exist_ok=True)
    table = selection_table(cube, decide)
    table.to_csv(out / "selection.csv", index=False)
    scores = criterion_scores(cube)
    summary, failures = summarise(scores), failure_rate(scores, decide)
    scaled = sqrt_n_scaled(summary)
    chosen = select_k(scores, decide)
    choices = choice_per_trial(scores, decide)
    frequency = selection_frequency(choices, scores["k"])
    for criterion in criteria_of(scores):
        if not bool(scores[criterion].notnull().any()):  # a criterion added to the cube but not computed yet
            continue
        plot_curves_vs_k(summary, criterion, out / f"{criterion}_vs_k.png")
        if criterion not in chosen:  # a diagnostic (agreement): its curves only
            continue
        mean = summary[f"{criterion}_mean"]
        several_n = bool((scores[criterion].notnull().any(("k", "trial")).sum("n") > 1).any())
        # a classifier has no true k to fail: its per-trial choices are in the supervised tables
        several_n = several_n and not (criterion in CRITERIA and CRITERIA[criterion].supervised)
        if several_n:  # the curves against n need a (dataset, method) computed at two sample sizes at least
            trials = scores[criterion].notnull().any("k").sum("trial")
            standard_error = np.sqrt(failures[criterion] * (1 - failures[criterion]) / trials.where(trials > 0))
            log = bool((mean.fillna(1.0) > 0).all())  # Gap and BIC values can be negative: linear axes then
            plot_vs_n(mean, out / f"{criterion}_mean_vs_n.png", ylabel=f"mean {criterion}", log=log)
            plot_vs_n(failures[criterion], out / f"{criterion}_failure_rate_vs_n.png",
                      ylabel="failure rate (true k not chosen) ± 1 SE", log=False, errors=standard_error)
            plot_vs_n(scaled[criterion], out / f"{criterion}_sqrt_n_scaled_vs_n.png",
                      ylabel=f"sqrt(n) * mean {criterion}", log=log)
            plot_scaling_study(mean, scaled[criterion], failures[criterion], standard_error, criterion,
                               out / f"{criterion}_scaling.png", log=log)
        plot_selection_frequency(frequency, chosen, criterion, out / f"{criterion}_selection_frequency.png",
                                 true_k(scores))
    from pipeline.report_transfer import plot_transfer_costs, transfer_criteria

    if transfer_criteria(summary):  # seed 004: every mapping's cost curve, median and quartiles (Fig. 6)
        plot_transfer_costs(summary, out)
    sweeps = swept(json.loads(cube.attrs.get("ordercube_config", "{}")))
    if sweeps:  # a generator parameter as an axis: the choices against it, and where each criterion stops finding k
        from pipeline.report_sweep import write_sweeps

        table.attrs["sweep_crossings"] = write_sweeps(frequency, true_k(scores), sweeps, out)
    from pipeline.report_matrix import matrix_criteria

    if matrix_criteria(scores):  # seed 004's matrix models: each criterion's rank against the oracle's, the PSNR crest
        from pipeline.report_matrix import write_matrix_report

        table.attrs["matrix_ranks"] = write_matrix_report(scores, chosen, choices, sweeps, out)
    if supervised_in(scores):
        from pipeline.report_supervised import write_supervised

        table.attrs["table_one"] = write_supervised(scores, out, published_of(cube), decide)
    return table
