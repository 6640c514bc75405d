"""Loading file datasets: a table read by its reader (CSV, NPY never pickled, Parquet, Matrix Market, AnnData, a
plug-in's), an optional labels file, preprocessing.

Each file is read once through :func:`ordercube.pipeline.files.inputfile.read_input` and opened by its reader
(:mod:`ordercube.pipeline.data.readers`); a labels file is matched to the rows by
:mod:`ordercube.pipeline.data.labelfiles`. Every value is checked: inf (or a number beyond float64's range, which reads as inf)
is refused where it is read, naming the file, the row and the column; a missing value (an empty cell, ``nan``)
is allowed only when a ``drop_missing`` or ``impute`` step removes it; after preprocessing, the values
must be small enough that squared distances cannot overflow (``ordercube.tasks.datasets.bounds``), and the rows must
not all be the same point (a step that makes them so is named). Too large values are refused rather than
rescaled: the config stays the record of what was clustered, and the fix (a ``standardize`` step) is one line.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.data.labelfiles import Matched, match_rows, read_labels_file
from ordercube.pipeline.data.tables import (
    LabelSet, Reading, Selected, Table, label_set, select,
)
from ordercube.tasks.datasets.bounds import first_nonfinite, rows_identical, too_large, too_small
from ordercube.tasks.preprocess import apply_steps

#: Steps after which column j of the matrix is still column j of the file (others move or mix columns).
COLUMN_KEEPING_STEPS = frozenset({"clip", "log", "standardize", "impute", "drop_missing"})
MISSING_FIX = "add a preprocess step '- impute: {strategy: row_mean}' or '- drop_missing: {}'"


@dataclass(frozen=True)
class LoadedData:
    """A dataset after preprocessing: the objects to cluster, their labels if given, and what was read."""

    X: NDArray[np.float64]
    labels: NDArray[np.int64] | None
    sha256: str
    read: str = ""  # "62 rows x 2000 features from PATH (header row; ...)"
    classes: LabelSet | None = None
    row_names: tuple[str, ...] = ()  # each object's name (a row's, or a column's after a transpose), when known
    labels_reordered: bool = False  # a labels file listed the rows in another order (matched by row name)


@dataclass(frozen=True)
class Matrix:
    """A table's feature values (NaN where missing) and each column as messages name it ("column 'a'")."""

    X: NDArray[np.float64]
    columns: tuple[str, ...]
    row_word: str  # "data row" (1-based, header excluded) for CSV, "row index" (0-based) for arrays

    def where(self, row: int, column: int) -> str:
        number = row + 1 if self.row_word == "data row" else row
        return f"{self.row_word} {number}, {self.columns[column]}"


def read_table(path: Path, key: str, reading: Reading, entry: Mapping[str, Any] | None = None) -> tuple[Table, Any]:
    """The table of a data file read once by its reader (:mod:`ordercube.pipeline.data.readers`: the entry's
    ``reader:``, else by suffix or first bytes), and the file's bytes as read."""
    from ordercube.pipeline.data import formats  # noqa: F401  (every reader of ordercube registered)
    from ordercube.pipeline.data.readers import open_file

    entry = {**(entry or {}), "header": reading.header}
    table, file, _, _ = open_file(Path(path), entry.get("reader"), entry, key.rsplit(".", 1)[0], set(entry))
    return table, file


def read_selected(table: Table, reading: Reading, key: str, *,
                  dissimilarities: bool = False) -> tuple[Matrix, Selected]:
    """The feature matrix of ``table``, at least one row and one column; inf is refused, naming its cell."""
    selected = select(table, reading, key.rsplit(".", 1)[0], key, dissimilarities=dissimilarities)
    if 0 in selected.X.shape:
        raise ConfigError(key, f"{table.source} has {selected.X.shape[0]} data rows and {selected.X.shape[1]} numeric "
                          "columns", "give a file with at least one row and one column of numbers")
    return Matrix(selected.X, selected.feature_names, table.row_word), selected


