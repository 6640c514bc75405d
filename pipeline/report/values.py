"""The values the report's figures show, as tables: written as CSV beside the figures and shown in ``index.html``, so
that a reader can check any point of a figure, or redraw it, without the cube.

``curves.csv`` holds the per-criterion figures' values (``*_vs_k``, ``*_scaling``, ``*_selection_frequency`` and the
transfer costs' medians and quartiles): one row per (dataset, n, method, variable, k) with a value, its mean over
trials and standard error, median and quartiles, sqrt(n) x the mean, and the share of trials whose own choice was k
(0 at a k the criterion is not defined at, e.g. k = 1 for an instability, which no trial can choose).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ordercube.pipeline.report.consensus_tables import html_table

CURVES_CSV = "curves.csv"
STATISTICS = ("mean", "se", "median", "q25", "q75")
CURVE_COLUMNS = ["dataset", "n", "method", "variable", "k", *STATISTICS, "sqrt_n_mean", "share_choosing_k"]


def curves_frame(summary: xr.Dataset, frequency: xr.Dataset, variables: Sequence[str]) -> pd.DataFrame:
    """One row per (dataset, n, method, variable, k) where ``variables`` (criteria, and Gap's ``gap_sd`` whose mean
    its bars show) have a mean or a share of trials choosing k: the summary's statistics, sqrt(n) x the mean (the ``*_scaling`` figures' middle
    column) and, for a criterion whose trials choose a k, the share of them that chose k (``frequency``)."""
    frames = []
    for name in variables:
        if f"{name}_mean" not in summary:
            continue
        columns = {stat: summary[f"{name}_{stat}"] for stat in STATISTICS}
        columns["sqrt_n_mean"] = columns["mean"] * np.sqrt(summary["n"])
        if name in frequency:
            columns["share_choosing_k"] = frequency[name]
        frames.append(rows_of(columns, ("dataset", "n", "model", "k"), ("variable", name), lambda frame: (
            frame["mean"].notna() | (frame["share_choosing_k"].notna() if "share_choosing_k" in frame else False))))
    return stacked(frames, CURVE_COLUMNS)


def rows_of(columns: Mapping[str, xr.DataArray], dims: Sequence[str], label: tuple[str, str],
            keep: Callable[[pd.DataFrame], Any]) -> pd.DataFrame:
    """The variables ``columns`` over ``dims`` as one row per cell (their coordinates dropped: the cube's ``true_k``
    travels along every variable), the rows ``keep(frame)`` selects, ``model`` named ``method``, and a fourth column
    ``label[0]`` holding ``label[1]`` (the criterion or variable the rows are of)."""
    data = xr.Dataset({key: value.reset_coords(drop=True) for key, value in columns.items()})
    frame = data.to_dataframe(dim_order=list(dims)).reset_index()
    frame = frame[keep(frame)].rename(columns={"model": "method"})
    frame.insert(3, *label)
    return frame


def stacked(frames: Sequence[pd.DataFrame], columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The tables of :func:`rows_of` as one, ``dataset`` and ``method`` as text, its columns ``columns`` when given
    (and an empty table of them when there are no frames)."""
    if not frames:
        return pd.DataFrame(columns=columns)
    table = pd.concat(frames, ignore_index=True)
    if columns is not None:
        table = table.reindex(columns=columns)
    table["dataset"], table["method"] = table["dataset"].astype(str), table["method"].astype(str)
    return table


def section_tables(tables: Sequence[tuple[str, str, pd.DataFrame]], folded: bool = False) -> str:
    """HTML of each (file name, what it holds, table) in ``tables``: a line naming the CSV, then the table (in a
    folded ``<details>`` when ``folded``: long tables)."""
    parts = []
    for name, what, frame in tables:
        if frame.empty:
            continue
        said = f"{html.escape(what)} (<code>{html.escape(name)}</code>)"
        table = html_table(frame, name.removesuffix(".csv"))
        parts.append(f"<details><summary>{said}</summary>{table}</details>" if folded else f"<p>{said}:</p>{table}")
    return "".join(parts)
