"""Prediction Strength (Tibshirani & Walther 2005), as configured in Lange et al. (2002), Sec. 4.

The test half is clustered (``labels_second``) and also labelled by the training half's solution
through the nearest-centroid rule, whatever the method's own predictor (Tibshirani & Walther's
definition; Lange et al. 2002, Sec. 2: "based on using nearest centroid predictors", which is why it cannot follow
non-convex clusters such as the rings). For each test cluster A_j of size n_j,
the share of its pairs that the training solution also puts together:

    ps_j = 1 / (n_j (n_j - 1)) * sum over i != i' in A_j of 1{predicted(i) = predicted(i')},

and ps(k) = min_j ps_j. With m_jc points of A_j predicted into cluster c, the pair count is
sum_c m_jc (m_jc - 1), read off the contingency table. Decision: the largest k with ps(k) at least
the threshold (0.9 in Lange et al. 2002; Tibshirani & Walther suggest 0.8-0.9). ps(1) = 1, so k = 1 qualifies
when the cube holds it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.criteria.base import Criterion, Decision, TrialFits
from ordercube.tasks.matching import confusion
from ordercube.tasks.predictors import nearest_centroid


def prediction_strength(fits: TrialFits) -> float:
    """ps(k) of one split, the training half's solution extended by nearest centroids."""
    predicted = nearest_centroid(fits.first, fits.labels_first, fits.k, fits.second)
    return strength_of(fits.labels_second, predicted, fits.k)


def strength_of(test: NDArray[np.int64], predicted: NDArray[np.int64], k: int) -> float:
    """min over test clusters of the share of their pairs predicted together; clusters of one point skipped."""
    table = confusion(test, predicted, k).astype(np.float64)
    sizes = table.sum(axis=1)
    paired = sizes >= 2
    if not paired.any():
        return float("nan")
    together = (table * (table - 1)).sum(axis=1)
    return float((together[paired] / (sizes[paired] * (sizes[paired] - 1))).min())


PREDICTION_STRENGTH = Criterion(
    name="prediction_strength", citation="Tibshirani & Walther 2005",
    evaluate=prediction_strength,
    min_k=1,
    needs_evaluation_sample=False,
    description="Tibshirani & Walther's prediction strength: co-membership kept by the training solution",
    decision=Decision(rule="largest_above", threshold=0.9, threshold_range=(0.0, 1.0)),
    needs_coordinates=True,  # it predicts by nearest centroids, whatever the method's predictor
    label="prediction strength ps(k)",
    no_choice="no k of the grid has a mean prediction strength at or above the threshold; Tibshirani & Walther's "
              "rule (the largest k above it) then answers k = 1, since ps(1) = 1 by definition: start the grid at "
              "k = 1 to have it chosen and printed",
)
