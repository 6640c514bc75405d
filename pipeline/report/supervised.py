"""The report of a classifier's order (Daudin & Mary-Huard 2008): their Table 1 layout and its figures, from the cube.

``supervised.csv`` (one row per dataset, n, method and selector: N, R, the selector's own estimate at
its k̂, mean |k_O - k̂|, the 95% quantile of its excess error over the oracle), ``supervised_gain.csv``
(the gain G of the swapping method over CV with a paired bootstrap 90% interval), ``supervised_curves.csv``
(per k, the means the error and bias figures draw), each also a table of ``index.html``, and the figures: mean
error curves against k (Fig. 2), the penalty against the true bias CER - EER (Fig. 1 right), and the
selectors side by side per setting (Fig. 3).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr

from ordercube.pipeline.report.figures import Figures, panels
from ordercube.pipeline.files.outputs import write_csv
from ordercube.pipeline.reduce.select import summarise
from ordercube.pipeline.reduce.supervised import gain_rows, selection_rows, settings_with_values
from ordercube.pipeline.report.section import Section, SectionContext, SectionResult
from ordercube.pipeline.report.values import section_tables

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NAMES = {"test_error": "Oracle", "true_error": "Oracle", "swapping": "Swapping", "loo_cv": "Cross-Valid."}
CURVES = ("resubstitution", "conditional_error", "true_error", "test_error", "swapping", "loo_cv")


def _section(context: SectionContext) -> SectionResult:
    """The tables and figures of the classifiers; Table 1's layout printed, and the paper's N and R beside the
    cube's in ``published.csv``."""
    one, rows = write_supervised(context.reduced.scores, context.figures, context.published, context.reduced.decide)
    tables = [(name, what, _read(context.folder / name)) for name, what in TABLES]
    shown = section_tables(tables[:2]) + section_tables(tables[2:], folded=True)
    return SectionResult(title="classifiers (Daudin & Mary-Huard, Table 1): mean k̂ (N) and mean error at each trial's "
                               "k̂ (R, %); this cube / published", text="" if one.empty else one.to_string(), html=shown,
                         attrs={"table_one": one}, published_rows=published_rows(rows, context.published))


def _read(path: Path) -> pd.DataFrame:
    """A CSV the section wrote, as the page shows it (an empty table for one without rows)."""
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


# The section's CSV files, as the page names them: the selectors (Fig. 3), the gain, the curves (Figs. 1 and 2).
TABLES = (("supervised.csv", "Per selector: mean k̂ (N), mean error at k̂ (R) ± SE, its own estimate there, the 95% "
                             "quantile of the excess over the oracle (the selectors figure)"),
          ("supervised_gain.csv", "The gain of the swapping method over cross-validation, with its bootstrap interval"),
          ("supervised_curves.csv", "Per k: each error rate's and criterion's mean over trials, the swap penalty and "
                                    "the true bias CER - EER (the error and bias figures)"))


# Its figures against n (the selectors per n) stand for the criteria's own *_scaling figures.
section = Section(_section, draws_against_n=True)


def published_rows(rows: pd.DataFrame, published: Mapping[str, Mapping[str, Any]]) -> list[list[Any]]:
    """``published.csv``'s rows of the classifiers: every published N and R (R in %) beside ``rows``' (the
    per-selector rows of :func:`ordercube.pipeline.reduce.supervised.selection_rows`); agreement is not judged (both are
    means)."""
    out = []
    for row in rows.itertuples():
        paper = published.get(f"{row.dataset}/{row.method}", {}).get(row.selector)
        for quantity, value in (("N", row.N), ("R", 100 * row.R)):
            if isinstance(paper, Mapping) and quantity in paper:
                out.append([row.dataset, int(row.n), row.method, row.selector, quantity, float(value),
                            float(paper[quantity]), None])
    return out


def table_one(rows: pd.DataFrame, published: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Daudin & Mary-Huard's (2008) Table 1 layout: per (dataset, n, method) the N and R (R in %) of each selector, with the
    paper's value after a slash where the config quotes it (``published: {DATASET/METHOD: {swapping:
    {N: 9.11, R: 28.6}}}``)."""
    cells: dict[tuple[str, int, str], dict[tuple[str, str], str]] = {}
    for row in rows.itertuples():
        paper = published.get(f"{row.dataset}/{row.method}", {}).get(row.selector)
        paper = paper if isinstance(paper, Mapping) else {}
        for column, value in (("N", row.N), ("R", 100 * row.R)):
            text = f"{value:.1f}" + (f" / {paper[column]:g}" if column in paper else "")
            cells.setdefault((row.dataset, int(row.n), row.method), {})[(NAMES[row.selector], column)] = text
    columns = pd.MultiIndex.from_tuples([(name, column) for name in dict.fromkeys(NAMES.values())
                                         for column in ("N", "R")])
    index = pd.MultiIndex.from_tuples(list(cells), names=["dataset", "n", "method"])
    return pd.DataFrame([[cells[key].get(column, "") for column in columns] for key in cells], index=index,
                        columns=columns)


def write_supervised(scores: xr.Dataset, figures: Figures, published: Mapping[str, Mapping[str, Any]],
                     decide: Mapping[str, Mapping[str, Any]] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The tables (CSV) and figures of a cube of classifiers in the report's folder; returns Table 1's layout and
    the per-selector rows it is made of."""
    out = figures.folder
    rows, gains = selection_rows(scores, decide), gain_rows(scores, decide)
    write_csv(rows, out / "supervised.csv")
    write_csv(gains, out / "supervised_gain.csv")
    summary = summarise(scores[[name for name in CURVES if name in scores]])
    write_csv(curve_table(scores, summary), out / "supervised_curves.csv")
    figures.draw("supervised_error_vs_k", plot_error_curves, summary)
    if "conditional_error" in scores and "swap_penalty" in scores:
        figures.draw("supervised_bias_vs_k", plot_bias, scores[["swap_penalty", "conditional_error", "resubstitution"]])
    if not rows.empty:
        figures.draw("supervised_selectors", plot_selectors, rows)
    return (table_one(rows, published) if not rows.empty else pd.DataFrame()), rows


