"""Matrix datasets for matrix models (Frank, Chehreghani & Buhmann 2011, section 2.4-2.6): ``kind: image`` and
``kind: boolean_matrix``.

``image``: a grey image (:mod:`ordercube.pipeline.data.imagefiles`: a grey PNG or a CSV of grey levels, at most
``MAX_IMAGE_PIXELS``). ``params``: ``noise`` (the sd of the Gaussian noise a trial adds to the pixels, on the
image's own scale), ``patch`` (8), ``placement`` (``tiling``: the non-overlapping tiles, ``random``: overlapping
patches at random corners), ``train_fraction`` (0.5: the halves).

``boolean_matrix``: a 0/1 matrix from a CSV in the layout the entry's ``format`` names: ``dense`` (a header row;
a first column of row names when it is not numeric) or ``edges`` (two columns ``user,permission`` of
non-negative integer ids below 2^63, a header row; the rows are the users that appear, the columns the
permissions that appear, both in increasing id). Without ``format`` the layout is inferred only where the file
reads one way: other than two columns, dense; two columns with an id beyond 0 and 1, edges; two columns of 0/1
values read both ways (a 40 x 2 matrix, or 2 users x 2 permissions) and are refused until ``format`` says
which. ``params``: ``noise`` (the flip rate ν: round(ν‖X*‖₁) ones to 0 and as many zeros to 1 per trial),
``columns`` (keep the most frequent columns, ties to the lower column; 0: all), ``train_fraction``.

n counts the rows of a trial (patches, users); ``all`` (the default) is every tile, or every row. Every file is
read once through :func:`ordercube.pipeline.files.inputfile.read_input`; the digest of its bytes is the dataset's identity.
Everything that would be misread is refused with the file and the fix, and what was read is printed: the data
line says the layout and whether it was given or inferred. A matrix whose rows cannot tell ranks apart (every
row the same, no 1 at all, a constant image) is refused before anything is computed.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.data.imagefiles import check_image_structure, load_image
from ordercube.pipeline.files.inputfile import InputFile, read_input
from ordercube.tasks.datasets.matrices import PLACEMENTS, MatrixSource, training_rows
from ordercube.tasks.params import ParamError, check_params, choice, integer, number, show

IMAGE_PARAMS = {"noise": 0.0, "patch": 8, "placement": "tiling", "train_fraction": 0.5}
BOOLEAN_PARAMS = {"noise": 0.0, "columns": 0, "train_fraction": 0.5}
RANGES = {"noise": number(0.0), "patch": integer(1, 4096), "placement": choice(*PLACEMENTS),
          "train_fraction": number(0.0, 1.0, low_open=True, high_open=True), "columns": integer(0, 10_000_000)}
LAYOUTS = ("edges", "dense")
#: The most cells of a matrix built from a file (2 GiB as float64): an edge list of a few lines can name ids
#: whose users x permissions would not fit in memory; the largest shipped matrix, americas_large, has 35 million.
MAX_MATRIX_CELLS = 2**28
INT64_MAX = int(np.iinfo(np.int64).max)
_DIGITS = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class LoadedMatrix:
    values: NDArray[np.float64]  # (users, permissions), 0/1
    read: str
    sha256: str
    reading: Mapping[str, str] = field(default_factory=dict)  # what the identity says beyond the file's digest


def matrix_params(kind: str, given: Any, key: str) -> dict[str, Any]:
    """The dataset's parameters over the defaults of its kind, each checked."""
    defaults = IMAGE_PARAMS if kind == "image" else BOOLEAN_PARAMS
    if not isinstance(given, Mapping):
        raise ConfigError(f"{key}.params", f"expected a mapping, got {show(given)}", f"write params: {defaults}")
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ConfigError(f"{key}.params.{unknown[0]}", f"a {kind} dataset has no parameter {unknown[0]!r}",
                          f"use {sorted(defaults)}")
    try:
        check_params(given, {name: RANGES[name] for name in defaults})
    except ParamError as error:
        raise ConfigError(f"{key}.params.{error.name}", str(error), f"see the parameters of {kind}: {defaults}") from None
    return {**defaults, **given}


