"""Loading file datasets: CSV or NPY (never pickled), an optional labels file, preprocessing."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from pipeline.errors import ConfigError
from tasks.preprocess import apply_steps


@dataclass(frozen=True)
class LoadedData:
    """A file dataset after preprocessing: the objects to cluster and, if given, their labels."""

    X: NDArray[np.float64]
    labels: NDArray[np.int64] | None
    sha256: str


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_matrix(path: Path, key: str) -> NDArray[np.float64]:
    """A numeric matrix from ``.npy`` (without pickle) or ``.csv`` (a header row; a first column of
    row names is recognised when it is not numeric). Empty cells become NaN."""
    if path.suffix == ".npy":
        try:
            X = np.load(path, allow_pickle=False)
        except ValueError as error:
            raise ConfigError(key, f"{path} is not a plain numeric .npy array ({error})",
                              "save it with numpy.save from a numeric array") from None
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2 or not np.issubdtype(X.dtype, np.number):
            raise ConfigError(key, f"{path} holds a {X.ndim}-D {X.dtype} array", "expected a 2-D numeric array")
        return X.astype(np.float64)
    if path.suffix != ".csv":
        raise ConfigError(key, f"unsupported file type {path.suffix!r} for {path}", "use a .csv or .npy file")
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as error:
        raise ConfigError(key, f"cannot parse {path} as CSV ({error})", "give a comma-separated file") from None
    if frame.shape[1] > 1 and not pd.api.types.is_numeric_dtype(frame.iloc[:, 0]):
        frame = frame.iloc[:, 1:]
    for column in frame.columns:
        converted = pd.to_numeric(frame[column], errors="coerce")
        bad = frame[column].notna() & converted.isna()
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise ConfigError(key, f"{path} has a non-numeric cell {frame[column].iloc[row]!r} in column "
                              f"{column!r}, data row {row + 1}", "fix the file or drop that column")
        frame[column] = converted
    return frame.to_numpy(dtype=np.float64)


def read_labels(path: Path, column: str | None, key: str) -> NDArray[np.int64]:
    """Integer codes of a label column (the last column when ``column`` is None)."""
    frame = pd.read_csv(path) if path.suffix == ".csv" else None
    if frame is None:
        return np.unique(np.load(path, allow_pickle=False), return_inverse=True)[1]
    name = column if column is not None else frame.columns[-1]
    if name not in frame.columns:
        raise ConfigError(f"{key}.column", f"no column {name!r} in {path}", f"use one of {list(frame.columns)}")
    values = frame[name]
    if values.isna().any():
        raise ConfigError(key, f"{path} column {name!r} has missing labels", "give every row a label")
    return np.unique(values.astype(str).to_numpy(), return_inverse=True)[1]


def load_file_dataset(spec: Any, key: str) -> LoadedData:
    """Read, check and preprocess the file dataset described by ``spec`` (a ``DatasetSpec``)."""
    path = Path(spec.path)
    if not path.is_file():
        raise ConfigError(f"{key}.path", f"file {str(path)!r} does not exist", "give the path of a .csv or .npy file "
                          "(relative paths are read from the config file's folder)")
    X = read_matrix(path, f"{key}.path")
    labels = None
    if spec.labels_path is not None:
        labels_path = Path(spec.labels_path)
        if not labels_path.is_file():
            raise ConfigError(f"{key}.labels.path", f"file {str(labels_path)!r} does not exist",
                              "give the labels file's path or remove the labels entry")
        labels = read_labels(labels_path, spec.labels_column, f"{key}.labels")
        if labels.shape[0] != X.shape[0]:
            raise ConfigError(f"{key}.labels", f"{labels_path} has {labels.shape[0]} labels but {path} has "
                              f"{X.shape[0]} rows", "give one label per data row")
    try:
        X, rows = apply_steps(X, spec.preprocess)
    except ValueError as error:
        raise ConfigError(f"{key}.preprocess", str(error)) from None
    if np.isnan(X).any():
        raise ConfigError(f"{key}.path", f"{path} has {int(np.isnan(X).sum())} missing or NaN values after "
                          "preprocessing", "add a preprocess step '- impute: {strategy: row_mean}' or '- drop_missing: {}'")
    if labels is not None:
        if rows is None:
            raise ConfigError(f"{key}.labels", "labels describe the file's rows, but a transpose step "
                              "clusters its columns", "remove the labels entry or the transpose step")
        labels = np.unique(labels[rows], return_inverse=True)[1]
    digest = file_digest(path) + (file_digest(Path(spec.labels_path)) if spec.labels_path else "")
    return LoadedData(X=np.ascontiguousarray(X), labels=labels, sha256=digest)
