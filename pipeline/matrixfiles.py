"""Matrix datasets for matrix models (seed 004 §2.4-2.6): ``kind: image`` and ``kind: boolean_matrix``.

``image``: a grey image from a PNG (8- or 16-bit grey; colour is refused, not converted) or a CSV of grey
levels (no header; 0-255). ``params``: ``noise`` (the sd of the Gaussian noise a trial adds to the pixels,
on the image's own scale), ``patch`` (8), ``placement`` (``tiling``: the non-overlapping tiles, ``random``:
overlapping patches at random corners), ``train_fraction`` (0.5: the halves).

``boolean_matrix``: a 0/1 matrix from a CSV, either dense (a header row; a first column of row names when it
is not numeric) or an edge list of exactly two columns (``user,permission``: non-negative integer ids, a header
row; the rows are the users that appear, the columns the permissions that appear, both in increasing id).
``params``: ``noise`` (the flip rate ν: round(ν‖X*‖₁) ones to 0 and as many zeros to 1 per trial), ``columns``
(keep the most frequent columns, ties to the lower column; 0: all), ``train_fraction``.

n counts the rows of a trial (patches, users); ``all`` (the default) is every tile, or every row. Everything
that would be misread is refused with the file and the fix, and what was read is printed.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pipeline.errors import ConfigError
from tasks.datasets.matrices import MATRIX_KINDS, PLACEMENTS, MatrixSource, training_rows
from tasks.params import ParamError, check_params, choice, integer, number, show

IMAGE_PARAMS = {"noise": 0.0, "patch": 8, "placement": "tiling", "train_fraction": 0.5}
BOOLEAN_PARAMS = {"noise": 0.0, "columns": 0, "train_fraction": 0.5}
RANGES = {"noise": number(0.0), "patch": integer(1, 4096), "placement": choice(*PLACEMENTS),
          "train_fraction": number(0.0, 1.0, low_open=True, high_open=True), "columns": integer(0, 10_000_000)}


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


def _sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_image(path: str, key: str) -> tuple[NDArray[np.float64], float, str]:
    """The grey levels of the image at ``path`` (PNG or CSV), its format's peak level, and what was read."""
    if not Path(path).is_file():
        raise ConfigError(key, f"{path} does not exist", "give the path of a grey PNG or a CSV of grey levels")
    if path.lower().endswith(".png"):
        from PIL import Image, UnidentifiedImageError  # matplotlib's dependency

        try:
            with Image.open(path) as image:
                mode = image.mode
                pixels = np.asarray(image)
        except (UnidentifiedImageError, OSError) as error:
            raise ConfigError(key, f"{path} is not a readable PNG ({error})", "give a grey PNG or a CSV") from None
        if mode not in ("L", "I;16", "I;16B", "I"):
            raise ConfigError(key, f"{path} is a {mode} image, not 2-D grey levels",
                              "convert it to grey first (e.g. PIL: Image.open(path).convert('L').save(...))")
        peak = 255.0 if mode == "L" else 65535.0
        image = pixels.astype(np.float64)
    else:
        try:
            image = np.loadtxt(path, delimiter=",", ndmin=2, dtype=np.float64)
        except ValueError as error:
            raise ConfigError(key, f"{path} is not a CSV of numbers ({str(error).splitlines()[0]})",
                              "give grey levels 0-255, comma-separated, one image row per line, no header") from None
        if not np.isfinite(image).all() or image.min() < 0 or image.max() > 255:
            raise ConfigError(key, f"{path} holds values outside 0-255 (min {np.nanmin(image):g}, max {np.nanmax(image):g})",
                              "give 8-bit grey levels 0-255 (or a PNG)")
        peak = 255.0
    if image.ndim != 2:
        raise ConfigError(key, f"{path} is {image.ndim}-D, not a 2-D grey image", "give one grey image")
    return image, peak, f"{image.shape[0]} x {image.shape[1]} grey image (peak {peak:g}) from {path}"