def csv_rows(file: InputFile, key: str) -> list[tuple[int, list[str]]]:
    """The non-blank rows of a CSV input file, each with the number of the line it ends on (as an editor counts)."""
    try:
        reader = csv.reader(file.text(key))
        return [(reader.line_num, row) for row in reader if any(cell.strip() for cell in row)]
    except csv.Error as error:
        raise ConfigError(key, f"{file.path} is not a readable CSV text file ({error})", "give a CSV file") from None


def layout_of(entry: Mapping[str, Any], key: str) -> str | None:
    """The ``format`` a Boolean-matrix entry gives (None: inferred from the file)."""
    given = entry.get("format")
    if given is None or given in LAYOUTS:
        return given
    raise ConfigError(f"{key}.format", f"expected edges or dense, got {show(given)}",
                      "write format: edges (user,permission id pairs) or format: dense (a 0/1 table)")


def load_boolean_matrix(path: str, key: str, layout: str | None = None) -> LoadedMatrix:
    """The 0/1 matrix at ``path`` in the ``layout`` given (``edges``, ``dense``), or inferred when only one reading
    is possible; ``key`` is the dataset's (problems with the file go under ``key.path``, with the layout under
    ``key.format``)."""
    return boolean_of(read_input(path, f"{key}.path", expected="a 0/1 CSV matrix or a user,permission edge list"),
                      key, layout)


def boolean_of(file: InputFile, key: str, layout: str | None = None) -> LoadedMatrix:
    """The 0/1 matrix of a file's bytes (the ``boolean_matrix`` reader; see :func:`load_boolean_matrix`): a 0/1 CSV
    table, a ``user,permission`` edge list, or a Matrix Market file (sparse or dense) of 0/1 values."""
    path = str(file.path)
    if file.data[:14].lower() == b"%%matrixmarket":
        return _matrix_market(file, key)
    rows = csv_rows(file, f"{key}.path")
    if len(rows) < 2:
        raise ConfigError(f"{key}.path", f"{path} holds no data rows", "give a header row, then one row per user (or "
                          "per edge)")
    width = len(rows[0][1])
    chosen, how = (layout, "given") if layout is not None else _infer_layout(rows, path, key)
    if chosen == "edges":
        values, read, note = _edge_list(rows, path, key)
    else:
        values, read, note = _dense(rows, path, key)
    # Earlier versions read every two-column file as an edge list: only a two-column file read dense is a matrix
    # they never made from these bytes, and only it says so in its identity (older cubes resume unchanged).
    reading = {"format": "dense"} if chosen == "dense" and width == 2 else {}
    return LoadedMatrix(values=values, read=f"{read} (format: {chosen}, {how}) from {path}{note}", sha256=file.sha256,
                        reading=reading)


def _matrix_market(file: InputFile, key: str) -> LoadedMatrix:
    """A Matrix Market file as a 0/1 matrix (a pattern matrix's entries are ones): read as the ``mtx`` reader
    reads it, densified within the same bound as a CSV matrix, every value checked to be 0 or 1."""
    from ordercube.pipeline.data.matrixmarket import read_matrix_market

    read = read_matrix_market(file, key=f"{key}.path")
    rows, columns = read.values.shape
    if rows * columns > MAX_MATRIX_CELLS:
        raise ConfigError(f"{key}.path", f"{file.path} is a {rows} x {columns} matrix, above the {MAX_MATRIX_CELLS} "
                          "cells a Boolean matrix holds at most", "give a smaller matrix")
    values = read.values.toarray() if hasattr(read.values, "toarray") else np.asarray(read.values)
    values = np.asarray(values, dtype=np.float64)
    odd = np.flatnonzero((values != 0) & (values != 1))
    if odd.size:
        i, j = divmod(int(odd[0]), columns)
        raise ConfigError(f"{key}.path", f"{file.path} holds {values.flat[odd[0]]:g} at row {i + 1}, column {j + 1} "
                          f"({odd.size} values other than 0 and 1)", "give a 0/1 (or pattern) Matrix Market file")
    return LoadedMatrix(values=values, read=f"{rows} rows x {columns} columns, {int(values.sum())} ones, "
                        f"{read.format}, densified, from {file.path}", sha256=file.sha256)


def _has_header(rows: list[tuple[int, list[str]]]) -> bool:
    return not all(_number(cell) for cell in rows[0][1])


