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
from tasks.datasets.bounds import first_nonfinite, too_large, too_small
from tasks.preprocess import apply_steps

LABEL_TYPES = (".csv", ".npy")
#: Steps after which column j of the matrix is still column j of the file (others move or mix columns).
COLUMN_KEEPING_STEPS = frozenset({"clip", "log", "standardize", "impute", "drop_missing"})
MISSING_FIX = "add a preprocess step '- impute: {strategy: row_mean}' or '- drop_missing: {}'"


@dataclass(frozen=True)
class LoadedData:
    """A file dataset after preprocessing: the objects to cluster and, if given, their labels."""

    X: NDArray[np.float64]
    labels: NDArray[np.int64] | None
    sha256: str


@dataclass(frozen=True)
class Matrix:
    """A data file's values (NaN where missing) and the name of each column, as the user knows it."""

    X: NDArray[np.float64]
    columns: tuple[str, ...]
    row_word: str  # "data row" (1-based, header excluded) for CSV, "row index" (0-based) for NPY

    def where(self, row: int, column: int) -> str:
        number = row + 1 if self.row_word == "data row" else row
        return f"{self.row_word} {number}, column {self.columns[column]}"


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


def _npy_matrix(path: Path, key: str) -> Matrix:
    X = read_npy(path, key, kinds="biuf", ndims=(1, 2), expected="a 1-D or 2-D array of real numbers")
    if X.ndim == 1:
        X = X[:, None]
    with np.errstate(over="ignore"):  # a longdouble beyond float64 becomes inf, refused by read_data
        values = X.astype(np.float64)
    return Matrix(values, tuple(str(j) for j in range(X.shape[1])), "row index")


def _read_csv(path: Path, key: str, **options: Any) -> pd.DataFrame:
    try:
        return pd.read_csv(path, **options)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as error:
        raise ConfigError(key, f"cannot parse {path} as CSV ({_one_line(error)})",
                          "give a comma-separated file with a header row") from None


def _as_numbers(column: pd.Series) -> pd.Series:
    """A CSV column as numbers, NaN where a cell is not one. Integers beyond float64, which pandas keeps as
    Python ints, become inf, as 1e400 does."""
    try:
        return pd.to_numeric(column, errors="coerce")
    except OverflowError:
        return pd.to_numeric(column.astype(str), errors="coerce")


def _not_numbers(column: pd.Series) -> pd.Series:
    """Where a CSV column holds text that is not a number (empty cells are missing values, not text)."""
    return column.notna() & _as_numbers(column).isna()


def _shown(text: Any, limit: int = 40) -> str:
    """A cell's text for a message, cut to ``limit`` characters (a 5000-digit cell would fill the screen)."""
    text = str(text)
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def _csv_matrix(path: Path, key: str) -> Matrix:
    frame = _read_csv(path, key)
    first = 0
    if frame.shape[1] > 1 and _not_numbers(frame.iloc[:, 0]).any():
        frame, first = frame.iloc[:, 1:], 1
    for column in frame.columns:
        bad = _not_numbers(frame[column])
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ConfigError(key, f"{path} has a non-numeric cell {_shown(frame[column].iloc[row])} in column "
                              f"{column!r}, data row {row + 1}", "fix the file or drop that column")
        frame[column] = _as_numbers(frame[column])
    X = frame.to_numpy(dtype=np.float64)
    at = first_nonfinite(X, nan=False)
    if at is not None:  # name the text of the cell: '1e400' reads as inf
        text = _read_csv(path, key, dtype=str, keep_default_na=False).iloc[at[0], at[1] + first]
        raise ConfigError(key, f"{path} has the non-finite value {_shown(text)} at data row {at[0] + 1}, column "
                          f"{frame.columns[at[1]]!r} (inf, or beyond float64's range of ±1.8e308)",
                          "replace it with a finite number, or empty the cell and add a drop_missing or impute step")
    return Matrix(X, tuple(repr(str(c)) for c in frame.columns), "data row")