def load_boolean_matrix(path: str, key: str) -> tuple[NDArray[np.float64], str]:
    """The 0/1 matrix at ``path`` (dense CSV or a two-column edge list) and what was read."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = [row for row in csv.reader(handle) if any(cell.strip() for cell in row)]
    except FileNotFoundError:
        raise ConfigError(key, f"{path} does not exist", "give the path of a 0/1 CSV matrix or edge list") from None
    except (UnicodeDecodeError, csv.Error) as error:
        raise ConfigError(key, f"{path} is not a readable CSV text file ({error})", "give a CSV file") from None
    if len(rows) < 2:
        raise ConfigError(key, f"{path} holds no data rows", "give a header row, then one row per user (or per edge)")
    if len(rows[0]) == 2:
        return _edge_list(rows, path, key)
    return _dense(rows, path, key)


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _dense(rows: list[list[str]], path: str, key: str) -> tuple[NDArray[np.float64], str]:
    header = not all(_number(cell) for cell in rows[0])
    body = rows[1:] if header else rows
    named = not all(_number(row[0]) for row in body)
    width = len(rows[0])
    values = np.empty((len(body), width - named))
    for line, row in enumerate(body, start=1 + header):
        if len(row) != width:
            raise ConfigError(key, f"{path} line {line}: {len(row)} columns, the first row has {width}",
                              "give every row the same columns")
        try:
            values[line - 1 - header] = [float(cell) for cell in row[named:]]
        except ValueError:
            raise ConfigError(key, f"{path} line {line}: a value is not a number", "give 0/1 entries") from None
    bad = ~np.isin(values, (0.0, 1.0))
    if bad.any():
        line, column = (int(i) for i in np.argwhere(bad)[0])
        raise ConfigError(key, f"{path} line {line + 1 + header}: the entry {values[line, column]:g} is not 0 or 1: "
                          "a Boolean method needs a 0/1 matrix", "give a 0/1 matrix (or use kind: image for grey levels)")
    return values, (f"{values.shape[0]} rows x {values.shape[1]} columns, {int(values.sum())} ones, dense 0/1 "
                    f"from {path}")


def _edge_list(rows: list[list[str]], path: str, key: str) -> tuple[NDArray[np.float64], str]:
    body = rows[1:] if not all(_number(cell) for cell in rows[0]) else rows
    ids = np.empty((len(body), 2), dtype=np.int64)
    for i, row in enumerate(body):
        line = i + 1 + (len(rows) - len(body))
        try:
            ids[i] = [int(cell) for cell in row[:2]]
        except ValueError:
            raise ConfigError(key, f"{path} line {line}: expected two integer ids (user,permission), got {row!r}",
                              "give non-negative integer ids") from None
        if len(row) != 2 or ids[i].min() < 0:
            raise ConfigError(key, f"{path} line {line}: expected two non-negative integer ids, got {row!r}",
                              "give user,permission ids >= 0, one assignment per line")
    users, user_index = np.unique(ids[:, 0], return_inverse=True)
    permissions, permission_index = np.unique(ids[:, 1], return_inverse=True)
    values = np.zeros((users.size, permissions.size))
    values[user_index, permission_index] = 1.0
    repeated = len(body) - int(values.sum())
    return values, (f"{users.size} users x {permissions.size} permissions, {int(values.sum())} ones, edge list from "
                    f"{path}" + (f" ({repeated} repeated assignments counted once)" if repeated else ""))


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
        clean, peak, read = load_image(path, f"{key}.path")
        patch = params["patch"]
        height, width = clean.shape
        if height < patch or width < patch:
            raise ConfigError(f"{key}.params.patch", f"the image ({height} x {width}) is smaller than a patch of "
                              f"{patch} x {patch}", "use a smaller patch or a larger image")
        if params["placement"] == "tiling" and (height % patch or width % patch):
            raise ConfigError(f"{key}.params.patch", f"patch {patch} does not divide the image's sides ({height} x {width}) "
                              "for the non-overlapping tiling", "use a patch that divides both, crop the image, or "
                              "placement: random")
        params["peak"] = peak
    else:
        clean, read = load_boolean_matrix(path, f"{key}.path")
        if params["columns"]:
            clean = most_frequent_columns(clean, params["columns"])
            read += f"; its {clean.shape[1]} most frequent columns kept ({int(clean.sum())} ones)"
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
    if kind == "boolean_matrix" and params["noise"] > 0:
        ones, zeros = int(clean.sum()), int(clean.size - clean.sum())
        flips = round(params["noise"] * ones)
        if flips > min(ones, zeros):
            raise ConfigError(f"{key}.params.noise", f"noise {params['noise']:g} flips {flips} ones and as many zeros, "
                              f"but the matrix has {ones} ones and {zeros} zeros", "use a smaller noise rate")
    identity = {"kind": kind, "sha256": _sha256(path), "params": params}
    return clean, params, n, source.features, read, identity


def check_matrices(datasets: tuple[Any, ...], methods: tuple[Any, ...], ks: tuple[int, ...]) -> None:
    """Matrix models run on matrix datasets only (Boolean models on 0/1 data), the PSNR on images, and the largest
    rank fits some dataset (at most its features and the training rows of its largest n); ranks above what one
    dataset allows are its infeasible cells, recorded as such, as k-means records a k its halves cannot hold."""
    from tasks.algorithms import ALGORITHMS, get_algorithm

    models = sorted(name for name, algorithm in ALGORITHMS.items() if algorithm.orders is not None)
    for i, method in enumerate(methods):
        algorithm = get_algorithm(method.algorithm)
        for dataset in datasets:
            matrix_data = dataset.kind in MATRIX_KINDS
            if (algorithm.orders is not None) != matrix_data:
                raise ConfigError(f"methods[{i}].algorithm", f"dataset {dataset.name!r} is "
                                  f"{'a matrix (' + dataset.kind + ')' if matrix_data else 'not a matrix dataset'}, and "
                                  f"{method.algorithm!r} is {'a matrix model' if algorithm.orders else 'not a matrix model'}",
                                  f"use a matrix model ({', '.join(models)}) with kind image or boolean_matrix, other "
                                  "algorithms with other data; every method runs on every dataset: a config per kind")
            if algorithm.orders is None:
                continue
            if algorithm.matrix == "boolean" and dataset.kind != "boolean_matrix":
                raise ConfigError(f"methods[{i}].algorithm", f"{method.algorithm!r} factorises 0/1 matrices, and dataset "
                                  f"{dataset.name!r} is an image of grey levels", "use truncated_svd for images, or a "
                                  "boolean_matrix dataset")
            if "psnr" in method.criteria and dataset.kind != "image":
                raise ConfigError(f"methods[{i}].criteria", f"psnr compares with a clean image, and dataset "
                                  f"{dataset.name!r} is a {dataset.kind}", "use denoise_error for Boolean matrices")
        if algorithm.orders is None:
            continue
        allows = {dataset.name: min(dataset.n_features, training_rows(max(dataset.n), dataset.params["train_fraction"]))
                  for dataset in datasets}
        if max(ks) > max(allows.values()):
            name = max(allows, key=allows.__getitem__)
            raise ConfigError("k", f"rank k = {max(ks)} exceeds what every dataset allows: the most is {allows[name]}, "
                              f"for {name!r} (min of its features and the training rows of its largest n)",
                              f"use k <= {allows[name]}")
