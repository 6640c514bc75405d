"""scikit-learn clusterers and classifiers named by import path in a config.

``algorithm: sklearn.cluster.Birch`` makes a clusterer of any scikit-learn class with a cluster
count (``n_clusters`` or ``n_components``): each fit clones the configured estimator (the template is
never fitted or mutated), sets the count to k and ``random_state`` from the cell's stream when the
class has one, and returns ``fit_predict``'s labels. ``predictor: sklearn.svm.SVC`` does the same for
a classifier, fitted on the labelled half and predicting the new points. Only classes inside the
``sklearn`` package are imported: a config names a class, never runs code.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

COUNT_PARAMETERS = ("n_clusters", "n_components")


def is_import_path(name: str) -> bool:
    return "." in name


@cache
def estimator_class(path: str, kind: str) -> type:
    """The scikit-learn class at ``path`` (``sklearn.x.Name``), checked to be a ``kind`` ('clusterer' or
    'classifier'); ``ValueError`` naming the problem otherwise."""
    module_name, _, class_name = path.rpartition(".")
    if not (module_name == "sklearn" or module_name.startswith("sklearn.")):
        raise ValueError(f"{path!r}: only scikit-learn classes (sklearn.…) may be named by import path")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError):
        raise ValueError(f"{path!r}: no such class in scikit-learn") from None
    from sklearn.base import ClassifierMixin, ClusterMixin, DensityMixin

    wanted = {"clusterer": (ClusterMixin, DensityMixin), "classifier": (ClassifierMixin,)}[kind]
    if not (isinstance(cls, type) and issubclass(cls, wanted)):
        raise ValueError(f"{path!r} is not a scikit-learn {kind}")
    return cls


def template(path: str, params: Mapping[str, Any], kind: str) -> Any:
    """An unfitted estimator with ``params``; ``ValueError`` for a parameter the class does not take."""
    cls = estimator_class(path, kind)
    accepted = cls().get_params(deep=False)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(f"unknown parameter {unknown[0]!r} of {path}; it takes {sorted(accepted)}")
    if kind == "clusterer" and not any(name in accepted for name in COUNT_PARAMETERS):
        raise ValueError(f"{path} has no cluster count ({' or '.join(COUNT_PARAMETERS)}): k cannot be set")
    for name in COUNT_PARAMETERS:
        if name in params:
            raise ValueError(f"{name} is set from k by ordercube; remove it from the params")
    return cls(**params)


def _seeded(estimator: Any, rng: np.random.Generator) -> Any:
    from sklearn.base import clone

    fresh = clone(estimator)  # the configured template stays unfitted
    if "random_state" in fresh.get_params(deep=False):
        fresh.set_params(random_state=int(rng.integers(2**31 - 1)))
    return fresh


def cluster_with(path: str, X: NDArray[np.float64], k: int, rng: np.random.Generator, **params: Any) -> NDArray[np.int64]:
    """Labels in 0..k-1 of a clone of the scikit-learn clusterer ``path`` with k clusters, fitted to ``X``."""
    estimator = _seeded(template(path, params, "clusterer"), rng)
    count = next(name for name in COUNT_PARAMETERS if name in estimator.get_params(deep=False))
    estimator.set_params(**{count: k})
    labels = np.asarray(estimator.fit_predict(X))
    return np.unique(labels, return_inverse=True)[1].astype(np.int64)


def predict_with(path: str, X_train: NDArray[np.float64], labels: NDArray[np.int64], k: int,
                 X_new: NDArray[np.float64]) -> NDArray[np.int64]:
    """A clone of the scikit-learn classifier ``path`` fitted on the labelled half, predicting ``X_new``."""
    present = np.unique(labels)
    if present.size < 2:
        return np.full(X_new.shape[0], present[0], dtype=np.int64)
    estimator = _seeded(template(path, {}, "classifier"), np.random.default_rng(0))
    return np.asarray(estimator.fit(X_train, labels).predict(X_new)).astype(np.int64)
