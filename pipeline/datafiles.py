"""Loading file datasets: CSV or NPY (never pickled), an optional labels file, preprocessing.

Every value is checked: inf (or a number beyond float64's range, which reads as inf) is refused where
it is read, naming the file, the row and the column; a missing value (an empty cell, ``nan``) is
allowed only when a ``drop_missing`` or ``impute`` step removes it; after preprocessing, the values
must be small enough that squared distances cannot overflow (``tasks.datasets.bounds``). Too large
values are refused rather than rescaled: the config stays the record of what was clustered, and the
fix (a ``standardize`` step) is one line.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.lib import format as npy_format
from numpy.typing import NDArray

from pipeline.errors import ConfigError
from pipeline.tables import LabelSet, Reading, Selected, Table, array_table, label_set, read_csv_table, select
from tasks.datasets.bounds import first_nonfinite, too_large, too_small
from tasks.preprocess import apply_steps

LABEL_TYPES = (".csv", ".npy")
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


@dataclass(frozen=True)
class Matrix:
    """A table's feature values (NaN where missing) and each column as messages name it ("column 'a'")."""

    X: NDArray[np.float64]
    columns: tuple[str, ...]
    row_word: str  # "data row" (1-based, header excluded) for CSV, "row index" (0-based) for arrays

    def where(self, row: int, column: int) -> str:
        number = row + 1 if self.row_word == "data row" else row
        return f"{self.row_word} {number}, {self.columns[column]}"


