"""Clest (Dudoit & Fridlyand 2002), as configured in Lange et al. (2002), Sec. 4.

Lange et al. (2002), Sec. 2: "a linear discriminant analysis classifier, the Fowlkes-Mallows index for solution
comparison and the baseline distribution of the Gap Statistic"; B = 20 splits and B0 = 20 reference
sets. On the cube's shared resamples:

- observed: each trial's halves are clustered (the cube's shared fits); an LDA classifier trained on
  the first half's labels predicts the second half; the statistic is the Fowlkes-Mallows index between
  that prediction and the second half's own clustering (``clest``). t_k = median over trials.
- null: each trial draws one reference set from the Gap statistic's baseline (uniform over the
  sample's bounding box or its principal-axes box; independent of the Gap's B sets), splits it
  ``splits`` times into halves and computes the same index; its median over the splits is that reference
  set's t0_k (``clest_null``), so the trials give B0 = resamples reference sets.
- decision (Dudoit & Fridlyand, step 4): d_k = t_k - mean_b t0_kb, p_k = #{b: t0_kb >= t_k} / B0;
  K = {k >= 2: p_k <= p_max and d_k >= d_min}; k̂ = argmax over K of d_k, or 1 when K is empty
  (p_max = d_min = 0.05 as in their paper).

Difference from Dudoit & Fridlyand: their learning and test sets hold 2/3 and 1/3 of the points; the
cube's splits are the stability's halves (the same splits for every criterion), as in Lange et al. (2002).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.criteria.base import Criterion, Decision, TrialSample
from ordercube.tasks.criteria.gap import MAX_REFERENCES, REFERENCES, reference_sample
from ordercube.tasks.matching import confusion
from ordercube.tasks.params import choice, integer
from ordercube.tasks.predictors import linear_discriminant

def fowlkes_mallows(a: NDArray[np.int64], b: NDArray[np.int64]) -> float:
    """Fowlkes-Mallows index: pairs together in both / sqrt(pairs together in a * pairs together in b).

    From the contingency table (n_ij): (sum n_ij^2 - n) / sqrt((sum a_i^2 - n)(sum b_j^2 - n)); 1 when
    neither partition puts any pair together (both all singletons), 0 when only one does.
    """
    n = a.size
    _, a_index = np.unique(a, return_inverse=True)
    _, b_index = np.unique(b, return_inverse=True)
    table = confusion(a_index, b_index, int(max(a_index.max(), b_index.max())) + 1).astype(np.float64)
    together = (table**2).sum() - n
    in_a = (table.sum(axis=1) ** 2).sum() - n
    in_b = (table.sum(axis=0) ** 2).sum() - n
    if in_a == 0 or in_b == 0:
        return 1.0 if in_a == in_b else 0.0
    return float(together / np.sqrt(in_a * in_b))


def _transfer_index(first: NDArray[np.float64], labels_first: NDArray[np.int64], second: NDArray[np.float64],
                    labels_second: NDArray[np.int64], k: int) -> float:
    return fowlkes_mallows(linear_discriminant(first, labels_first, k, second), labels_second)


def clest(sample: TrialSample, *, splits: int = 20, reference: str = "uniform") -> dict[str, dict[int, float]]:
    """The trial's observed index and its reference set's median index, for every k >= 2 of the block."""
    ks = [k for k in sample.ks if k >= 2]
    observed = {k: _transfer_index(fits.first, fits.labels_first, fits.second, fits.labels_second, k)
                for k, fits in sample.fits.items() if k >= 2}
    Z = reference_sample(sample.X, sample.rng((2, 0, 0, 0)), reference=reference)
    half = Z.shape[0] // 2
    null = np.empty((splits, len(ks)))
    for s in range(splits):
        order = sample.rng((2, s + 1, 0, 0)).permutation(Z.shape[0])
        first, second = Z[order[:half]], Z[order[half : 2 * half]]
        on_first = sample.cluster(first, ks, (2, s + 1, 0, 0))
        on_second = sample.cluster(second, ks, (2, s + 1, 1, 0))
        null[s] = [_transfer_index(first, on_first[k], second, on_second[k], k) for k in ks]
    medians = np.median(null, axis=0)
    return {"clest": {k: observed.get(k, np.nan) for k in ks},
            "clest_null": {k: float(medians[i]) for i, k in enumerate(ks)}}


def clest_choice(observed: NDArray[np.float64], null: NDArray[np.float64], ks: NDArray[np.int64], *,
                 p_max: float, d_min: float) -> int:
    """Dudoit & Fridlyand's step 4 for one statistic per k against B0 reference values per k.

    ``observed[i]``: t_k at ``ks[i]``; ``null[i, b]``: t0_kb (NaN entries are left out). Returns k̂
    (1 when no k passes both thresholds), or -1 when no k has a value.
    """
    best_k, best_d, any_value = 1, -np.inf, False
    for i, k in enumerate(ks):
        reference = null[i][~np.isnan(null[i])]
        if k < 2 or np.isnan(observed[i]) or reference.size == 0:
            continue
        any_value = True
        d = observed[i] - reference.mean()
        p = float((reference >= observed[i]).mean())
        if p <= p_max and d >= d_min and d > best_d:
            best_k, best_d = int(k), d
    return best_k if any_value else -1


CLEST = Criterion(
    name="clest", citation="Dudoit & Fridlyand 2002",
    min_k=2,
    description="Dudoit & Fridlyand's Clest: LDA transfer, Fowlkes-Mallows index, against the Gap statistic's baseline",
    evaluate_trial=clest,
    decision=Decision(rule="clest", p_max=0.05, d_min=0.05),
    label="Clest t_k: Fowlkes-Mallows index", labels={"clest_null": "Clest reference statistic t0_k"},
    outputs=("clest", "clest_null"),
    options={"splits": 20, "reference": "uniform"},
    ranges={"splits": integer(1, MAX_REFERENCES), "reference": choice(*REFERENCES)},
    extra_fits=lambda options: options["splits"],  # both halves of each split of the reference set
    # and per split an LDA and the Fowlkes-Mallows index: 0.9-1.3 ms at n = 35-1,500, d = 4
    seconds_per_cell=lambda options, n: 1e-3 * options["splits"],
)


