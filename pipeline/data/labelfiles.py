"""A labels file, read once and matched to the data's rows: by row name when both name their rows, by position
when neither does.

A labels ``.csv`` names its rows when it has a column of the data's row-names header (``sample_id`` in both
files), when its first column is row names by the rule the data tables follow (an empty header cell, as R's
``write.csv`` and pandas' ``to_csv`` write them, or distinct text values) and is not the labels column, or when a
column holds exactly the data's row names (R's row numbers ``1..n`` under a header ``id``). A ``.npy`` array names
no rows. Then:

- both name their rows: every data row must be named once in the labels file and every labels row be a data
  row; labels in another order are reordered to the data's rows and the data line says so; a name missing on
  either side, or named twice, is refused with the names;
- only the data names its rows (a labels file of one column): the labels are taken in the data's row order,
  and the data line says so;
- only the labels file names its rows: refused (the names cannot be checked against unnamed data rows);
- neither: by position, said in the data line; but a column numbering the rows ``0..n-1`` or ``1..n`` out of
  order (a shuffled file whose rows cannot be matched) is refused.
The row counts must agree in every case.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.files.inputfile import InputFile, read_input
from ordercube.pipeline.data.tables import LabelSet, Table, inferred_row_names, label_set, one_line, read_npy

LABEL_TYPES = (".csv", ".npy")
EXPECTED = "a .csv or .npy labels file"
SHOWN_NAMES = 3  # row names listed in a message


@dataclass(frozen=True)
class LabelsFile:
    """The labels a file holds, in the file's order, and the names of its rows when it gives them."""

    labels: LabelSet
    source: str  # "PATH column 'tissue'"
    sha256: str  # of the file's bytes, part of the dataset's identity
    row_names: tuple[str, ...] = ()
    names_column: str = ""  # "column 'sample_id'" when the file names its rows


@dataclass(frozen=True)
class Matched:
    """Labels in the data's row order and how they were matched, in words for the data line."""

    labels: LabelSet
    how: str  # "matched by row name (column 'sample_id')", "reordered by row name ...", "by position ..."
    reordered: bool = False
    sha256: str = ""  # the labels file's, part of the dataset's identity ("" for labels not read from a file)


def read_labels_file(path: Path, column: Any, key: str, *, names_header: str = "",
                     data_names: tuple[str, ...] = ()) -> LabelsFile:
    """The labels in ``path``: a column of a ``.csv`` (the last when ``column`` is None) or a 1-D ``.npy`` array
    of integers or strings. ``names_header`` is the header of the data's row-names column and ``data_names``
    the data's row names (a labels column of that header, or holding those names, names the labels' rows).
    ``key`` is the labels entry's (``datasets[0].labels``)."""

    path = Path(path)
    if path.suffix not in LABEL_TYPES:
        raise ConfigError(f"{key}.path", f"unsupported labels file type {path.suffix!r} for {path}",
                          f"give a {' or '.join(LABEL_TYPES)} file (a .csv column or a 1-D .npy array of integers or strings)")
    if column is not None and (isinstance(column, bool) or not isinstance(column, (str, int))):
        raise ConfigError(f"{key}.column", f"expected one column name, got {column!r}", "give the name of one column")
    file = read_input(path, f"{key}.path", expected=EXPECTED)
    if path.suffix == ".npy":
        if column is not None:
            raise ConfigError(f"{key}.column", f"{path} is a .npy array and has no columns, got column {column!r}",
                              "remove 'column'")
        values = read_npy(file, f"{key}.path", kinds="iuUS", ndims=(1,),
                          expected="a 1-D array of integers or strings, one label per data row")
        return LabelsFile(label_set(values, key, str(path), "row index"), str(path), file.sha256)
    return _csv_labels(file, column, key, names_header, data_names)


def _csv_labels(file: InputFile, column: Any, key: str, names_header: str, data_names: tuple[str, ...]) -> LabelsFile:
    text = file.text(f"{key}.path").getvalue()
    try:
        frame = pd.read_csv(io.StringIO(text))
        cells = pd.read_csv(io.StringIO(text), header=None, dtype=str)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise ConfigError(f"{key}.path", f"cannot parse {file.path} as CSV ({one_line(error)})",
                          "give a comma-separated file with a header row") from None
    name = column if column is not None else frame.columns[-1]
    if name not in frame.columns and str(name) in map(str, frame.columns):
        name = str(name)
    if name not in frame.columns:
        raise ConfigError(f"{key}.column", f"no column {name!r} in {file.path}", f"use one of {list(frame.columns)}")
    labels = label_set(frame[name], key, f"{file.path} column {name!r}")
    header = tuple("" if pd.isna(cell) else str(cell) for cell in cells.iloc[0])
    table = Table(cells.iloc[1:].reset_index(drop=True), header, "header", str(file.path), "data row")
    names_at = _names_column(table, list(frame.columns).index(name), names_header, data_names, f"{key}.path")
    if names_at is None:
        return LabelsFile(labels, f"{file.path} column {name!r}", file.sha256)
    names = tuple(str(cell) for cell in table.cells[names_at])
    return LabelsFile(labels, f"{file.path} column {name!r}", file.sha256, names, table.shown(names_at))