def read_data(path: Path, key: str, reading: Reading | None = None) -> Matrix:
    """The feature values of a data file, ``.npy`` (without pickle) or ``.csv`` (a header row by default; a
    first column of row names is recognised when unambiguous). Empty cells become NaN; inf is refused."""
    reading = reading or Reading()
    return read_selected(read_table(Path(path), key, reading)[0], reading, key)[0]


def read_matrix(path: Path, key: str) -> NDArray[np.float64]:
    """The numeric matrix of a data file (see :func:`read_data`)."""
    return read_data(path, key).X


def _labels(spec: Any, key: str, rows: int, selected: Selected, source: str,
            given: tuple[LabelSet, str] | None) -> tuple[Matched | None, str]:
    """The dataset's labels in the data's row order and where they came from: a labels file
    (:mod:`ordercube.pipeline.data.labelfiles`), a column of the data itself, or ``given`` (values passed from Python and how
    they were matched, their length checked by the caller)."""
    if given is not None:
        return Matched(given[0], given[1]), "labels given from Python"
    if selected.label_values is not None:
        found = label_set(selected.label_values, f"{key}.labels", f"{source} column {spec.labels_column!r}")
        return Matched(found, ""), f"labels {spec.labels_column!r} from the same table"
    if spec.labels_path is None:
        return None, ""
    labels_path = Path(spec.labels_path)
    found = read_labels_file(labels_path, spec.labels_column, f"{key}.labels", names_header=selected.row_names_header,
                             data_names=selected.row_labels)
    matched = match_rows(found, selected.row_labels, rows, f"{key}.labels", source)
    column = f" {spec.labels_column!r}" if spec.labels_column is not None else ""
    return matched, f"labels{column} from {labels_path}"


def check_values(X: NDArray[np.float64], raw: Matrix, steps: Any, path: Any, key: str, *,
                 dissimilarities: bool = False) -> None:
    """Refuse a preprocessed matrix with NaN, inf, values whose squared distances overflow or underflow, or rows
    that are all the same point. A matrix of ``dissimilarities`` takes no preprocess steps: its fixes say how to
    change the file instead.

    A column is named as in the file when every step keeps the file's columns in place; otherwise by its
    index in the preprocessed matrix.
    """
    keeps_columns = all(step in COLUMN_KEEPING_STEPS for step, _ in steps) and X.shape[1] == raw.X.shape[1]
    after = " after preprocessing" if steps else ""

    def column(j: int) -> str:
        return raw.columns[j] if keeps_columns else f"column {j} of the preprocessed matrix"

    if 0 in X.shape:
        raise ConfigError(key, f"{path} has {X.shape[0]} rows and {X.shape[1]} columns left after preprocessing",
                          "loosen the steps that drop them (drop_missing's max_missing, top_variance's features)")
    missing = np.isnan(X)
    if missing.any():
        first = first_nonfinite(raw.X)
        origin = f" (the first missing value of the file is at {raw.where(*first)})" if first is not None else ""
        raise ConfigError(key, f"{path} has {int(missing.sum())} missing or NaN values{after}{origin}",
                          MISSING_FIX if not dissimilarities else "fill every cell: a distance matrix has a number in every "
                          "cell but its row names")
    at = first_nonfinite(X)
    if at is not None:
        raise ConfigError(key, f"{path} has the value {X[at]} after preprocessing, at row index {at[0]}, {column(at[1])}",
                          "check the preprocess steps and their parameters (e.g. a clip bound of .inf)")
    large = too_large(X)
    if large is not None:
        j, peak, bound = large
        raise ConfigError(key, f"{path} {column(j)} reaches |x| = {peak:.3g}{after}, above {bound:.3g}, "
                          f"the largest magnitude at which squared distances over {X.shape[0]} rows and {X.shape[1]} "
                          "columns cannot overflow", "add a preprocess step '- standardize: {axis: columns}' (or "
                          "rescale the file)" if not dissimilarities else "rescale the file (divide every value by one number)")
    if rows_identical(X) and dissimilarities:
        raise ConfigError(key, f"every dissimilarity in {path} is 0: its {X.shape[0]} objects are all at distance 0 "
                          "from each other, so there is nothing to cluster", "give the dissimilarities between the objects")
    if rows_identical(X):
        raise ConfigError(key, f"{path}'s {X.shape[0]} rows are all the same point{after} ({_row(X[0])}): every "
                          "partition fits them equally well, so there is nothing to cluster",
                          "give data whose rows differ" + (" (check the preprocess steps)" if steps else ""))
    spread = too_small(X)
    if spread is not None:
        raise ConfigError(key, f"{path}'s values differ by at most {spread:.3g}{after}: squared distances "
                          "underflow to 0 and every point looks the same", _spread_fix(X, spread, dissimilarities))