def curve_table(scores: xr.Dataset, summary: xr.Dataset) -> pd.DataFrame:
    """One row per (dataset, n, method, k) with a value: the mean over trials of every error curve (Fig. 2) and, where
    the cube has them, of the swap penalty and of the true bias CER - EER (Fig. 1 right)."""
    columns = {name: summary[f"{name}_mean"] for name in CURVES if f"{name}_mean" in summary}
    if "conditional_error" in scores and "swap_penalty" in scores:
        columns["swap_penalty"] = scores["swap_penalty"].mean("trial")
        columns["true_bias"] = (scores["conditional_error"] - scores["resubstitution"]).mean("trial")
    if not columns:
        return pd.DataFrame()
    data = xr.Dataset({name: values.reset_coords(drop=True) for name, values in columns.items()})
    frame = data.to_dataframe(dim_order=["dataset", "n", "model", "k"]).reset_index().rename(columns={"model": "method"})
    frame = frame[frame[list(columns)].notna().any(axis=1)].reset_index(drop=True)
    frame["dataset"], frame["method"] = frame["dataset"].astype(str), frame["method"].astype(str)
    return frame


def plot_error_curves(summary: xr.Dataset) -> Figure:
    """Mean error rates and the swapping criterion against k, one panel per (dataset, n, method) (Fig. 2)."""
    present = [name for name in CURVES if f"{name}_mean" in summary]
    settings = settings_with_values(summary[f"{present[0]}_mean"])
    figure, axes = panels(len(settings))
    for ax, at in zip(axes, settings):
        for name in present:
            mean = summary[f"{name}_mean"].sel(at)
            ax.plot(mean["k"], mean, marker="o", ms=2, label=name, ls="--" if name == "loo_cv" else "-")
        ax.set(title=f"{at['dataset']} / n={at['n']} / {at['model']}", xlabel="k", ylabel="mean error rate")
        ax.legend(fontsize=7)
    return figure


def plot_bias(scores: xr.Dataset) -> Figure:
    """The swapping penalty (the bias estimate) against the true bias CER - EER, means over trials (Fig. 1
    right: overestimated for small label noise, underestimated for large)."""
    estimate = scores["swap_penalty"].mean("trial")
    truth = (scores["conditional_error"] - scores["resubstitution"]).mean("trial")
    settings = settings_with_values(estimate)
    figure, axes = panels(len(settings))
    for ax, at in zip(axes, settings):
        ax.plot(estimate["k"], estimate.sel(at), marker="o", ms=2, label="swap penalty (estimate)")
        ax.plot(truth["k"], truth.sel(at), marker="s", ms=2, label="CER - EER (true bias)")
        ax.axhline(0, color="grey", lw=0.5)
        ax.set(title=f"{at['dataset']} / n={at['n']} / {at['model']}", xlabel="k", ylabel="bias (mean over trials)")
        ax.legend(fontsize=7)
    return figure


def plot_selectors(rows: pd.DataFrame) -> Figure:
    """The selectors side by side per dataset, one column of panels per n (Fig. 3): mean k̂, the error at
    k̂ (the selector's own estimate dashed), the 95% quantile of the excess over the oracle."""
    sizes = sorted(rows["n"].unique())
    figure, axes = panels(3 * len(sizes))
    for row_axes, n in zip(axes.reshape(-1, 3), sizes):
        at_n = rows[rows["n"] == n]
        labels = [f"{d}/{m}" for d, m in dict.fromkeys(zip(at_n["dataset"], at_n["method"]))]
        x = np.arange(len(labels))
        for selector, group in at_n.groupby("selector", sort=False):
            line, = row_axes[0].plot(x, group["N"], marker="o", label=NAMES[selector])
            row_axes[1].errorbar(x, group["R"], yerr=group["R_se"], marker="o", color=line.get_color(), capsize=2)
            row_axes[1].plot(x, group["estimate_at_k_hat"], ls="--", color=line.get_color())
            row_axes[2].plot(x, group["q95_excess_over_oracle"], marker="o", color=line.get_color())
        for ax, ylabel in zip(row_axes, ("mean k̂ (N)", "error at k̂ ± SE (estimate dashed)", "95% quantile of L - L_O")):
            ax.set(title=f"n={n}", ylabel=ylabel, xticks=x)
            ax.set_xticklabels(labels, rotation=30, fontsize=7)
        row_axes[0].legend(fontsize=7)
    return figure