def _one_line(error: BaseException) -> str:
    """A library's error text on one line (pandas' parser errors end with a newline)."""
    return " ".join(str(error).split())


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def npy_header(path: Path, key: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from the header of a ``.npy`` file, checked against the file's size, so that a
    header claiming a huge shape is refused before anything is allocated; pickled (object) arrays too."""
    try:
        with path.open("rb") as stream:
            version = npy_format.read_magic(stream)
            read = {(1, 0): npy_format.read_array_header_1_0, (2, 0): npy_format.read_array_header_2_0}.get(version)
            if read is None:
                raise ValueError(f"format version {version} is not supported")
            shape, _, dtype = read(stream)
            offset = stream.tell()
    except (ValueError, OSError, SyntaxError, TypeError) as error:
        raise ConfigError(key, f"{path} is not a readable .npy file ({_one_line(error)})",
                          "save it with numpy.save from a numeric array") from None
    if dtype.hasobject:
        raise ConfigError(key, f"{path} holds Python objects (a pickle), which are never loaded",
                          "save a numeric array (array.astype(float)) with numpy.save")
    expected = int(np.prod(shape, dtype=object)) * dtype.itemsize
    actual = path.stat().st_size - offset
    if expected != actual:
        raise ConfigError(key, f"{path}'s header claims shape {shape} of {dtype} ({expected} bytes) but the file "
                          f"holds {actual} bytes of data", "the file is truncated or damaged: save it again with numpy.save")
    return shape, dtype


def read_npy(path: Path, key: str, *, kinds: str, ndims: tuple[int, ...], expected: str) -> NDArray[Any]:
    """The array of a ``.npy`` file, never unpickled; its header's shape (``ndims``) and dtype (``kinds``,
    NumPy's dtype kind letters) are checked, against the file's size too, before anything is read."""
    shape, dtype = npy_header(path, key)
    if len(shape) not in ndims or dtype.kind not in kinds or dtype.itemsize == 0:
        raise ConfigError(key, f"{path} holds a {len(shape)}-D {dtype} array", f"expected {expected}")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError) as error:
        raise ConfigError(key, f"{path} is not a plain .npy array ({_one_line(error)})", "save it with numpy.save") from None


def read_table(path: Path, key: str, reading: Reading) -> Table:
    """The cells of a ``.csv`` file (header as ``reading`` says) or of a ``.npy`` array (never unpickled)."""
    if path.suffix == ".npy":
        if reading.header is not None:
            raise ConfigError(f"{key.rsplit('.', 1)[0]}.header", f"{path} is a .npy array: only .csv files have a "
                              "header row", "remove 'header' (columns of an array are named by index from 0)")
        array = read_npy(path, key, kinds="biuf", ndims=(1, 2), expected="a 1-D or 2-D array of real numbers")
        return array_table(array, str(path))
    if path.suffix == ".csv":
        return read_csv_table(path, key, reading.header)
    raise ConfigError(key, f"unsupported file type {path.suffix!r} for {path}", "use a .csv or .npy file")


def read_selected(table: Table, reading: Reading, key: str) -> tuple[Matrix, Selected]:
    """The feature matrix of ``table``, at least one row and one column; inf is refused, naming its cell."""
    selected = select(table, reading, key.rsplit(".", 1)[0], key)
    if 0 in selected.X.shape:
        raise ConfigError(key, f"{table.source} has {selected.X.shape[0]} data rows and {selected.X.shape[1]} numeric "
                          "columns", "give a file with at least one row and one column of numbers")
    return Matrix(selected.X, selected.feature_names, table.row_word), selected


def read_data(path: Path, key: str, reading: Reading | None = None) -> Matrix:
    """The feature values of a data file, ``.npy`` (without pickle) or ``.csv`` (a header row by default; a
    first column of row names is recognised when unambiguous). Empty cells become NaN; inf is refused."""
    reading = reading or Reading()
    return read_selected(read_table(path, key, reading), reading, key)[0]


def read_matrix(path: Path, key: str) -> NDArray[np.float64]:
    """The numeric matrix of a data file (see :func:`read_data`)."""
    return read_data(path, key).X


def read_label_set(path: Path, column: Any, key: str) -> LabelSet:
    """The labels in ``path``: a column of a ``.csv`` (the last when ``column`` is None) or a 1-D ``.npy``
    array of integers or strings."""
    if path.suffix not in LABEL_TYPES:
        raise ConfigError(f"{key}.path", f"unsupported labels file type {path.suffix!r} for {path}",
                          f"give a {' or '.join(LABEL_TYPES)} file (a .csv column or a 1-D .npy array of integers or strings)")
    if path.suffix == ".npy":
        if column is not None:
            raise ConfigError(f"{key}.column", f"{path} is a .npy array and has no columns, got column {column!r}",
                              "remove 'column'")
        return label_set(read_npy(path, f"{key}.path", kinds="iuUS", ndims=(1,),
                                  expected="a 1-D array of integers or strings, one label per data row"),
                         key, str(path), "row index")
    if column is not None and (isinstance(column, bool) or not isinstance(column, (str, int))):
        raise ConfigError(f"{key}.column", f"expected one column name, got {column!r}", "give the name of one column")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as error:
        raise ConfigError(f"{key}.path", f"cannot parse {path} as CSV ({_one_line(error)})",
                          "give a comma-separated file with a header row") from None
    name = column if column is not None else frame.columns[-1]
    if name not in frame.columns and str(name) in map(str, frame.columns):
        name = str(name)
    if name not in frame.columns:
        raise ConfigError(f"{key}.column", f"no column {name!r} in {path}", f"use one of {list(frame.columns)}")
    return label_set(frame[name], key, f"{path} column {name!r}")


def read_labels(path: Path, column: Any, key: str) -> NDArray[np.int64]:
    """Integer codes of the labels in ``path`` (see :func:`read_label_set`)."""
    return read_label_set(path, column, key).codes


def _labels(spec: Any, key: str, rows: int, selected: Selected, source: str,
            given: LabelSet | None) -> tuple[LabelSet | None, str]:
    """The dataset's labels and where they came from: a labels file, a column of the data itself, or
    ``given`` (values passed from Python, their length checked by the caller)."""
    if given is not None:
        return given, "labels given from Python"
    if selected.label_values is not None:
        found = label_set(selected.label_values, f"{key}.labels", f"{source} column {spec.labels_column!r}")
        return found, f"labels {spec.labels_column!r} from the same table"
    if spec.labels_path is None:
        return None, ""
    labels_path = Path(spec.labels_path)
    if not labels_path.is_file():
        raise ConfigError(f"{key}.labels.path", f"file {str(labels_path)!r} does not exist",
                          "give the labels file's path or remove the labels entry")
    labels = read_label_set(labels_path, spec.labels_column, f"{key}.labels")
    if labels.codes.shape[0] != rows:
        raise ConfigError(f"{key}.labels", f"{labels_path} has {labels.codes.shape[0]} labels but {source} has "
                          f"{rows} rows", "give one label per data row")
    column = f" {spec.labels_column!r}" if spec.labels_column is not None else ""
    return labels, f"labels{column} from {labels_path}"


def check_values(X: NDArray[np.float64], raw: Matrix, steps: Any, path: Any, key: str) -> None:
    """Refuse a preprocessed matrix with NaN, inf, or values whose squared distances overflow or underflow.

    A column is named as in the file when every step keeps the file's columns in place; otherwise by its
    index in the preprocessed matrix.
    """
    keeps_columns = all(step in COLUMN_KEEPING_STEPS for step, _ in steps) and X.shape[1] == raw.X.shape[1]

    def column(j: int) -> str:
        return raw.columns[j] if keeps_columns else f"column {j} of the preprocessed matrix"

    if 0 in X.shape:
        raise ConfigError(key, f"{path} has {X.shape[0]} rows and {X.shape[1]} columns left after preprocessing",
                          "loosen the steps that drop them (drop_missing's max_missing, top_variance's features)")
    missing = np.isnan(X)
    if missing.any():
        first = first_nonfinite(raw.X)
        origin = f" (the first missing value of the file is at {raw.where(*first)})" if first is not None else ""
        raise ConfigError(key, f"{path} has {int(missing.sum())} missing or NaN values after preprocessing{origin}",
                          MISSING_FIX)
    at = first_nonfinite(X)
    if at is not None:
        raise ConfigError(key, f"{path} has the value {X[at]} after preprocessing, at row index {at[0]}, {column(at[1])}",
                          "check the preprocess steps and their parameters (e.g. a clip bound of .inf)")
    large = too_large(X)
    if large is not None:
        j, peak, bound = large
        raise ConfigError(key, f"{path} {column(j)} reaches |x| = {peak:.3g} after preprocessing, above {bound:.3g}, "
                          f"the largest magnitude at which squared distances over {X.shape[0]} rows and {X.shape[1]} "
                          "columns cannot overflow",
                          "add a preprocess step '- standardize: {axis: columns}' (or rescale the file)")
    spread = too_small(X)
    if spread is not None:
        raise ConfigError(key, f"{path}'s values differ by at most {spread:.3g} after preprocessing: squared distances "
                          "underflow to 0 and every point looks the same",
                          "add a preprocess step '- standardize: {axis: columns}'")


def preprocess(X: NDArray[np.float64], steps: Any, key: str) -> tuple[NDArray[np.float64], NDArray[np.int64] | None]:
    """``apply_steps`` one step at a time, so that a step that fails or overflows is named."""
    rows: NDArray[np.int64] | None = np.arange(X.shape[0])
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
    return X, rows


def load_file_dataset(spec: Any, key: str) -> LoadedData:
    """Read, check and preprocess the file dataset described by ``spec`` (a ``DatasetSpec``)."""
    path = Path(spec.path)
    if not path.is_file():
        raise ConfigError(f"{key}.path", f"file {str(path)!r} does not exist", "give the path of a .csv or .npy file "
                          "(relative paths are read from the config file's folder)")
    table = read_table(path, f"{key}.path", spec.reading)
    digest = file_digest(path) + (file_digest(Path(spec.labels_path)) if spec.labels_path else "")
    return load_table(table, spec, key, f"{key}.path", digest)


def load_table(table: Table, spec: Any, key: str, data_key: str, digest: str,
               given: LabelSet | None = None) -> LoadedData:
    """Select, check and preprocess a table's features (a file's or an array's given from Python)."""
    raw, selected = read_selected(table, spec.reading, data_key)
    labels, origin = _labels(spec, key, raw.X.shape[0], selected, table.source, given)
    X, rows = preprocess(raw.X, spec.preprocess, f"{key}.preprocess")
    check_values(X, raw, spec.preprocess, table.source, data_key)
    codes = None
    if labels is not None:
        if rows is None:
            raise ConfigError(f"{key}.labels", "labels describe the data's rows, but a transpose step "
                              "clusters its columns", "remove the labels entry or the transpose step")
        kept = np.unique(labels.codes[rows], return_inverse=True)  # classes whose rows were all dropped go
        codes = kept[1].astype(np.int64)
        labels = LabelSet(codes, tuple(labels.classes[c] for c in kept[0]))
    notes = [table.header_note, selected.row_names, *selected.notes]
    if labels is not None:
        notes.append(f"{origin}: {len(labels.classes)} classes {labels.counts()}")
    read = f"{raw.X.shape[0]} rows x {raw.X.shape[1]} features from {table.source}"
    read += f" ({'; '.join(note for note in notes if note)})" if any(notes) else ""
    if spec.preprocess:
        read += f" -> {X.shape[0]} x {X.shape[1]} after {', '.join(step for step, _ in spec.preprocess)}"
    if rows is None:  # transposed: the objects are the table's feature columns
        names = selected.column_labels if table.naming in ("header", "label") else ()
    else:
        names = tuple(selected.row_labels[i] for i in rows) if selected.row_labels else ()
    return LoadedData(X=np.ascontiguousarray(X), labels=codes, sha256=digest, read=read, classes=labels,
                      row_names=names)
