"""Property tests: ranges and invariances of the criteria."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ordercube.tasks.criteria.base import TrialFits
from ordercube.tasks.criteria.pairwise import pairwise_instability
from ordercube.tasks.matching import matched_disagreement
from ordercube.tasks.predictors import nearest_neighbor


@st.composite
def labelings(draw):
    k = draw(st.integers(2, 6))
    n = draw(st.integers(1, 40))
    a = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    b = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    permutation = np.array(draw(st.permutations(range(k))))
    return k, a, b, permutation


@settings(max_examples=200, deadline=None)
@given(labelings())
def test_matched_disagreement_lies_in_range_and_ignores_relabeling(case):
    k, a, b, permutation = case
    value = matched_disagreement(a, b, k)
    assert 0.0 <= value <= 1.0 - 1.0 / k + 1e-12
    assert value == matched_disagreement(a, permutation[b], k) == matched_disagreement(permutation[a], b, k)
    assert matched_disagreement(a, permutation[a], k) == 0.0


@settings(max_examples=200, deadline=None)
@given(labelings(), st.integers(0, 2**32 - 1))
def test_pairwise_instability_lies_in_range_and_ignores_relabeling(case, seed):
    k, a, b, permutation = case
    n = a.shape[0]
    rng = np.random.default_rng(seed)
    points = rng.standard_normal((n, 2))
    evaluation = rng.standard_normal((2 * n, 2))
    pairing = rng.permutation(2 * n)

    def value(la, lb):  # both halves are the same points: identical labelings are identical solutions
        return pairwise_instability(TrialFits(first=points, second=points, labels_first=la, labels_second=lb,
                                              k=k, predictor=nearest_neighbor, evaluation=evaluation, pairing=pairing))

    base = value(a, b)
    assert 0.0 <= base <= 1.0
    assert base == value(permutation[a], b) == value(a, permutation[b])
    assert value(a, a) == 0.0