def _infer_layout(rows: list[tuple[int, list[str]]], path: str, key: str) -> tuple[str, str]:
    """``dense`` for a file of other than two columns; ``edges`` for two columns unless every value is 0 or 1,
    which reads both ways and is refused until ``format`` says which."""
    width = len(rows[0][1])
    if width != 2:
        return "dense", f"inferred: {width} column{'s' * (width > 1)}, an edge list has 2"
    body = [row for _, row in rows[_has_header(rows):]]
    if all(len(row) == 2 and all(_number(cell) and float(cell) in (0.0, 1.0) for cell in row) for row in body):
        users = len({float(row[0]) for row in body})
        permissions = len({float(row[1]) for row in body})
        raise ConfigError(f"{key}.format", f"{path} has two columns of 0/1 values: it reads as a dense {len(body)} x 2 "
                          f"matrix or as a user,permission edge list of ids 0 and 1 ({users} users x {permissions} "
                          "permissions)", "say which: format: dense or format: edges")
    return "edges", "inferred: two columns of ids, not all 0 or 1"


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _dense(rows: list[tuple[int, list[str]]], path: str, key: str) -> tuple[NDArray[np.float64], str, str]:
    header = _has_header(rows)
    body = rows[header:]
    numeric = [_number(row[0]) for _, row in body]
    named = not all(numeric)
    if named and any(numeric):  # a typo in an unnamed table would otherwise turn its first column into names
        line, row = body[numeric.index(False)] if numeric[0] else body[numeric.index(True)]
        raise ConfigError(f"{key}.path", f"{path} line {line}: the first column holds {row[0].strip()!r} where other "
                          "lines hold numbers: row names and 0/1 values cannot be told apart",
                          "give every row a name that is not a number in the first column, or no names")
    width = len(rows[0][1])
    if width - named < 1 or len(body) * (width - named) > MAX_MATRIX_CELLS:
        raise ConfigError(f"{key}.path", f"{path} holds {len(body)} rows x {width - named} 0/1 columns; a matrix "
                          f"needs one column at least and {MAX_MATRIX_CELLS} cells at most", "give a 0/1 table")
    values = np.empty((len(body), width - named))
    for i, (line, row) in enumerate(body):
        if len(row) != width:
            raise ConfigError(f"{key}.path", f"{path} line {line}: {len(row)} columns, the first row has {width}",
                              "give every row the same columns")
        try:
            values[i] = [float(cell) for cell in row[named:]]
        except ValueError:
            raise ConfigError(f"{key}.path", f"{path} line {line}: a value is not a number", "give 0/1 entries") from None
    bad = ~np.isin(values, (0.0, 1.0))
    if bad.any():
        i, column = (int(j) for j in np.argwhere(bad)[0])
        raise ConfigError(f"{key}.path", f"{path} line {body[i][0]}: the entry {values[i, column]:g} is not 0 or 1: a "
                          "Boolean method needs a 0/1 matrix", "give a 0/1 matrix (or use kind: image for grey levels)")
    return values, f"{values.shape[0]} rows x {values.shape[1]} columns, {int(values.sum())} ones, dense 0/1", ""


def _edge_list(rows: list[tuple[int, list[str]]], path: str, key: str) -> tuple[NDArray[np.float64], str, str]:
    width = len(rows[0][1])
    if width != 2:
        raise ConfigError(f"{key}.format", f"format edges reads two columns (user,permission), and the first row of "
                          f"{path} has {width}", "set format: dense for a 0/1 table, or give user,permission pairs")
    body = rows[_has_header(rows):]
    cells = [cell.strip() for _, row in body for cell in row]
    if all(len(row) == 2 for _, row in body) and all(len(cell) <= 18 and cell.isascii() and cell.isdigit()
                                                      for cell in cells):
        ids = np.fromiter(map(int, cells), dtype=np.int64, count=len(cells)).reshape(-1, 2)  # below 10^18 < 2^63
    else:  # the line that is wrong, and why
        ids = np.empty((len(body), 2), dtype=np.int64)
        for i, (line, row) in enumerate(body):
            if len(row) != 2:
                raise ConfigError(f"{key}.path", f"{path} line {line}: expected two non-negative integer ids, got "
                                  f"{row!r}", "give user,permission ids >= 0, one assignment per line")
            ids[i] = [_edge_id(cell, row, line, path, key) for cell in row]
    users, user_index = np.unique(ids[:, 0], return_inverse=True)
    permissions, permission_index = np.unique(ids[:, 1], return_inverse=True)
    if users.size * permissions.size > MAX_MATRIX_CELLS:
        raise ConfigError(f"{key}.path", f"{path} names {users.size} users and {permissions.size} permissions: "
                          f"{users.size * permissions.size} cells, above the {MAX_MATRIX_CELLS} held at most",
                          "give a smaller edge list")
    values = np.zeros((users.size, permissions.size))
    values[user_index, permission_index] = 1.0
    repeated = len(body) - int(values.sum())
    return (values, f"{users.size} users x {permissions.size} permissions, {int(values.sum())} ones, edge list",
            f"; {repeated} repeated assignments counted once" if repeated else "")


