"""Agreement with known classes: a diagnostic, not a model-order criterion (seed 000 section 4, seed 002).

The trial's solution is the first half's clustering extended to the second half by the method's
predictor; over the trial's whole sample it is matched to the known classes with the Hungarian method
(k clusters to c classes, the unmatched of the larger side count as errors) and the share of points
whose matched label equals their class is reported — seed 000's "91.6% of the samples are correctly
classified (the Hungarian method is used to map the clusters to the ground-truth)". NaN when the
dataset has no labels.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linear_sum_assignment

from tasks.criteria.base import Criterion, Decision, TrialFits


def matched_accuracy(labels: NDArray[np.int64], truth: NDArray[np.int64]) -> float:
    """Share of points whose cluster, mapped one-to-one onto the classes by the Hungarian method, is their class."""
    _, clusters = np.unique(labels, return_inverse=True)
    _, classes = np.unique(truth, return_inverse=True)
    rows, cols = int(clusters.max()) + 1, int(classes.max()) + 1
    table = np.bincount(clusters * cols + classes, minlength=rows * cols).reshape(rows, cols)
    matched_rows, matched_cols = linear_sum_assignment(table, maximize=True)
    return float(table[matched_rows, matched_cols].sum() / labels.size)


def agreement(fits: TrialFits) -> float:
    if fits.truth is None:
        return float("nan")
    solution = np.concatenate([fits.labels_first, fits.second_predicted_from_first])
    return matched_accuracy(solution, fits.truth)


AGREEMENT = Criterion(
    name="agreement",
    min_k=1,
    evaluate=agreement,
    description="Hungarian-matched accuracy of the trial's solution against the dataset's known classes",
    decision=Decision(rule="none"),
)