def _spread_fix(X: NDArray[np.float64], spread: float, dissimilarities: bool) -> str:
    """Standardizing where it restores a spread (its variance, of squares of the spread, must not underflow
    itself: about 1e-162 and above), else a rescaling of the file by the factor that brings the spread to ~1."""
    rescale = f"rescale the file (multiply every value by one number, e.g. 1e{int(np.ceil(-np.log10(spread)))})"
    if dissimilarities:
        return rescale
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        standardized, _ = apply_steps(X, [("standardize", {"axis": "columns"})])
    if np.isfinite(standardized).all() and not rows_identical(standardized):
        return "add a preprocess step '- standardize: {axis: columns}'"
    return f"{rescale}: a standardize step cannot, its variance underflows too"


def _row(values: NDArray[np.float64], shown: int = 4) -> str:
    text = ", ".join(f"{value:g}" for value in values[:shown])
    return f"{text}, ..." if values.size > shown else text


def preprocess(X: NDArray[np.float64], steps: Any, key: str) -> tuple[NDArray[np.float64], NDArray[np.int64] | None]:
    """``apply_steps`` one step at a time, so that a step that fails, overflows or makes every row the same
    point is named."""
    rows: NDArray[np.int64] | None = np.arange(X.shape[0])
    identical = rows_identical(X)
    for i, step in enumerate(steps):
        peak = float(np.nanmax(np.abs(X))) if X.size and not np.isnan(X).all() else 0.0
        try:
            # an empty slice's mean is NaN, refused with a clear line by check_values: no stray warning lines
            with np.errstate(over="raise"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                X, kept = apply_steps(X, [step])
        except ValueError as error:
            raise ConfigError(f"{key}[{i}]", str(error)) from None
        except FloatingPointError:
            raise ConfigError(f"{key}[{i}]", f"the {step[0]} step overflows float64 on values up to |x| = {peak:.3g}",
                              "rescale the file (e.g. divide by a power of ten) or put a log step before it") from None
        rows = None if rows is None or kept is None else rows[kept]
        if not identical and rows_identical(X):
            raise ConfigError(f"{key}[{i}]", f"the {step[0]} step {_shown_params(step[1])}makes all {X.shape[0]} rows "
                              "the same point (they differ before it): there is nothing left to cluster",
                              "loosen or remove this step" + (" (a floor and ceiling that leave values apart)"
                                                              if step[0] == "clip" else ""))
    return X, rows


def _shown_params(params: Any) -> str:
    return f"({', '.join(f'{name}: {value}' for name, value in params.items())}) " if params else ""


def _same_objects(selected: Selected, table: Table, key: str) -> None:
    """A dissimilarity matrix whose rows and columns share names lists them in the same order (labels are matched
    to its rows by name, and its columns are the same objects); names of two unrelated kinds (rows ``s0, s1, ...``
    under a header ``V1, V2, ...``) say nothing about the order and are accepted."""
    rows, columns = selected.row_labels, selected.column_labels
    if not rows or table.naming != "header" or len(rows) != len(columns) or rows == columns \
            or not set(rows) & set(columns):
        return
    at = next(i for i, (row, column) in enumerate(zip(rows, columns)) if row != column)
    raise ConfigError(key, f"{table.source} names its rows and its columns differently: row {at + 1} is {rows[at]!r}, "
                      f"column {at + 1} {columns[at]!r}", "list the objects in the same order in the header row and "
                      "the row names")


def load_file_dataset(spec: Any, key: str, entry: Mapping[str, Any], table_keys: set[str],
                      reader: str | None = None) -> tuple[LoadedData, Any, dict[str, Any]]:
    """Read, check and preprocess the file dataset described by ``spec`` (a ``DatasetSpec``) and its config
    ``entry``: the file is read once (:func:`ordercube.pipeline.files.inputfile.read_input`) by its reader
    (``reader``, else the entry's ``reader:``, else by suffix or first bytes), and the bytes parsed are the bytes
    whose digest is the identity. Returns the data, the reader and the reader's options from the entry."""
    from ordercube.pipeline.data import formats  # noqa: F401  (every reader of ordercube registered)
    from ordercube.pipeline.data.readers import open_file

    given = reader if reader is not None else entry.get("reader")
    table, file, chosen, options = open_file(Path(spec.path), given, entry, key, table_keys)
    return load_table(table, spec, key, f"{key}.path", file.sha256), chosen, options


def load_table(table: Table, spec: Any, key: str, data_key: str, digest: str,
               given: tuple[LabelSet, str] | None = None) -> LoadedData:
    """Select, check and preprocess a table's features (a file's or an array's given from Python); ``given``
    is labels passed from Python and how they were matched to the rows."""
    dissimilarities = spec.objects == "dissimilarity"
    raw, selected = read_selected(table, spec.reading, data_key, dissimilarities=dissimilarities)
    if dissimilarities:
        _same_objects(selected, table, data_key)
    matched, origin = _labels(spec, key, raw.X.shape[0], selected, table.source, given)
    X, rows = preprocess(raw.X, spec.preprocess, f"{key}.preprocess")
    check_values(X, raw, spec.preprocess, table.source, data_key, dissimilarities=dissimilarities)
    labels = None
    if matched is not None:
        if rows is None:
            raise ConfigError(f"{key}.labels", "labels describe the data's rows, but a transpose step "
                              "clusters its columns", "remove the labels entry or the transpose step")
        kept = np.unique(matched.labels.codes[rows], return_inverse=True)  # classes whose rows were all dropped go
        labels = LabelSet(kept[1].astype(np.int64), tuple(matched.labels.classes[c] for c in kept[0]))
        digest += matched.sha256
    notes = [table.header_note, selected.row_names, *selected.notes]
    if labels is not None:
        how = f", {matched.how}" if matched.how else ""
        notes.append(f"{origin}{how}: {len(labels.classes)} classes {labels.counts()}")
    read = f"{raw.X.shape[0]} rows x {raw.X.shape[1]} features from {table.source}"
    read += f" ({'; '.join(note for note in notes if note)})" if any(notes) else ""
    if spec.preprocess:
        read += f" -> {X.shape[0]} x {X.shape[1]} after {', '.join(step for step, _ in spec.preprocess)}"
    if rows is None:  # transposed: the objects are the table's feature columns
        names = selected.column_labels if table.naming in ("header", "label", "column") else ()
    else:
        names = tuple(selected.row_labels[i] for i in rows) if selected.row_labels else ()
    return LoadedData(X=np.ascontiguousarray(X), labels=None if labels is None else labels.codes, sha256=digest,
                      read=read, classes=labels, row_names=names,
                      labels_reordered=matched is not None and matched.reordered)
