"""Frank et al.'s (2011) figures of transfer costs against k: the median with the quartiles of every mapping (Fig. 6),
and the number of non-empty clusters beside them (Fig. 5's k_effective), one figure per (method, n).

Each row is a dataset, each column a transfer-cost criterion the method computed; a cross marks the k of the
lowest median (ties to the smallest k, as the criteria decide). The values drawn are in ``transfer_costs.csv`` and
a table of ``index.html``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd
import xarray as xr

from ordercube.pipeline.files.outputs import write_csv
from ordercube.pipeline.report.figures import Figures
from ordercube.pipeline.report.section import SectionContext, SectionResult
from ordercube.pipeline.report.values import rows_of, section_tables, stacked
from ordercube.tasks.criteria import CRITERIA
from ordercube.tasks.criteria.rules import best_index

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def section(context: SectionContext) -> SectionResult | None:
    """The transfer-cost figures of the criteria that declared this section, and their values: ``transfer_costs.csv``,
    also a table of ``index.html`` (nothing printed)."""
    summary = context.reduced.summary
    names = transfer_criteria(summary, context.criteria)
    plot_transfer_costs(summary, context.figures, names)
    table = values_frame(summary, names)
    if table.empty:
        return None
    write_csv(table, context.folder / "transfer_costs.csv")
    return SectionResult(title="transfer costs: median and quartiles over trials per k (transfer_costs.csv)",
                         html=section_tables([("transfer_costs.csv", "Per (dataset, n, method, criterion, k): the median "
                                               "and quartiles the transfer-cost figures draw", table)], folded=True))


def values_frame(summary: xr.Dataset, names: Sequence[str]) -> pd.DataFrame:
    """One row per (dataset, n, method, criterion, k) with a median: the median and quartiles over trials."""
    return stacked([rows_of({stat: summary[f"{name}_{stat}"] for stat in ("median", "q25", "q75")},
                            ("dataset", "n", "model", "k"), ("criterion", name), lambda frame: frame["median"].notna())
                    for name in names])


def transfer_criteria(summary: xr.Dataset, criteria: Sequence[str]) -> list[str]:
    """Those of ``criteria`` with medians in ``summary``: the costs in registry order, then the diagnostics that
    stand beside them (``k_effective``: a decision rule of ``none``)."""
    present = [name for name in criteria if f"{name}_median" in summary]
    beside = [name for name in present if _diagnostic(name)]
    return [*(name for name in present if name not in beside), *beside]


def _diagnostic(name: str) -> bool:
    return CRITERIA[name].decision.rule == "none"


def plot_transfer_costs(summary: xr.Dataset, figures: Figures, names: Sequence[str]) -> None:
    """One figure per (method, n) that has transfer costs (``names``, a diagnostic such as ``k_effective`` drawn
    beside them): median (solid) and quartiles (dashed) against k."""
    for model in summary["model"].values:
        for n in summary["n"].values:
            at = {"model": model, "n": n}
            present = [name for name in names if bool(summary[f"{name}_median"].sel(at).notnull().any())]
            datasets = [str(d) for d in summary["dataset"].values
                        if any(bool(summary[f"{name}_median"].sel({**at, "dataset": d}).notnull().any()) for name in present)]
            if [name for name in present if not _diagnostic(name)] and datasets:
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
            if not _diagnostic(name) and bool(median.notnull().any()):
                best = best_index(median.values, lower_is_better=True)  # ties within the tolerance: the smallest k
                ax.plot(ks[best], median.values[best], "x", color="red", ms=9, mew=2, label=f"k = {ks[best]}")
                ax.legend(fontsize=7)
            ax.set(title=f"{dataset}: {name}", xlabel="k", ylabel="transfer cost" if not _diagnostic(name)
                   else "non-empty clusters")
    figure.suptitle(f"{title}: median (solid) and quartiles (dashed) over trials", fontsize=10)
    figure.tight_layout()
    return figure
