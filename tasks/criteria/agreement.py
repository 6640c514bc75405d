"""Agreement with known classes: a diagnostic, not a model-order criterion (Lange et al. 2002, Sec. 4; Roth et al. 2002, Sec. 3).

The trial's solution is the first half's clustering extended to the second half by the method's
predictor; over the trial's whole sample it is matched to the known classes with the Hungarian method
(k clusters to c classes, the unmatched of the larger side count as errors) and the share of points
whose matched label equals their class is reported — Lange et al. (2002), Sec. 4: "91.6% of the samples are correctly
classified (the Hungarian method is used to map the clusters to the ground-truth)". NaN when the
dataset has no labels.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.criteria.base import Criterion, Decision, TrialFits
from ordercube.tasks.matching import matched_disagreement


def matched_accuracy(labels: NDArray[np.int64], truth: NDArray[np.int64]) -> float:
    """Share of points whose cluster, mapped one-to-one onto the classes by the Hungarian method, is their class.

    Clusters and classes are renumbered 0.. and matched on a square table as large as the larger side
    (its empty rows or columns take the unmatched), so this is one minus :func:`matched_disagreement`.
    """
    _, clusters = np.unique(labels, return_inverse=True)
    _, classes = np.unique(truth, return_inverse=True)
    size = int(max(clusters.max(), classes.max())) + 1
    return 1.0 - matched_disagreement(clusters, classes, size)


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
