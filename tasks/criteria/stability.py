"""The stability of Lange, Roth, Braun & Buhmann (2004, eqs. 4-5; first in Lange et al. 2002, eqs. 5-6): the criterion
``lange``, credited to Lange et al. 2004 everywhere (its ``citation``)."""

from __future__ import annotations

import numpy as np

from ordercube.tasks.criteria.base import Criterion, TrialFits
from ordercube.tasks.matching import matched_disagreement


def lange_disagreement(fits: TrialFits) -> float:
    """Lange et al. (2002), eq. (5), for one split: ``min_pi (1/m) sum_i 1{pi(h(X'_i)) != alpha_X'(X'_i)}``.

    ``h`` is the first half's solution extended to the second half by the predictor, and
    ``alpha_X'`` the second half's own clustering. The expectation of eq. (5) is the mean over trials,
    taken by the reducers; the normalisation of eq. (6) divides by :func:`random_labeling_disagreement`.
    """
    return matched_disagreement(fits.second_predicted_from_first, fits.labels_second, fits.k)


def random_labeling_disagreement(n_points: int, k: int, rng: np.random.Generator, *, draws: int) -> float:
    """The denominator of Lange et al. (2004), eq. (5): the same statistic for the random predictor rho_k.

    The mean, over ``draws`` pairs of independent uniform labelings of ``n_points`` points with ``k``
    labels, of their Hungarian-matched disagreement. For finite ``n_points`` it lies below the
    asymptotic ``1 - 1/k`` (Lange et al. 2004, Sec. 2), which is why it is estimated rather than assumed.
    """
    from ordercube.tasks.assignment import matched_weights  # numba: imported by the first baseline only

    a = rng.integers(k, size=(draws, n_points))
    b = rng.integers(k, size=(draws, n_points))
    offsets = (np.arange(draws) * k * k)[:, None]
    tables = np.bincount((offsets + a * k + b).ravel(), minlength=draws * k * k).reshape(draws, k, k)
    return float(np.mean(1.0 - matched_weights(tables) / n_points))


LANGE = Criterion(
    name="lange", citation="Lange et al. 2004",
    evaluate=lange_disagreement,
    min_k=2,
    needs_evaluation_sample=False,
    description="Lange et al. stability: Hungarian-matched disagreement of the transferred solution",
    normalised_by_random_labels=True,
    label="normalised instability S / S(random)",
    sqrt_n_scaling=True,
)