def _edge_id(cell: str, row: list[str], line: int, path: str, key: str) -> int:
    """One id of an edge list: decimal digits only (no sign, point, exponent or underscore), below 2^63."""
    text = cell.strip()
    if not _DIGITS.fullmatch(text):
        problem = "negative" if _DIGITS.fullmatch(text.removeprefix("-")) else "not an integer"
        raise ConfigError(f"{key}.path", f"{path} line {line}: the id {text!r} is {problem}; expected two non-negative "
                          f"integer ids (user,permission), got {row!r}", "give user,permission ids >= 0 (digits only), "
                          "one assignment per line; for a 0/1 table, set format: dense")
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(INT64_MAX)) or int(digits) > INT64_MAX:
        raise ConfigError(f"{key}.path", f"{path} line {line}: the id {text} exceeds the largest id read, 2^63 - 1 = "
                          f"{INT64_MAX}", "renumber the ids 0, 1, 2, ...")
    return int(digits)


def check_boolean_structure(values: NDArray[np.float64], what: str, key: str) -> None:
    """Refuse a 0/1 matrix whose rows are all the same: no 1 (nothing to factorise; Molloy's coverage of its ones is
    0/0), all ones, or one row repeated. Its Boolean and real ranks are at most 1, so every k >= 1 reconstructs it
    exactly and the transfer costs of Frank, Chehreghani & Buhmann (2011, eq. 3 with the Hamming cost of section 5)
    differ across k by the noise's draw alone."""
    ones = int(values.sum())
    if ones == 0:
        raise ConfigError(key, f"{what} holds no 1 ({values.shape[0]} x {values.shape[1]} zeros): there is nothing to "
                          "factorise", "give a 0/1 matrix with ones")
    if (values == values[0]).all():
        row = "all ones" if ones == values.size else f"the same {int(values[0].sum())} of {values.shape[1]} columns set"
        raise ConfigError(key, f"every row of {what} is the same ({row}): one role explains it exactly, every k >= 1 "
                          "reconstructs it, and no trial can tell ranks apart", "give a matrix whose rows (users) differ")


def most_frequent_columns(X: NDArray[np.float64], columns: int) -> NDArray[np.float64]:
    """The ``columns`` columns of ``X`` with the most ones (ties to the lower column), in their order; all for 0."""
    if columns == 0 or columns >= X.shape[1]:
        return X
    keep = np.sort(np.argsort(-X.sum(axis=0), kind="stable")[:columns])
    return X[:, keep]


def matrix_source(kind: str, clean: NDArray[np.float64] | None, params: Mapping[str, Any]) -> MatrixSource:
    """The trial recipe of a matrix dataset (its clean matrix, its noise and split; an image's ``peak`` is among
    its params, read from its format); ``clean`` None for the recipe a driver sends beside the scattered matrix."""
    return MatrixSource(clean=clean, kind=kind, noise=float(params["noise"]), patch=int(params.get("patch", 8)),
                        placement=str(params.get("placement", "tiling")), train_fraction=float(params["train_fraction"]),
                        peak=float(params.get("peak", 255.0)))


