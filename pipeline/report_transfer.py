"""Frank et al.'s (2011) figures of transfer costs against k: the median with the quartiles of every mapping (Fig. 6),
and the number of non-empty clusters beside them (Fig. 5's k_effective), one figure per (method, n).

Each row is a dataset, each column a transfer-cost criterion the method computed; a cross marks the k of the
lowest median (ties to the smallest k, as the criteria decide).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import xarray as xr

from pipeline.figures import Figures
from tasks.criteria.rules import best_index

if TYPE_CHECKING:
    from matplotlib.figure import Figure

TRANSFER_COSTS = ("train_cost", "mtc", "mtc_nn_object", "mtc_nn_centroid", "mtc_generative", "mtc_soft", "mtc_matrix")


def transfer_criteria(summary: xr.Dataset) -> list[str]:
    """The transfer-cost criteria (and k_effective) with medians in ``summary``, in the paper's order."""
    return [name for name in (*TRANSFER_COSTS, "k_effective") if f"{name}_median" in summary]


def plot_transfer_costs(summary: xr.Dataset, figures: Figures) -> None:
    """One figure per (method, n) that has transfer costs: median (solid) and quartiles (dashed) against k."""
    names = transfer_criteria(summary)
    for model in summary["model"].values:
        for n in summary["n"].values:
            at = {"model": model, "n": n}
            present = [name for name in names if bool(summary[f"{name}_median"].sel(at).notnull().any())]
            datasets = [str(d) for d in summary["dataset"].values
                        if any(bool(summary[f"{name}_median"].sel({**at, "dataset": d}).notnull().any()) for name in present)]
            if [name for name in present if name != "k_effective"] and datasets:
                own = summary[[f"{name}_{stat}" for name in present for stat in ("median", "q25", "q75")]].sel(at)
                figures.draw(f"transfer_costs_{model}_n{n}", plot_costs, own, present, datasets, f"{model}, n = {n}")


def plot_costs(summary: xr.Dataset, present: list[str], datasets: list[str], title: str) -> Figure:
    """A row per dataset, a column per transfer cost (and k_effective), for one (method, n)."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(3.6 * len(present), 2.8 * len(datasets)))
    axes = figure.subplots(len(datasets), len(present), squeeze=False)
    for row, dataset in zip(axes, datasets):
        for ax, name in zip(row, present):
            median = summary[f"{name}_median"].sel(dataset=dataset)
            ks = median["k"].values
            line, = ax.plot(ks, median, marker="o", ms=3, label="median")
            for quartile in ("q25", "q75"):
                ax.plot(ks, summary[f"{name}_{quartile}"].sel(dataset=dataset), ls="--", lw=0.8, color=line.get_color())
            if name != "k_effective" and bool(median.notnull().any()):
                best = best_index(median.values, lower_is_better=True)  # ties within the tolerance: the smallest k
                ax.plot(ks[best], median.values[best], "x", color="red", ms=9, mew=2, label=f"k = {ks[best]}")
                ax.legend(fontsize=7)
            ax.set(title=f"{dataset}: {name}", xlabel="k", ylabel="transfer cost" if name != "k_effective"
                   else "non-empty clusters")
    figure.suptitle(f"{title}: median (solid) and quartiles (dashed) over trials", fontsize=10)
    figure.tight_layout()
    return figure
