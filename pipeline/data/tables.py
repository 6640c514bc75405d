"""Which cells of a table are the data: the header row, the row names, the labels, the feature columns.

A dataset's table is a CSV file, a ``.npy`` array or (from Python) a NumPy array or pandas DataFrame.
Nothing is guessed silently: a header row is the default for CSV files, and a first row that looks like
data under it (or a header under ``header: false``) is refused; every column that is not a number must
be declared (``row_names``, ``labels: {column: ...}``) or left out (``exclude``, ``columns``). The one
inference kept is the first column as row names when that is unambiguous (its header cell is empty, as
R's ``write.csv`` and pandas' ``to_csv`` write row names, or it holds distinct text values), and it is
printed in the dataset's line.

Columns are named by the header (CSV with a header row, DataFrame labels), by 1-based position (CSV
without a header row, counted as ``cut -f`` and spreadsheets count, like our 1-based data rows), or by
0-based index (``.npy`` files and NumPy arrays, as Python indexes them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.lib import format as npy_format
from numpy.typing import NDArray

from ordercube.pipeline.data.reading import Reading
from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.files.inputfile import InputFile
from ordercube.tasks.datasets.bounds import first_nonfinite

READING_KEYS = ("header", "columns", "exclude", "row_names")
MAX_SHOWN = 12  # column names listed in a message


@dataclass(frozen=True)
class Table:
    """A table's cells (strings, numbers or NaN for missing) and how its columns and rows are named."""

    cells: pd.DataFrame  # columns 0..d-1
    names: tuple[Any, ...]  # the name of each column as the user refers to it
    naming: str  # "header", "position" (1-based), "index" (0-based), "label" (DataFrame)
    source: str  # the file or the key, for messages
    row_word: str  # "data row" (1-based) or "row index" (0-based)
    header_note: str = ""
    numbers: NDArray[np.float64] | None = None  # every cell as a number, NaN where it is not one (CSV text)
    # Columns of the file that are never features, by name (an AnnData file's obs): a labels or row-names column
    extra: Mapping[str, Any] = field(default_factory=dict)
    index_names: tuple[str, ...] = ()  # the rows' names the file gives apart from its columns (an index, obs_names)
    index_note: str = "row names from the file"

    def not_numbers(self, j: int) -> NDArray[np.bool_]:
        """Where column ``j`` holds text that is not a number (:func:`not_numbers`)."""
        if self.numbers is None:
            return not_numbers(self.cells[j]).to_numpy()
        return self.cells[j].notna().to_numpy() & np.isnan(self.numbers[:, j])

    def column_numbers(self, j: int) -> NDArray[np.float64]:
        """Column ``j`` as numbers (:func:`as_numbers`)."""
        if self.numbers is None:
            return as_numbers(self.cells[j]).to_numpy(dtype=np.float64)
        return self.numbers[:, j]

    def shown(self, j: int) -> str:
        name = self.names[j]
        if self.naming == "header" and name == "":
            return f"column {j + 1} (no name in the header row)"
        return f"column {name!r}" if self.naming in ("header", "label", "column") else f"column {name}"

    def row(self, i: int) -> str:
        return f"{self.row_word} {i + 1 if self.row_word == 'data row' else i}"

    def find(self, given: Any, key: str) -> int:
        """The position of the column the config names ``given``."""
        for j, name in enumerate(self.names):
            if given == name and type(given) is not bool:
                return j
        if not isinstance(given, (bool, float)) and self.naming in ("header", "position", "index", "label", "column"):
            for j, name in enumerate(self.names):  # YAML reads a name like 2001 as an integer
                if str(given) == str(name) and str(name) != "":
                    return j
        how = {"header": "by the names in its header row", "position": "by position from 1 (it has no header row)",
               "index": "by index from 0", "label": "by the DataFrame's column labels",
               "column": "by the names the file gives them"}[self.naming]
        names = [str(n) for n in self.names]
        if self.extra:
            how += f"; besides them it holds {sorted(map(str, self.extra))}, never features"
        listed = names if len(names) <= MAX_SHOWN else [*names[:MAX_SHOWN - 2], "...", names[-1]]
        raise ConfigError(key, f"no column {given!r} in {self.source} (its {len(names)} columns are named {how})",
                          f"use one of {listed}")