def read_data(path: Path, key: str) -> Matrix:
    """The values of a data file, ``.npy`` (without pickle) or ``.csv`` (a header row; a first column of
    row names is recognised when it is not numeric). Empty cells become NaN; inf is refused."""
    if path.suffix == ".npy":
        matrix = _npy_matrix(path, key)
        at = first_nonfinite(matrix.X, nan=False)
        if at is not None:
            raise ConfigError(key, f"{path} has the non-finite value {matrix.X[at]} at {matrix.where(*at)} (inf, or "
                              "beyond float64's range of ±1.8e308)",
                              "replace it with a finite number (or NaN and add a drop_missing or impute step)")
    elif path.suffix == ".csv":
        matrix = _csv_matrix(path, key)
    else:
        raise ConfigError(key, f"unsupported file type {path.suffix!r} for {path}", "use a .csv or .npy file")
    if 0 in matrix.X.shape:
        raise ConfigError(key, f"{path} has {matrix.X.shape[0]} data rows and {matrix.X.shape[1]} numeric columns",
                          "give a file with at least one row and one column of numbers")
    return matrix


def read_matrix(path: Path, key: str) -> NDArray[np.float64]:
    """The numeric matrix of a data file (see :func:`read_data`)."""
    return read_data(path, key).X


def _codes(values: NDArray[Any]) -> NDArray[np.int64]:
    return np.unique(values, return_inverse=True)[1].astype(np.int64)


def read_labels(path: Path, column: Any, key: str) -> NDArray[np.int64]:
    """Integer codes of the labels in ``path``: a column of a ``.csv`` (the last when ``column`` is None)
    or a 1-D ``.npy`` array of integers or strings."""
    if path.suffix not in LABEL_TYPES:
        raise ConfigError(f"{key}.path", f"unsupported labels file type {path.suffix!r} for {path}",
                          f"give a {' or '.join(LABEL_TYPES)} file (a .csv column or a 1-D .npy array of integers or strings)")
    if path.suffix == ".npy":
        if column is not None:
            raise ConfigError(f"{key}.column", f"{path} is a .npy array and has no columns, got column {column!r}",
                              "remove 'column'")
        return _codes(read_npy(path, f"{key}.path", kinds="iuUS", ndims=(1,),
                               expected="a 1-D array of integers or strings, one label per data row"))
    if column is not None and not isinstance(column, str):
        raise ConfigError(f"{key}.column", f"expected one column name, got {column!r}", "give the name of one column")
    frame = _read_csv(path, f"{key}.path")
    name = column if column is not None else frame.columns[-1]
    if name not in frame.columns:
        raise ConfigError(f"{key}.column", f"no column {name!r} in {path}", f"use one of {list(frame.columns)}")
    values = frame[name]
    if values.isna().any():
        row = int(np.flatnonzero(values.isna().to_numpy())[0])
        raise ConfigError(key, f"{path} column {name!r} has a missing label at data row {row + 1}", "give every row a label")
    return _codes(values.astype(str).to_numpy())


def _labels(spec: Any, key: str, rows: int) -> NDArray[np.int64] | None:
    if spec.labels_path is None:
        return None
    labels_path = Path(spec.labels_path)
    if not labels_path.is_file():
        raise ConfigError(f"{key}.labels.path", f"file {str(labels_path)!r} does not exist",
                          "give the labels file's path or remove the labels entry")
    labels = read_labels(labels_path, spec.labels_column, f"{key}.labels")
    if labels.shape[0] != rows:
        raise ConfigError(f"{key}.labels", f"{labels_path} has {labels.shape[0]} labels but {spec.path} has "
                          f"{rows} rows", "give one label per data row")
    return labels


def check_values(X: NDArray[np.float64], raw: Matrix, steps: Any, path: Path, key: str) -> None:
    """Refuse a preprocessed matrix with NaN, inf, or values whose squared distances overflow or underflow.

    A column is named as in the file when every step keeps the file's columns in place; otherwise by its
    index in the preprocessed matrix.
    """
    keeps_columns = all(step in COLUMN_KEEPING_STEPS for step, _ in steps) and X.shape[1] == raw.X.shape[1]

    def column(j: int) -> str:
        return f"column {raw.columns[j]}" if keeps_columns else f"column {j} of the preprocessed matrix"

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
    raw = read_data(path, f"{key}.path")
    labels = _labels(spec, key, raw.X.shape[0])
    X, rows = preprocess(raw.X, spec.preprocess, f"{key}.preprocess")
    check_values(X, raw, spec.preprocess, path, f"{key}.path")
    if labels is not None:
        if rows is None:
            raise ConfigError(f"{key}.labels", "labels describe the file's rows, but a transpose step "
                              "clusters its columns", "remove the labels entry or the transpose step")
        labels = np.unique(labels[rows], return_inverse=True)[1]
    digest = file_digest(path) + (file_digest(Path(spec.labels_path)) if spec.labels_path else "")
    return LoadedData(X=np.ascontiguousarray(X), labels=labels, sha256=digest)
