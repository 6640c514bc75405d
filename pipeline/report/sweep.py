"""The report of a swept generator parameter (``sweep:``): the trials' choices of k against the parameter.

Frank et al.'s (2011) Fig. 1 shows, as the overlap of three Gaussians grows, where BIC, AIC and the transfer cost stop
choosing 3. Per (swept entry, method, n) this writes ``sweep.csv`` (for every value and criterion: the
modal per-trial choice, its frequency, the frequency of the true k), ``sweep_frequency.csv`` (the share of trials
choosing each k: the heat maps' values; both also as tables of ``index.html``) and a figure with one panel per
criterion (how often each k was chosen, as a k x value heatmap) and one panel with every criterion's
frequency of the true k; the **crossing point** of a criterion is the first value, in the order the config
lists them, at which its modal per-trial choice falls below the true k (Frank et al. 2011, Sec. 3:
"BIC starts selecting k < 3, while MTC still estimates 3 Gaussians").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from ordercube.pipeline.report.figures import Figures
from ordercube.pipeline.files.outputs import write_csv
from ordercube.pipeline.report.section import SectionContext, SectionResult
from ordercube.pipeline.report.values import section_tables
from ordercube.pipeline.config.sweeps import Swept

if TYPE_CHECKING:
    from matplotlib.figure import Figure

TRUE_K_UNKNOWN = -1


def sweep_table(frequency: xr.Dataset, truth: xr.DataArray, datasets: Mapping[str, Swept]) -> pd.DataFrame:
    """One row per (swept entry, value, n, method, criterion): the modal choice and how often the true k was chosen."""
    rows = []
    for dataset, sweep in datasets.items():
        if dataset not in frequency["dataset"].values:
            continue
        true_k = int(truth.sel(dataset=dataset))
        for criterion in map(str, frequency.data_vars):
            data = frequency[criterion].sel(dataset=dataset)
            for n in data["n"].values:
                for model in data["model"].values:
                    curve = data.sel(n=n, model=model)
                    if not bool(curve.notnull().any()) or float(curve.sum()) == 0:
                        continue
                    modal = int(curve["k"].values[int(curve.argmax("k"))])
                    rows.append({"sweep": sweep.base, "parameter": sweep.parameter, "value": sweep.value,
                                 "dataset": dataset, "n": int(n), "method": str(model), "criterion": criterion,
                                 "modal_k": modal, "modal_frequency": float(curve.max()), "true_k": true_k,
                                 "true_k_frequency": float(curve.sel(k=true_k)) if true_k in curve["k"].values else np.nan})
    return pd.DataFrame(rows)


def frequency_table(frequency: xr.Dataset, table: pd.DataFrame) -> pd.DataFrame:
    """The heat maps' values: per row of :func:`sweep_table` (swept entry, value, n, method, criterion), the share of
    trials that chose each k."""
    rows = []
    for row in table.itertuples(index=False):
        curve = frequency[row.criterion].sel(dataset=row.dataset, n=row.n, model=row.method)
        rows += [{"sweep": row.sweep, "parameter": row.parameter, "value": row.value, "dataset": row.dataset, "n": row.n,
                  "method": row.method, "criterion": row.criterion, "k": int(k), "frequency": float(share)}
                 for k, share in zip(curve["k"].values, curve.values) if np.isfinite(share)]
    return pd.DataFrame(rows)


def crossing_points(table: pd.DataFrame) -> pd.DataFrame:
    """Per (swept entry, n, method, criterion): the first value at which the modal choice is below the true k."""
    rows = []
    for (base, parameter, n, method, criterion), group in table.groupby(["sweep", "parameter", "n", "method", "criterion"],
                                                                      sort=False):
        if not (group["true_k"] > 0).any():  # no true k (a matrix's rank, real data): nothing to fall below
            continue
        below = group[(group["true_k"] > 0) & (group["modal_k"] < group["true_k"])]
        rows.append({"sweep": base, "parameter": parameter, "n": n, "method": method, "criterion": criterion,
                     "crossing": below["value"].iloc[0] if len(below) else np.nan})
    return pd.DataFrame(rows)


def plot_sweep(frequency: xr.Dataset, table: pd.DataFrame, crossings: pd.DataFrame, *, base: str, n: int,
               method: str) -> Figure:
    """One panel per criterion (selection frequency, k x value) and one of every criterion's frequency of the true k."""
    from matplotlib.figure import Figure

    rows = table[(table["sweep"] == base) & (table["n"] == n) & (table["method"] == method)]
    criteria = list(dict.fromkeys(rows["criterion"]))
    datasets = list(dict.fromkeys(rows["dataset"]))
    values = [rows[rows["dataset"] == d]["value"].iloc[0] for d in datasets]
    parameter, true_k = rows["parameter"].iloc[0], int(rows["true_k"].iloc[0])
    figure = Figure(figsize=(4.2 * (len(criteria) + 1), 3.6))
    axes = figure.subplots(1, len(criteria) + 1, squeeze=False)[0]
    ticks = range(len(values))
    labels = [f"{v:g}" if isinstance(v, float) else str(v) for v in values]
    for ax, criterion in zip(axes, criteria):
        grid = frequency[criterion].sel(dataset=datasets, n=n, model=method).transpose("k", "dataset")
        ks = grid["k"].values
        image = ax.imshow(grid.values, origin="lower", aspect="auto", vmin=0, vmax=1, cmap="viridis")
        modal = rows[rows["criterion"] == criterion].set_index("dataset").loc[datasets, "modal_k"].to_numpy()
        ax.plot(list(ticks), np.searchsorted(ks, modal), "o", mfc="none", mec="red", ms=7, label="modal choice")
        if true_k in ks:
            ax.axhline(int(np.searchsorted(ks, true_k)), color="white", ls="--", lw=0.8)
        ax.set_xticks(list(ticks), labels, rotation=60, fontsize=6)
        ax.set_yticks(range(len(ks)), [str(k) for k in ks], fontsize=7)
        ax.set(title=criterion, xlabel=parameter, ylabel="k chosen by the trial")
        figure.colorbar(image, ax=ax, label="fraction of trials")
    summary = axes[-1]
    for criterion in criteria:
        frequency_of_truth = rows[rows["criterion"] == criterion].set_index("dataset").loc[datasets, "true_k_frequency"]
        line, = summary.plot(list(ticks), frequency_of_truth.to_numpy(), marker="o", ms=3, label=criterion)
        crossing = crossings[(crossings["sweep"] == base) & (crossings["n"] == n) & (crossings["method"] == method) &
                             (crossings["criterion"] == criterion)]["crossing"]
        if len(crossing) and crossing.notna().iloc[0] and crossing.iloc[0] in values:
            summary.axvline(values.index(crossing.iloc[0]), color=line.get_color(), ls=":", lw=1)
    summary.set_xticks(list(ticks), labels, rotation=60, fontsize=6)
    summary.set(title=f"{base} / {method}, n = {n}", xlabel=parameter, ylabel=f"fraction choosing the true k = {true_k}",
                ylim=(-0.02, 1.02))
    summary.legend(fontsize=7)
    figure.tight_layout()
    return figure


