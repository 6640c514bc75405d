"""The values the consensus figures show, as tables: one row per k of every curve reduced from the stored assignments
(areas, Δ(k), PAC, RCSI, the p-values, with their bootstrap intervals), and one row per item of the item-consensus
figure (with its name and known class, as the heat maps show them); each written as a CSV beside the figures and shown in ``index.html``."""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from ordercube.pipeline.files.outputs import write_csv
from ordercube.pipeline.reduce.assignments import KnownItems
from ordercube.pipeline.report.labels import owner_of

BOUNDS = ("lo", "hi")  # the percentile interval of the bootstrap over resamples, beside each curve that has one


def curve_columns(scores: xr.Dataset) -> list[str]:
    """The per-k variables of ``scores`` owned by a criterion (its outputs), each followed by its bootstrap bounds,
    in the registry's order of the outputs."""
    names = [str(name) for name in scores.data_vars if "k" in scores[name].dims and owner_of(str(name)) is not None]
    names.sort(key=lambda name: (list(owner_of(name).variables).index(name), name))
    names.sort(key=lambda name: owner_of(name).name)
    ordered = []
    for name in names:
        ordered += [name] + [f"{name}_{bound}" for bound in BOUNDS if f"{name}_{bound}" in scores]
    return ordered


def curves_table(scores: xr.Dataset, at: Mapping[str, object]) -> pd.DataFrame:
    """One row per k of ``scores`` at ``at`` (dataset, n, model): every curve with a value there."""
    if "k" not in scores.coords:
        return pd.DataFrame()
    columns: dict[str, np.ndarray] = {"k": scores["k"].values.astype(int)}
    for name in curve_columns(scores):
        values = scores[name].sel(at).values.astype(float)
        if values.ndim == 1 and np.isfinite(values).any():
            columns[name] = values
    return pd.DataFrame(columns) if len(columns) > 1 else pd.DataFrame()


def items_table(own: np.ndarray, partition: np.ndarray, known: KnownItems | None = None) -> pd.DataFrame:
    """One row per item: its name and known class where the data gives them (``known``: what the heat maps' rows and
    class strip show), its consensus cluster (1-based, as the figure numbers them) and its item consensus with it
    (empty for an item alone in its cluster)."""
    frame = pd.DataFrame({"item": np.arange(len(partition)), "cluster": np.asarray(partition) + 1,
                          "item_consensus": np.asarray(own, dtype=float)})
    if known is not None and known.classes:
        frame.insert(1, "known_class", [known.classes[code] if code >= 0 else "" for code in known.labels])
    if known is not None and known.names:
        frame.insert(1, "name", list(known.names))
    return frame


def html_table(frame: pd.DataFrame, table_id: str) -> str:
    """``frame`` as an HTML table, numbers to 4 significant digits (the CSV holds them in full)."""
    def cell(value: object) -> str:
        if isinstance(value, (float, np.floating)):
            return "" if np.isnan(value) else f"{value:.4g}"
        return html.escape(str(value))

    head = "".join(f"<th>{html.escape(str(column))}</th>" for column in frame.columns)
    rows = "".join("<tr>" + "".join(f"<td>{cell(value)}</td>" for value in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    return f'<table id="{html.escape(table_id)}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def write_tables(folder: Path, stem: str, curves: pd.DataFrame, items: pd.DataFrame | None, k: int | None) -> str:
    """Write ``<stem>_curves.csv`` and ``<stem>_items.csv``; their HTML (the items folded away)."""
    parts = []
    if not curves.empty:
        write_csv(curves, folder / f"{stem}_curves.csv")
        parts.append(f"<p>The values the figures show per k (<code>{html.escape(stem)}_curves.csv</code>; "
                     "<code>_lo</code>, <code>_hi</code>: the bootstrap interval over resamples):</p>"
                     + html_table(curves, f"{stem}_curves"))
    if items is not None and k is not None:
        write_csv(items, folder / f"{stem}_items.csv")
        parts.append(f"<details><summary>Item consensus at k = {k}, per item (<code>{html.escape(stem)}_items.csv"
                     "</code>)</summary>" + html_table(items, f"{stem}_items") + "</details>")
    return "".join(parts)