def matrix_dataset(entry: Mapping[str, Any], key: str, kind: str, n_raw: list[int | str],
                   path: str) -> tuple[NDArray[np.float64], dict[str, Any], tuple[int, ...], int, str, dict[str, Any]]:
    """Read and check a matrix dataset: its clean matrix, parameters, sample sizes, features, what was read, identity."""
    params = matrix_params(kind, entry.get("params") or {}, key)
    if kind == "image":
        clean, read, identity = _image_dataset(key, path, params)
    else:
        clean, read, identity = _boolean_dataset(entry, key, path, params)
    source = matrix_source(kind, clean, params)
    rows = source.rows
    n = tuple(rows if value == "all" else int(value) for value in n_raw)
    for j, value in enumerate(n):
        if value > rows and not (kind == "image" and params["placement"] == "random"):
            raise ConfigError(f"{key}.n[{j}]", f"{value} exceeds the {rows} rows ({'tiles' if kind == 'image' else 'users'}) "
                              f"of {path}", f"use n <= {rows} or 'all'")
        if value < 2 or training_rows(value, params["train_fraction"]) < 1:
            raise ConfigError(f"{key}.n[{j}]", f"{value} rows cannot be split into training and test rows",
                              "use n >= 2")
    return clean, params, n, source.features, read, {"kind": kind, **identity, "params": params}


def _image_dataset(key: str, path: str, params: dict[str, Any]) -> tuple[NDArray[np.float64], str, dict[str, Any]]:
    """An image's grey levels, checked against its patch; ``params`` gains the format's ``peak``."""
    image = load_image(path, f"{key}.path")
    clean, patch = image.pixels, params["patch"]
    height, width = clean.shape
    if height < patch or width < patch:
        raise ConfigError(f"{key}.params.patch", f"the image ({height} x {width}) is smaller than a patch of "
                          f"{patch} x {patch}", "use a smaller patch or a larger image")
    if params["placement"] == "tiling" and (height % patch or width % patch):
        raise ConfigError(f"{key}.params.patch", f"patch {patch} does not divide the image's sides ({height} x {width}) "
                          "for the non-overlapping tiling", "use a patch that divides both, crop the image, or "
                          "placement: random")
    check_image_structure(clean, patch, params["placement"], path, f"{key}.path")
    params["peak"] = image.peak
    return clean, image.read, {"sha256": image.sha256}


def _boolean_dataset(entry: Mapping[str, Any], key: str, path: str,
                     params: dict[str, Any]) -> tuple[NDArray[np.float64], str, dict[str, Any]]:
    """A 0/1 matrix in its layout, its most frequent columns when asked, refused when its rows cannot differ."""
    matrix = load_boolean_matrix(path, key, layout_of(entry, key))
    clean, read = matrix.values, matrix.read
    check_boolean_structure(clean, path, f"{key}.path")
    if params["columns"]:
        clean = most_frequent_columns(clean, params["columns"])
        read += f"; its {clean.shape[1]} most frequent columns kept ({int(clean.sum())} ones)"
        check_boolean_structure(clean, f"the {clean.shape[1]} most frequent columns of {path}", f"{key}.params.columns")
    if params["noise"] > 0:
        ones, zeros = int(clean.sum()), int(clean.size - clean.sum())
        flips = round(params["noise"] * ones)
        if flips > min(ones, zeros):
            raise ConfigError(f"{key}.params.noise", f"noise {params['noise']:g} flips {flips} ones and as many zeros, "
                              f"but the matrix has {ones} ones and {zeros} zeros", "use a smaller noise rate")
    return clean, read, {"sha256": matrix.sha256, **matrix.reading}


def check_ranks(datasets: tuple[Any, ...], method: Any, i: int, ks: tuple[int, ...]) -> None:
    """The largest rank fits some dataset (at most its features and the training rows of its largest n); ranks
    above what one dataset allows are its infeasible cells, recorded as such, as k-means records a k its halves
    cannot hold. (That a matrix model runs on matrix data, a Boolean one on 0/1 data, the PSNR on images, is
    :func:`ordercube.tasks.capabilities.why_not`'s.)"""
    allows = {dataset.name: min(dataset.n_features, training_rows(max(dataset.n), dataset.params["train_fraction"]))
              for dataset in datasets}
    if max(ks) > max(allows.values()):
        name = max(allows, key=allows.__getitem__)
        raise ConfigError("k", f"rank k = {max(ks)} exceeds what every dataset allows: the most is {allows[name]}, "
                          f"for {name!r} (min of its features and the training rows of its largest n)",
                          f"use k <= {allows[name]}")
