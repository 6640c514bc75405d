"""Prediction Strength (Tibshirani & Walther 2005), as configured in seed 000 section 4.

The test half is clustered (``labels_second``) and also labelled by the training half's solution
through the method's predictor (nearest centroid for k-means). For each test cluster A_j of size n_j,
the share of its pairs that the training solution also puts together:

    ps_j = 1 / (n_j (n_j - 1)) * sum over i != i' in A_j of 1{predicted(i) = predicted(i')},

and ps(k) = min_j ps_j. With m_jc points of A_j predicted into cluster c, the pair count is
sum_c m_jc (m_jc - 1), read off the contingency table. Decision: the largest k with ps(k) at least
the threshold (0.9 in seed 000; Tibshirani & Walther suggest 0.8-0.9). ps(1) = 1, so k = 1 qualifies
when the cube holds it.
"""

from __future__ import annotations

import numpy as np

from tasks.criteria.base import Criterion, Decision, TrialFits


def prediction_strength(fits: TrialFits) -> float:
    """ps(k) of one split; test clusters with fewer than two points hold no pairs and are skipped."""
    test, predicted, k = fits.labels_second, fits.second_predicted_from_first, fits.k
    table = np.bincount(test * k + predicted, minlength=k * k).reshape(k, k).astype(np.float64)
    sizes = table.sum(axis=1)
    paired = sizes >= 2
    if not paired.any():
        return float("nan")
    together = (table * (table - 1)).sum(axis=1)
    return float((together[paired] / (sizes[paired] * (sizes[paired] - 1))).min())


PREDICTION_STRENGTH = Criterion(
    name="prediction_strength",
    evaluate=prediction_strength,
    min_k=1,
    needs_evaluation_sample=False,
    description="Tibshirani & Walther's prediction strength: co-membership kept by the training solution",
    decision=Decision(rule="largest_above", threshold=0.9),
)