def _names_column(table: Table, labels_at: int, names_header: str, data_names: tuple[str, ...], key: str) -> int | None:
    """The column of a labels table that names its rows, as the module says, or a column holding exactly the
    data's row names (say the numbers 1..n of R's ``write.csv`` under another header). None when there is none;
    ``ConfigError`` when a column numbers the rows 0..n-1 or 1..n out of order and the data have no names to
    match them to (the rows were shuffled)."""
    if names_header and names_header in table.names and table.names.index(names_header) != labels_at:
        return table.names.index(names_header)
    inferred = inferred_row_names(table, {labels_at})
    if inferred is not None:
        return inferred
    others = [j for j in range(table.cells.shape[1]) if j != labels_at]
    wanted = set(data_names)
    for j in others:
        values = table.cells[j]
        if data_names and values.notna().all() and values.is_unique and set(values) == wanted:
            return j
    for j in others:
        numbers = pd.to_numeric(table.cells[j], errors="coerce")
        size = len(numbers)
        if size > 1 and numbers.notna().all() and set(numbers) in ({*range(size)}, {*range(1, size + 1)}) \
                and not numbers.is_monotonic_increasing:
            raise ConfigError(key, f"{table.source} {table.shown(j)} numbers its {size} rows out of order (first "
                              f"{', '.join(table.cells[j].iloc[:3])}, ...): its rows look shuffled, and the data's rows "
                              "have no names to match them to", "sort the labels file by that column, or give the "
                              "data and the labels the same row names")
    return None


def match_rows(found: LabelsFile, data_names: tuple[str, ...], rows: int, key: str, data_source: str) -> Matched:
    """``found``'s labels in the order of the data's ``rows`` (named ``data_names``, or unnamed when empty), as
    the module says; ``ConfigError`` under ``key`` (the labels entry's) when they cannot be matched."""
    if found.row_names and data_names:
        return _by_name(found, data_names, key, data_source)
    start = _row_numbers(found.row_names, rows)
    if start is not None:  # pandas' (0..n-1) or R's (1..n) index in order: positions, not names
        return Matched(found.labels, f"by position (the labels file numbers its rows {start}..{rows - 1 + start} in "
                       f"order, {found.names_column}; the data's rows have no names)", sha256=found.sha256)
    if found.row_names:
        raise ConfigError(f"{key}.path", f"{found.source} names its rows ({found.names_column}) but the rows of "
                          f"{data_source} have no names, so the labels cannot be matched to them by name",
                          "name the data's rows (row_names: COLUMN), or give a labels file without the names "
                          "column, in the data's row order")
    size = found.labels.codes.shape[0]
    if size != rows:
        raise ConfigError(key, f"{found.source} has {size} labels but {data_source} has {rows} rows",
                          "give one label per data row")
    why = "the labels file names no rows" if data_names else "neither file names its rows"
    return Matched(found.labels, f"by position ({why})", sha256=found.sha256)


def _row_numbers(names: tuple[str, ...], rows: int) -> int | None:
    """0 or 1 when ``names`` are exactly the row numbers 0..rows-1 or 1..rows in increasing order, else None."""
    if len(names) != rows:
        return None
    for start in (0, 1):
        if all(name == str(i) for i, name in enumerate(names, start=start)):
            return start
    return None


def _by_name(found: LabelsFile, data_names: tuple[str, ...], key: str, data_source: str) -> Matched:
    names = found.row_names
    for side, listed, source in ((f"{key}.path", names, found.source), (key, data_names, data_source)):
        twice = pd.Index(listed)[pd.Index(listed).duplicated()]
        if len(twice):
            raise ConfigError(side, f"{source} names the row {twice[0]!r} twice, so the labels cannot be matched "
                              "to the data's rows by name", "give every row its own name")
    position = {name: i for i, name in enumerate(names)}
    lacking = [name for name in data_names if name not in position]
    extra = sorted(set(names) - set(data_names))
    if lacking or extra:
        parts = []
        if lacking:
            parts.append(f"has no label for {len(lacking)} of the {len(data_names)} data rows ({_shown(lacking)})")
        if extra:
            parts.append(f"labels {len(extra)} row{'s' if len(extra) > 1 else ''} the data does not have "
                         f"({_shown(extra)})")
        raise ConfigError(f"{key}.path", f"{found.source} {' and '.join(parts)}, matched by row name "
                          f"({found.names_column})", "give one label for each data row, named as in the data")
    order = np.fromiter((position[name] for name in data_names), dtype=np.int64, count=len(data_names))
    if np.array_equal(order, np.arange(order.size)):
        return Matched(found.labels, f"matched by row name ({found.names_column})", sha256=found.sha256)
    labels = replace(found.labels, codes=found.labels.codes[order])
    moved = int((order != np.arange(order.size)).sum())
    return Matched(labels, f"reordered to the data's rows by row name ({found.names_column}: {moved} of "
                   f"{order.size} rows are in another order in the file)", reordered=True, sha256=found.sha256)


def _shown(names: list[str]) -> str:
    listed = ", ".join(repr(name) for name in names[:SHOWN_NAMES])
    return listed + (", ..." if len(names) > SHOWN_NAMES else "")
