"""A paper's published values beside the cube's, shown only for the data they belong to.

A config quotes them under ``published`` (``{DATASET/METHOD: {CRITERION: k̂}}``, or a classifier's ``{N, R}``)
with, under ``published.data``, the digest of each dataset's data the paper's values belong to
(:func:`ordercube.pipeline.config.study.data_digest`). The report shows a dataset's published values only when the cube's data
have that digest: a held-out file, another preprocessing or another generator run under the same dataset name
is not the paper's data, and its values are not put beside the paper's; likewise, where ``published.methods``
gives a method's digest, another algorithm, parameters or predictor under the method's name. Every value not shown
is said, with why.

``published.csv`` holds one row per (dataset, n, method, criterion, quantity): this cube's value, the
published one, and whether they agree (k̂: equal; a classifier's N and R: not judged, both are means).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import xarray as xr

from ordercube.pipeline.config.study import DATA_KEY, METHODS_KEY, data_digest

PUBLISHED_CSV = "published.csv"
COLUMNS = ["dataset", "n", "method", "criterion", "quantity", "cube", "published", "agrees"]


@dataclass(frozen=True)
class Published:
    """The published values to show (``{DATASET/METHOD: {CRITERION: value}}``) and why others are not."""

    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    hidden: tuple[str, ...] = ()


def published_in(cube: xr.Dataset) -> Published:
    """The config's published values whose dataset's data in the cube have the digest ``published.data`` gives."""
    quoted = dict(json.loads(cube.attrs.get("ordercube_config", "{}")).get("published") or {})
    expected = quoted.pop(DATA_KEY, None) or {}
    methods_expected = quoted.pop(METHODS_KEY, None) or {}
    identity = json.loads(cube.attrs.get("ordercube_identity", "{}"))
    identities, method_identities = identity.get("datasets", {}), identity.get("methods", {})
    values, hidden = {}, []
    for pair, entries in quoted.items():
        dataset, method = pair.split("/", 1)
        actual = data_digest(identities[dataset]) if dataset in identities else None
        method_actual = data_digest(method_identities[method]) if method in method_identities else None
        if actual is None:
            hidden.append(f"published values of {pair} not shown: the cube does not record the identity of its "
                          f"dataset {dataset}")
        elif dataset not in expected:
            hidden.append(f"published values of {pair} not shown: the config does not say which data they belong to "
                          f"(add published.data.{dataset}: {actual} if this cube's {dataset} is the paper's data)")
        elif expected[dataset] != actual:
            hidden.append(f"published values of {pair} not shown: they belong to the data of digest "
                          f"{expected[dataset]}, and this cube's {dataset} has digest {actual} (another file, labels, "
                          "preprocessing or generator)")
        elif method in methods_expected and methods_expected[method] != method_actual:
            hidden.append(f"published values of {pair} not shown: they belong to the method of digest "
                          f"{methods_expected[method]}, and this cube's {method} has digest {method_actual} (another "
                          "algorithm, parameters or predictor under the same name)")
        else:
            values[pair] = dict(entries)
    return Published(values, tuple(dict.fromkeys(hidden)))


def published_of(cube: xr.Dataset) -> dict[str, dict[str, Any]]:
    """The published values the report shows for ``cube`` (:func:`published_in`)."""
    return published_in(cube).values


def comparison_matrix(table: pd.DataFrame, published: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
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


def published_rows(table: pd.DataFrame, published: Mapping[str, Mapping[str, Any]],
                   extra: Sequence[Sequence[Any]] = ()) -> pd.DataFrame:
    """``published.csv``'s rows: every published k̂ beside ``table``'s (selection_table) k̂, then ``extra`` (rows in
    :data:`COLUMNS` order: the paper's other values beside the cube's, from the report's sections)."""
    rows: list[Sequence[Any]] = []
    for row in table.itertuples():
        paper = published.get(f"{row.dataset}/{row.method}", {}).get(row.criterion)
        if isinstance(paper, int):
            rows.append([row.dataset, int(row.n), row.method, row.criterion, "k_hat", int(row.k_hat), paper,
                         bool(row.k_hat == paper)])
    rows += extra
    return pd.DataFrame(rows, columns=COLUMNS)