def one_line(error: BaseException) -> str:
    """A library's error text on one line (pandas' parser errors end with a newline)."""
    return " ".join(str(error).split())


def npy_header(file: InputFile, key: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype from the header of a ``.npy`` file, checked against the file's size, so that a
    header claiming a huge shape is refused before anything is allocated; pickled (object) arrays too."""
    path = file.path
    try:
        stream = file.binary()
        version = npy_format.read_magic(stream)
        read = {(1, 0): npy_format.read_array_header_1_0, (2, 0): npy_format.read_array_header_2_0}.get(version)
        if read is None:
            raise ValueError(f"format version {version} is not supported")
        shape, _, dtype = read(stream)
        offset = stream.tell()
    except (ValueError, OSError, SyntaxError, TypeError) as error:
        raise ConfigError(key, f"{path} is not a readable .npy file ({one_line(error)})",
                          "save it with numpy.save from a numeric array") from None
    if dtype.hasobject:
        raise ConfigError(key, f"{path} holds Python objects (a pickle), which are never loaded",
                          "save a numeric array (array.astype(float)) with numpy.save")
    expected = int(np.prod(shape, dtype=object)) * dtype.itemsize
    actual = len(file.data) - offset
    if expected != actual:
        raise ConfigError(key, f"{path}'s header claims shape {shape} of {dtype} ({expected} bytes) but the file "
                          f"holds {actual} bytes of data", "the file is truncated or damaged: save it again with numpy.save")
    return shape, dtype


def read_npy(file: InputFile, key: str, *, kinds: str, ndims: tuple[int, ...], expected: str) -> NDArray[Any]:
    """The array of a ``.npy`` file, never unpickled; its header's shape (``ndims``) and dtype (``kinds``,
    NumPy's dtype kind letters) are checked, against the file's size too, before anything is read."""
    shape, dtype = npy_header(file, key)
    if len(shape) not in ndims or dtype.kind not in kinds or dtype.itemsize == 0:
        raise ConfigError(key, f"{file.path} holds a {len(shape)}-D {dtype} array", f"expected {expected}")
    try:
        return np.load(file.binary(), allow_pickle=False)
    except (ValueError, OSError) as error:
        raise ConfigError(key, f"{file.path} is not a plain .npy array ({one_line(error)})",
                          "save it with numpy.save") from None


def read_csv_table(file: InputFile, key: str, header: bool | None) -> Table:
    """Every cell of a CSV file as text (NaN where missing), its header decided and checked."""
    path = file.path
    try:  # from the bytes: a text copy of them would double the memory a large table takes to parse
        raw = pd.read_csv(file.binary(), header=None, dtype=str, encoding="utf-8-sig")
    except UnicodeDecodeError:
        file.text(key)  # raises the ConfigError naming the first byte that is not UTF-8
        raise
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        text = " ".join(str(error).split())
        raise ConfigError(key, f"cannot parse {path} as CSV ({text})", "give a comma-separated file") from None
    raw.columns = range(raw.shape[1])
    first, body = raw.iloc[0], raw.iloc[1:].reset_index(drop=True)
    numbers = text_numbers(raw)
    if numbers is None:
        numeric = [j for j in raw.columns if body[j].notna().any() and not not_numbers(body[j]).any()]
        first_numbers = [j for j in numeric if pd.notna(first[j]) and not not_numbers(first.iloc[[j]]).any()]
    else:
        present = raw.notna().to_numpy()
        text = present & np.isnan(numbers)
        numeric = np.flatnonzero(present[1:].any(axis=0) & ~text[1:].any(axis=0)).tolist()
        first_numbers = [j for j in numeric if present[0, j] and not text[0, j]]
    over_numbers = [j for j in numeric if pd.notna(first[j])]
    header_key = key.rsplit(".", 1)[0] + ".header"
    if header is None and over_numbers and len(first_numbers) == len(over_numbers):
        cells = ", ".join(str(first[j]) for j in over_numbers[:6]) + (", ..." if len(over_numbers) > 6 else "")
        raise ConfigError(header_key, f"the first row of {path} ({cells}) is numbers where the columns below hold "
                          "numbers: it looks like data, not a header row (by default the first row is read as "
                          "column names)", "set header: false if it is data (columns are then named 1, 2, ...), "
                          "or header: true if these numbers are the column names")
    if header is False:
        texts = [j for j in numeric if pd.notna(first[j]) and not_numbers(first.iloc[[j]]).any()]
        if texts:
            j = texts[0]
            raise ConfigError(header_key, f"header: false, but the first row of {path} has text ({first[j]!r} in "
                              f"column {j + 1}) over a column of numbers: it looks like a header row",
                              "set header: true (or remove the header row from the file)")
        return Table(raw, tuple(str(j + 1) for j in raw.columns), "position", str(path), "data row",
                     "no header row (columns named 1, 2, ... by position)", numbers)
    names = tuple("" if pd.isna(cell) else str(cell) for cell in first)
    seen = [name for j, name in enumerate(names) if name and name in names[:j]]
    if seen:
        raise ConfigError(key, f"the header row of {path} names two columns {seen[0]!r}", "give every column its own name")
    note = "header row" if header is None or len(first_numbers) < len(over_numbers) or not over_numbers \
        else "header row of numbers (header: true)"
    return Table(body, names, "header", str(path), "data row", note, None if numbers is None else numbers[1:])


def text_numbers(cells: pd.DataFrame) -> NDArray[np.float64] | None:
    """Every cell of a table of text as a number, NaN where it is missing or not a number: :func:`as_numbers` of
    every column in one conversion (a column at a time costs 1 ms each: 2 s for 2,000 genes). None where that
    conversion does not give floats or integers (a number beyond int64 that is not a float), or gives a negative
    zero (``-0`` in a column of integers is +0.0 a column at a time, -0.0 among floats): then a column at a time."""
    flat = pd.Series(cells.to_numpy(dtype=object).ravel(order="F"))
    try:
        parsed = pd.to_numeric(flat, errors="coerce")
    except (OverflowError, TypeError):
        return None
    if parsed.dtype.kind not in "fiu":
        return None
    values = parsed.to_numpy(dtype=np.float64)
    if np.any((values == 0) & np.signbit(values)):
        return None
    return values.reshape(cells.shape, order="F")


def array_table(X: NDArray[Any], source: str) -> Table:
    """A 1-D or 2-D numeric array (a ``.npy`` file's or one given from Python), columns by 0-based index."""
    X = X[:, None] if X.ndim == 1 else X
    with np.errstate(over="ignore"):  # a longdouble beyond float64 becomes inf, refused with its place
        values = np.asarray(X, dtype=np.float64)
    return Table(pd.DataFrame(values), tuple(range(values.shape[1])), "index", source, "row index")


def frame_table(frame: pd.DataFrame, source: str) -> Table:
    """A pandas DataFrame, columns by their labels; its index is its row names."""
    cells = frame.copy()
    cells.columns = range(frame.shape[1])
    for j in cells.columns:
        if isinstance(cells[j].dtype, pd.CategoricalDtype) or cells[j].dtype == bool:
            cells[j] = cells[j].astype(object)
    return Table(cells.reset_index(drop=True), tuple(frame.columns), "label", source, "row index")


def as_numbers(column: pd.Series) -> pd.Series:
    """A column as numbers, NaN where a cell is not one. Integers beyond float64 (kept as Python ints by
    pandas) become inf, as 1e400 does."""
    try:
        return pd.to_numeric(column, errors="coerce")
    except (OverflowError, TypeError):
        return pd.to_numeric(column.astype(str), errors="coerce")


def not_numbers(column: pd.Series) -> pd.Series:
    """Where a column holds text that is not a number (missing cells are missing values, not text)."""
    if pd.api.types.is_numeric_dtype(column.dtype) and column.dtype != bool:
        return pd.Series(False, index=column.index)
    return column.notna() & as_numbers(column).isna()


def shown_cell(text: Any, limit: int = 40) -> str:
    """A cell's text for a message, cut to ``limit`` characters (a 5000-digit cell would fill the screen)."""
    text = str(text)
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


@dataclass(frozen=True)
class Selected:
    """The feature matrix of a table and what else was read from it."""

    X: NDArray[np.float64]  # NaN where missing
    feature_names: tuple[str, ...]  # as messages show them: "column 'a'"
    row_names: str  # "" or "row names from column 'id'" ...
    label_values: pd.Series | None  # the labels column's cells, when the labels come from this table
    notes: tuple[str, ...] = ()
    row_labels: tuple[str, ...] = ()  # the rows' names, when a column names them
    column_labels: tuple[str, ...] = ()  # the feature columns' names, as the table has them
    row_names_header: str = ""  # the header of the column of row names (CSV with a header row)


def _resolve_all(table: Table, values: Sequence[Any] | None, key: str) -> list[int]:
    return [table.find(value, f"{key}[{i}]") for i, value in enumerate(values or ())]


def inferred_row_names(table: Table, taken: set[int], key: str | None = None) -> int | None:
    """The first column, when it is unambiguously row names: no name in the header row, or distinct text. A
    column of numbers but for a few cells (text in at most half of them) is not: a mistyped number (``0.64O42``)
    would silently turn a feature into row names. With ``key`` (a dataset's) that is refused, naming the cell;
    without (a labels file, whose rows may be named by another column), the column is not taken as names."""
    if table.cells.shape[1] < 2 or 0 in taken or table.naming not in ("header", "position", "column") \
            or table.index_names:
        return None
    column = table.cells[0]
    if table.naming == "header" and table.names[0] == "":
        return 0
    text = table.not_numbers(0)
    if column.notna().all() and text.any() and column.is_unique:
        if 2 * int(text.sum()) <= len(text):
            if key is None:
                return None
            i = int(np.flatnonzero(text)[0])
            more = f" (and {int(text.sum()) - 1} more)" if text.sum() > 1 else ""
            raise ConfigError(f"{key}.row_names", f"{table.shown(0)} of {table.source} holds numbers but for "
                              f"{shown_cell(column.iloc[i])} in {table.row(i)}{more}: read as row names, it would "
                              "silently drop a feature",
                              f"correct that cell if it is a mistyped number, or set row_names: {table.names[0]!r} "
                              "if the column names the rows")
        return 0
    return None


def select(table: Table, reading: Reading, key: str, data_key: str, *, dissimilarities: bool = False) -> Selected:
    """The feature columns of ``table`` as a float matrix, after the row names, labels and exclusions.
    ``key`` is the dataset's (for its options), ``data_key`` where the values came from (``.path``, ``.data``);
    a matrix of ``dissimilarities`` takes neither exclusions nor steps, and its messages' fixes say so."""
    if reading.columns is not None and reading.exclude:
        raise ConfigError(f"{key}.exclude", "both 'columns' and 'exclude' are given",
                          "give 'columns' (the features to keep) or 'exclude' (the columns to drop), not both")
    roles: dict[int, str] = {}
    notes: list[str] = []
    row_names = ""
    names_at = None
    index_names = table.index_names
    if index_names:
        row_names = table.index_note
    if reading.row_names is not None and reading.row_names in table.extra:
        index_names = tuple(str(cell) for cell in table.extra[reading.row_names])
        row_names = f"row names from {reading.row_names!r}"
    elif reading.row_names is not None:
        j = table.find(reading.row_names, f"{key}.row_names")
        roles[j], row_names, names_at = "row names", f"row names from {table.shown(j)}", j
    label_values = None
    if reading.label_column is not None and reading.label_in_table and reading.label_column in table.extra:
        label_values = pd.Series(np.asarray(table.extra[reading.label_column], dtype=object))
    elif reading.label_column is not None:
        try:
            j = table.find(reading.label_column, f"{key}.labels.column")
        except ConfigError:
            if reading.label_in_table:
                raise
        else:
            if roles.get(j):
                raise ConfigError(f"{key}.labels.column", f"{table.shown(j)} is already the row names",
                                  "name another column for the labels")
            roles[j] = "labels"
            label_values = table.cells[j] if reading.label_in_table else None
            if not reading.label_in_table:
                notes.append(f"{table.shown(j)} of the data is the labels column: not a feature")
    excluded = set(_resolve_all(table, reading.exclude, f"{key}.exclude"))
    if reading.columns is not None:
        features = _resolve_all(table, reading.columns, f"{key}.columns")
        for i, j in enumerate(features):
            if j in roles:
                raise ConfigError(f"{key}.columns[{i}]", f"{table.shown(j)} is the {roles[j]} column, never a feature",
                                  "remove it from 'columns'")
        if len(set(features)) != len(features):
            raise ConfigError(f"{key}.columns", "a column is listed twice", "list each column once")
    else:
        inferred = None if reading.row_names is not None else inferred_row_names(table, set(roles) | excluded, key)
        if inferred is not None:
            roles[inferred], names_at = "row names", inferred
            why = "its empty header cell" if table.naming == "header" and table.names[0] == "" else \
                "its distinct text values"
            row_names = f"row names from {table.shown(inferred)}, inferred from {why}"
        features = [j for j in range(table.cells.shape[1]) if j not in roles and j not in excluded]
    if not features:
        raise ConfigError(f"{key}.columns" if reading.columns is not None else f"{key}.exclude",
                          f"no feature column is left in {table.source}", "keep at least one column of numbers")
    X = _numbers(table, features, data_key, dissimilarities)
    row_labels = index_names if names_at is None else tuple(str(cell) for cell in table.cells[names_at])
    names_header = str(table.names[names_at]) if names_at is not None and table.naming == "header" else ""
    return Selected(X, tuple(table.shown(j) for j in features), row_names, label_values, tuple(notes), row_labels,
                    tuple(str(table.names[j]) for j in features), names_header)


#: dtype kinds of a DataFrame column that convert to numbers without being measurements on a scale of their own:
#: dates and durations (nanosecond counts), complex numbers. Refused rather than clustered as those counts.
NOT_MEASUREMENTS = {"M": "dates (they would be clustered as nanoseconds since 1970)",
                    "m": "durations (they would be clustered as nanoseconds)",
                    "c": "complex numbers (only real values are clustered)"}


def _numbers(table: Table, features: list[int], key: str, dissimilarities: bool) -> NDArray[np.float64]:
    kinds = [getattr(dtype, "kind", "O") for dtype in table.cells.dtypes]
    if table.numbers is not None:  # only the columns holding text that is not a number are looked at one by one
        text = table.cells.notna().to_numpy()[:, features] & np.isnan(table.numbers[:, features])
        checked = [j for j, has_text in zip(features, text.any(axis=0)) if has_text or kinds[j] in NOT_MEASUREMENTS]
    else:
        checked = features
    for j in checked:
        kind = kinds[j]
        if kind in NOT_MEASUREMENTS:
            name = table.names[j]
            raise ConfigError(key, f"{table.source} {table.shown(j)} holds {NOT_MEASUREMENTS[kind]}",
                              f"convert it to the numbers you mean (e.g. days since a date: (t - t0).dt.days) "
                              f"or exclude: [{name!r}]")
        bad = table.not_numbers(j)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            name = table.names[j]
            fix = "fix the cell: a distance matrix has a number in every cell but its row names" if dissimilarities \
                else f"if that column names the rows set row_names: {name!r}; if it holds classes set labels: " \
                     f"{{column: {name!r}}}; else exclude: [{name!r}] (or fix the cell)"
            raise ConfigError(key, f"{table.source} has a non-numeric cell {shown_cell(table.cells[j].iloc[i])} in "
                              f"{table.shown(j)}, {table.row(i)}: only numbers are clustered", fix)
    if table.numbers is not None:
        X = np.ascontiguousarray(table.numbers[:, features])
    else:
        X = np.column_stack([table.column_numbers(j) for j in features]) if features \
            else np.empty((table.cells.shape[0], 0))
    at = first_nonfinite(X, nan=False)
    if at is not None:
        cell = table.cells[features[at[1]]].iloc[at[0]]
        shown = shown_cell(cell) if isinstance(cell, str) else str(cell)  # the text of a CSV cell: '1e400'
        raise ConfigError(key, f"{table.source} has the non-finite value {shown} at {table.row(at[0])}, "
                          f"{table.shown(features[at[1]])} (inf, or beyond float64's range of ±1.8e308)",
                          "replace it with a finite number" + ("" if dissimilarities else
                                                               ", or empty the cell and add a drop_missing or impute step"))
    return X


@dataclass(frozen=True)
class LabelSet:
    """Labels as integer codes 0..c-1 and the class each code stands for."""

    codes: NDArray[np.int64]
    classes: tuple[str, ...]

    def counts(self) -> str:
        sizes = np.bincount(self.codes, minlength=len(self.classes))
        parts = [f"{name} {size}" for name, size in zip(self.classes, sizes)]
        return ", ".join(parts if len(parts) <= 8 else [*parts[:7], f"... ({len(parts)} classes)"])


def label_set(values: Any, key: str, source: str, row_word: str = "data row") -> LabelSet:
    """Codes of a 1-D sequence of labels (integers or strings), refusing a missing one."""
    series = pd.Series(list(values) if not isinstance(values, (pd.Series, np.ndarray)) else values)
    if series.ndim != 1:
        raise ConfigError(key, f"expected one label per row, got shape {np.shape(values)}", "give a 1-D sequence")
    missing = series.isna().to_numpy()
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        where = f"{row_word} {i + 1 if row_word == 'data row' else i}"
        raise ConfigError(key, f"{source} has a missing label at {where}", "give every row a label")
    text = series.astype(str).to_numpy()
    classes, codes = np.unique(text, return_inverse=True)
    return LabelSet(codes.astype(np.int64), tuple(map(str, classes)))


def reading_of(entry: Mapping[str, Any], key: str, *, label_column: Any, label_in_table: bool) -> Reading:
    """The reading options of a dataset entry, their types checked (the names are checked against the table)."""
    header = entry.get("header")
    if header is not None and not isinstance(header, bool):
        raise ConfigError(f"{key}.header", f"expected true or false, got {header!r}",
                          "header: true (the first row names the columns) or header: false")
    lists = {}
    for name in ("columns", "exclude"):
        value = entry.get(name)
        if value is None:
            continue
        if not isinstance(value, list) or not value:
            raise ConfigError(f"{key}.{name}", f"expected a non-empty list of column names, got {value!r}",
                              f"write {name}: [name, ...] (positions 1, 2, ... for a file without a header row)")
        for i, item in enumerate(value):
            if isinstance(item, (bool, float, list, dict)) or item is None:
                raise ConfigError(f"{key}.{name}[{i}]", f"expected a column name or position, got {item!r}",
                                  "give the column's name as in the header row")
        lists[name] = tuple(value)
    row_names = entry.get("row_names")
    if row_names is not None and (isinstance(row_names, (bool, float, list, dict))):
        raise ConfigError(f"{key}.row_names", f"expected one column name, got {row_names!r}",
                          "give the name of the column holding the row names")
    return Reading(header=header, columns=lists.get("columns"), exclude=lists.get("exclude", ()),
                   row_names=row_names, label_column=label_column, label_in_table=label_in_table)