def write_sweeps(frequency: xr.Dataset, truth: xr.DataArray, datasets: Mapping[str, Swept], figures: Figures
                 ) -> tuple[pd.DataFrame, str]:
    """``sweep.csv``, ``sweep_frequency.csv`` (every value the heat maps show), ``sweep_crossings.csv`` and one figure
    per (swept entry, n, method); returns the crossings and the tables' HTML."""
    out = figures.folder
    table = sweep_table(frequency, truth, datasets)
    if table.empty:
        return pd.DataFrame(), ""
    write_csv(table, out / "sweep.csv")
    shares = frequency_table(frequency, table)
    write_csv(shares, out / "sweep_frequency.csv")
    crossings = crossing_points(table)
    if crossings.empty:
        crossings = pd.DataFrame(columns=["sweep", "parameter", "n", "method", "criterion", "crossing"])
    write_csv(crossings, out / "sweep_crossings.csv")
    for (base, n, method), _ in table.groupby(["sweep", "n", "method"], sort=False):
        figures.draw(f"sweep_{base}_{method}_n{n}", plot_sweep, frequency, table, crossings, base=base, n=int(n), method=method)
    shown = section_tables([("sweep_crossings.csv", "The first value at which each criterion's modal choice falls "
                                                    "below the true k (empty: never)", crossings),
                            ("sweep.csv", "Per value: each criterion's modal choice, its share and the share choosing "
                                          "the true k (the figures' right panel)", table)])
    shown += section_tables([("sweep_frequency.csv", "The share of trials choosing each k, per value (the figures' "
                                                     "heat maps)", shares)], folded=True)
    return crossings, shown


def section(context: SectionContext) -> SectionResult | None:
    """A general section (any model family): the choices against each swept parameter, and the crossing points."""
    if not context.sweeps:
        return None
    reduced = context.reduced
    crossings, shown_html = write_sweeps(reduced.frequency, reduced.truth, context.sweeps, context.figures)
    shown = "" if crossings.empty else crossings.to_string(index=False)
    return SectionResult(title="swept parameter: the first value at which a criterion's modal choice falls below the "
                               "true k (sweep.csv)", text=shown, html=shown_html, attrs={"sweep_crossings": crossings})
