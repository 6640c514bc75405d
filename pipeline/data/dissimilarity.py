"""Datasets of dissimilarities (``kind: distances``): a square CSV of the dissimilarities between objects, as
fpc's ``nselectboot(distances=TRUE)`` takes them, and the checks that keep them apart from points.

The file is read as any data file (a header row, row names recognised as usual, labels from ``labels:``), then
refused, naming the cell and the fix, unless it is a dissimilarity matrix: square, no negative entry, zeros on
the diagonal, symmetric (to 1e-9 of its largest entry). Each trial draws n objects and halves them as object
sets, each half with its own block and its dissimilarities to the other half
(:func:`ordercube.tasks.datasets.sources.node_halves`). Methods: the algorithms with a variant on dissimilarities
(``agglomerative`` with average, complete or single linkage, ``path_based`` and ``spectral``:
:mod:`ordercube.tasks.algorithms.dissimilarity`), with the ``nearest_object`` predictor, and criteria that read the halves'
labels only (:func:`ordercube.tasks.capabilities.why_not` says which fit).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ordercube.pipeline.errors import ConfigError

SYMMETRY_TOLERANCE = 1e-9  # relative to the largest dissimilarity
OBJECTS = "dissimilarity"


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
