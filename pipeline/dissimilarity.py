"""Datasets of dissimilarities (``kind: distances``): a square CSV of the dissimilarities between objects, as
fpc's ``nselectboot(distances=TRUE)`` takes them, and the checks that keep them apart from points.

The file is read as any data file (a header row, row names recognised as usual, labels from ``labels:``), then
refused, naming the cell and the fix, unless it is a dissimilarity matrix: square, no negative entry, zeros on
the diagonal, symmetric (to 1e-9 of its largest entry). Each trial draws n objects and halves them as object
sets, each half with its own block and its dissimilarities to the other half
(:func:`tasks.datasets.sources.node_halves`). Methods: ``agglomerative`` (average, complete or single linkage),
``path_based`` and ``spectral`` (:mod:`tasks.algorithms.dissimilarity`), with the ``nearest_object``
predictor, and criteria that read the halves' labels only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.errors import ConfigError

SYMMETRY_TOLERANCE = 1e-9  # relative to the largest dissimilarity
OBJECTS = "dissimilarity"


def distances_dataset(entry: Mapping[str, Any], key: str, name: str, n_raw: list[int | str], base: Path) -> Any:
    """The ``DatasetSpec`` of a distance-matrix file."""
    from pipeline.dataspec import _table_dataset

    for extra in ("preprocess", "columns", "exclude", "params"):
        if extra in entry:
            raise ConfigError(f"{key}.{extra}", f"a distances dataset takes no '{extra}': its columns are its objects",
                              "remove it (prepare the matrix before, or give the points as kind: file)")
    spec = _table_dataset({k: v for k, v in entry.items() if k != "kind"}, key, name, "file", n_raw, base, OBJECTS)
    check_dissimilarities(spec.data, f"{key}.path", str(spec.path))
    size = spec.data.shape[0]
    read = spec.read.replace(f"{size} rows x {size} features", f"{size} x {size} dissimilarities", 1)
    return replace(spec, kind="distances", objects=OBJECTS, n_features=size, read=read,
                   identity={**spec.identity, "kind": "distances"})


def check_dissimilarities(D: Any, key: str, source: str) -> None:
    """Refuse what is not a dissimilarity matrix, naming the first offending cell (rows and columns from 1)."""
    rows, columns = D.shape
    if rows != columns:
        raise ConfigError(key, f"{source} is {rows} rows x {columns} columns of numbers; a distance matrix is square",
                          "give one row and one column per object (row names in a first column are recognised)")
    negative = np.argwhere(D < 0)
    if negative.size:
        i, j = negative[0]
        raise ConfigError(key, f"{source} has the negative dissimilarity {D[i, j]:g} at row {i + 1}, column {j + 1}",
                          "dissimilarities are >= 0: give distances, not similarities or correlations")
    diagonal = np.flatnonzero(np.diag(D) != 0)
    if diagonal.size:
        i = int(diagonal[0])
        raise ConfigError(key, f"{source} has {D[i, i]:g} on its diagonal at row {i + 1}: an object's dissimilarity "
                          "to itself is 0", "set the diagonal to 0 (or check that rows and columns list the same objects)")
    tolerance = SYMMETRY_TOLERANCE * max(float(D.max()), 1e-300)
    asymmetric = np.argwhere(np.abs(D - D.T) > tolerance)
    if asymmetric.size:
        i, j = asymmetric[0]
        raise ConfigError(key, f"{source} is not symmetric: row {i + 1}, column {j + 1} is {D[i, j]:g} but row {j + 1}, "
                          f"column {i + 1} is {D[j, i]:g}", "give a symmetric matrix (e.g. (D + D.T) / 2)")


def check_methods(datasets: tuple[Any, ...], methods: tuple[Any, ...]) -> None:
    """Every method of a config with a distances dataset takes dissimilarities: its algorithm, its predictor, its
    parameters and its criteria (the halves' labels only)."""
    from tasks.algorithms import ALGORITHMS, get_algorithm
    from tasks.criteria import CRITERIA, get_criterion
    from tasks.predictors import DISSIMILARITY_PREDICTORS

    dataset = next(d for d in datasets if d.objects == OBJECTS)
    if any(d.objects != OBJECTS for d in datasets):
        other = next(d for d in datasets if d.objects != OBJECTS)
        raise ConfigError("datasets", f"{dataset.name!r} is a distance matrix and {other.name!r} is not: every method "
                          "runs on every dataset, and none runs on both", "put them in separate configs")
    takers = sorted(name for name, algorithm in ALGORITHMS.items() if algorithm.dissimilarity_many is not None)
    for i, method in enumerate(methods):
        algorithm = get_algorithm(method.algorithm)
        if algorithm.dissimilarity_many is None:
            raise ConfigError(f"methods[{i}].algorithm", f"dataset {dataset.name!r} gives dissimilarities, and "
                              f"{method.algorithm!r} clusters coordinates", f"use one of {takers}")
        if method.predictor not in DISSIMILARITY_PREDICTORS:
            raise ConfigError(f"methods[{i}].predictor", f"{method.predictor!r} reads coordinates, and dataset "
                              f"{dataset.name!r} gives dissimilarities", f"use predictor {DISSIMILARITY_PREDICTORS[0]}")
        params = {**algorithm.defaults, **method.params}
        for parameter, allowed in algorithm.dissimilarity_ranges.items():
            if not allowed.accepts(params[parameter]):
                raise ConfigError(f"methods[{i}].params.{parameter}", f"{params[parameter]!r} (given, or the default) "
                                  "is not defined on dissimilarities", f"give {parameter}: {allowed.describe()}")
        for j, name in enumerate(method.criteria):
            if not get_criterion(name).reads_halves_only():
                readers = sorted(other for other, criterion in CRITERIA.items() if criterion.reads_halves_only())
                raise ConfigError(f"methods[{i}].criteria[{j}]", f"{name} reads points (coordinates, a whole sample, "
                                  "reference sets or an evaluation sample), not dissimilarities", f"use {', '.join(readers)}")

