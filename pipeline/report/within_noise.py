"""The k̂ table's columns of what the Monte Carlo error allows (:mod:`ordercube.pipeline.reduce.within_noise`) and of
k̂'s small clusters (:func:`ordercube.pipeline.reduce.assignments.k_hat_clusters`), and the notes that spell them out."""

from __future__ import annotations

import pandas as pd
import xarray as xr

from ordercube.pipeline.reduce.uncertainty import FLAGS

#: The flags a row of the k̂ table shows: the uncertainty's, and a small cluster in k̂'s partition.
SHOWN_FLAGS = (*FLAGS, "small_cluster")


def cluster_columns(clusters: xr.Dataset, criterion: str, k_hat: xr.DataArray) -> dict[str, xr.DataArray]:
    """``small_cluster`` and ``smallest_cluster`` of k̂'s consensus partition (False and -1 where not known)."""
    if f"{criterion}_small_cluster" in clusters:
        return {"small_cluster": clusters[f"{criterion}_small_cluster"].reindex_like(k_hat, fill_value=False),
                "smallest_cluster": clusters[f"{criterion}_smallest_cluster"].reindex_like(k_hat, fill_value=-1)}
    return {"small_cluster": xr.zeros_like(k_hat, dtype=bool), "smallest_cluster": xr.full_like(k_hat, -1)}


NOISE_LINES = 20  # the most rows whose set of k's within noise the notes spell out (all are in selection.csv)


def within_noise_lines(table: pd.DataFrame) -> list[str]:
    """For each row flagged ``within_noise``: its k's, and the rule's choice among them."""
    if "within_noise" not in table or not bool(table["within_noise"].any()):
        return []
    rows = table[table["within_noise"].astype(bool)]
    several = table[["dataset", "n", "method"]].drop_duplicates().shape[0] > 1
    lines = []
    for row in rows.head(NOISE_LINES).itertuples():
        where = f" ({row.dataset}, n = {row.n}, {row.method})" if several else ""
        chose = "no k" if row.k_hat < 0 else f"k = {row.k_hat}"
        lines.append(f"  {row.criterion}{where}: {row.k_set.replace(' ', ', ')} within noise; its rule ({row.rule}) "
                     f"chose {chose}")
    if len(rows) > NOISE_LINES:
        lines.append(f"  ... {len(rows) - NOISE_LINES} more rows within noise (selection.csv: k_set)")
    return lines
