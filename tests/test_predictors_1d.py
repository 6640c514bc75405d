"""The compiled 1-D nearest-centroid predictor gives the labels of the numpy code it replaced, bit for bit.

The reference, kept here, is ``nearest_centroid``'s 1-D branch as first written: means from ``np.bincount`` (summed
in the points' order), a stable ``argsort`` of the centres and ``searchsorted`` of the new points among the
midpoints (a point on a midpoint goes to the left cell; equal centres stay in label order; NaN last).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ordercube.tasks.algorithms.kmeans1d import nearest_centre_1d
from ordercube.tasks.predictors import nearest_centroid


def reference(X_train: np.ndarray, labels: np.ndarray, k: int, X_new: np.ndarray) -> np.ndarray:
    counts = np.bincount(labels, minlength=k)
    sums = np.stack([np.bincount(labels, weights=column, minlength=k) for column in X_train.T], axis=1)
    present = np.flatnonzero(counts)
    centers = sums[present] / counts[present, None]
    order = np.argsort(centers[:, 0], kind="stable")
    ends = (centers[order[1:], 0] + centers[order[:-1], 0]) / 2
    return present[order[np.searchsorted(ends, X_new[:, 0])]]


def check(X_train: np.ndarray, labels: np.ndarray, k: int, X_new: np.ndarray) -> None:
    ours, theirs = nearest_centroid(X_train, labels, k, X_new), reference(X_train, labels, k, X_new)
    assert ours.dtype == theirs.dtype and ours.tobytes() == theirs.tobytes()


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 14), st.integers(1, 300), st.booleans())
def test_same_labels_as_the_reference(seed, k, n, rounded):
    rng = np.random.default_rng(seed)
    X_train = rng.standard_normal((n, 1)) * 3
    if rounded:  # equal centres and new points on midpoints
        X_train = np.round(X_train)
    labels = rng.integers(0, k, n)  # any labelling, empty clusters included
    X_new = np.concatenate([rng.standard_normal((200, 1)) * 4, np.round(rng.standard_normal((50, 1)) * 4) / 2])
    check(X_train, labels, k, X_new)


def test_points_on_midpoints_and_equal_centres():
    X_train = np.array([[0.0], [2.0], [2.0], [4.0], [4.0]])
    labels = np.array([0, 1, 2, 3, 4])  # clusters 1, 2 and 3, 4 have equal centres
    X_new = np.array([[1.0], [3.0], [-1.0], [5.0], [2.0], [np.nan], [np.inf], [-np.inf]])
    check(X_train, labels, 6, X_new)  # cluster 5 is empty
    # ends 1, 2, 3, 4 between the centres 0, 2, 2, 4, 4 in label order; a point on an end goes left, NaN last
    assert nearest_centroid(X_train, labels, 6, X_new)[:6].tolist() == [0, 2, 0, 4, 1, 4]


def test_labels_it_cannot_serve_go_the_general_way():
    X_train = np.array([[0.0], [1.0], [5.0]])
    assert nearest_centre_1d(X_train[:, 0], np.array([0, 1, 3]), 3, np.array([0.2])) is None  # label >= k
    assert nearest_centre_1d(X_train[:, 0], np.array([0, -1, 1]), 2, np.array([0.2])) is None
    assert nearest_centre_1d(np.array([0.0, np.inf]), np.array([0, 1]), 2, np.array([0.2])) is None
    check(X_train, np.array([0, 1, 3]), 3, np.array([[0.2], [4.0]]))  # bincount grows to the largest label


def test_single_precision_points_go_the_general_way():
    rng = np.random.default_rng(2)
    X_train = rng.standard_normal((50, 1)).astype(np.float32)
    labels = rng.integers(0, 3, 50)
    X_new = rng.standard_normal((40, 1)).astype(np.float32)
    check(X_train, labels, 3, X_new)


def test_a_one_dimensional_prediction_does_not_import_numba_by_itself():
    code = ("import sys, numpy as np\n"
            "from ordercube.tasks.predictors import nearest_centroid\n"
            "from ordercube.tasks.criteria.base import TrialFits\n"
            "from ordercube.tasks.criteria.pairwise import pairwise_instability\n"
            "x = np.arange(20.0)[:, None]; labels = (x[:, 0] > 9).astype(np.int64)\n"
            "fits = TrialFits(first=x, second=x, labels_first=labels, labels_second=labels, k=2,\n"
            "                 predictor=nearest_centroid, evaluation=x, pairing=np.arange(20))\n"
            "assert pairwise_instability(fits) == 0.0 and nearest_centroid(x, labels, 2, x).tolist() == labels.tolist()\n"
            "print('numba' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"  # Cython sweeps keep their import diet (tests/test_imports.py)
