"""scikit-learn clusterers and classifiers named by import path in a config.

``algorithm: sklearn.cluster.Birch`` makes a clusterer of any scikit-learn class with a cluster
count (``n_clusters`` or ``n_components``): each fit clones the configured estimator (the template is
never fitted or mutated), sets the count to k and ``random_state`` from the cell's stream when the
class has one, and returns ``fit_predict``'s labels. ``predictor: sklearn.svm.SVC`` does the same for
a classifier, fitted on the labelled half and predicting the new points. Only classes inside the
``sklearn`` package are imported: a config names a class, never runs code.

Parameters are data too (:func:`check_param`): a number (finite), a boolean, null or a string that
is one of the class's documented choices (the ``StrOptions`` of scikit-learn's
``_parameter_constraints``), each only where the class's constraints admit it. Anything else is
refused: a free string (a path, a cache, a module), a list or mapping (an object, an array), and by
name joblib's ``memory`` (it writes pickles to a folder and loads them back: code from outside
``--out``), ``n_jobs`` above 1 (worker processes and memory-mapped files outside ``--out``) and
``random_state`` (set from the cell's stream).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
import math
from functools import cache
from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.params import INT64_MAX, ParamError, show

COUNT_PARAMETERS = ("n_clusters", "n_components")
# Refused whatever their value, with the reason.
REFUSED = {
    "memory": "it caches fits as joblib pickles in a folder and loads them back: a config could write outside "
              "--out and run code; remove it",
    "random_state": "ordercube sets it from the cell's random stream; remove it",
}
NUMERIC_TYPES = (Integral, Real, int, float)


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


def _plain(value: Any) -> str | None:
    """The kind of a plain value (``'null'``, ``'boolean'``, ``'number'``, ``'string'``), None for anything else."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, Integral):
        return "number" if abs(int(value)) <= INT64_MAX else None
    if isinstance(value, Real):
        return "number" if math.isfinite(float(value)) else None
    return "string" if isinstance(value, str) else None


def _classes(*names: str) -> tuple[type, ...]:
    """scikit-learn's constraint classes by name (private API: a class a later release renames is left out,
    which refuses more values, never fewer)."""
    from sklearn.utils import _param_validation as pv

    return tuple(getattr(pv, name) for name in names if isinstance(getattr(pv, name, None), type))


def _safe(constraint: Any, kind: str) -> bool:
    """Whether a scikit-learn constraint admits values of ``kind`` only as data (never a path or an object)."""
    if kind == "null":
        return isinstance(constraint, _classes("_NoneConstraint"))
    if kind == "boolean":
        return isinstance(constraint, _classes("_Booleans", "_VerboseHelper"))
    if kind == "string":  # documented choices only: a constraint 'str' admits any path
        return isinstance(constraint, _classes("StrOptions"))
    return (isinstance(constraint, _classes("Interval", "_VerboseHelper"))
            or (isinstance(constraint, _classes("Options")) and not isinstance(constraint, _classes("StrOptions")))
            or (isinstance(constraint, _classes("_InstancesOf")) and constraint.type in NUMERIC_TYPES))


def _choices(constraints: list[Any]) -> list[str]:
    return sorted(option for c in constraints if isinstance(c, _classes("StrOptions")) for option in c.options
                  if option not in getattr(c, "deprecated", ()))


def check_param(path: str, cls: type, name: str, value: Any) -> None:
    """``ParamError`` unless ``value`` is plain data that the class's documented constraints admit for ``name``."""
    from sklearn.utils._param_validation import make_constraint

    if name in REFUSED:
        raise ParamError(name, f"{show(value)} is refused: {REFUSED[name]}")
    if name == "n_jobs" and value not in (None, 1):
        raise ParamError(name, f"{show(value)} is refused: parallel jobs start processes that write memory-mapped "
                         "files outside --out (ordercube runs cells in parallel already); use null or 1")
    declared = getattr(cls, "_parameter_constraints", {}).get(name)
    constraints = [make_constraint(c) for c in declared] if declared is not None else []
    kind = _plain(value)
    strings = _choices(constraints)
    admitted = [c for c in constraints if kind is not None and _safe(c, kind)]
    if kind is not None and (any(c.is_satisfied_by(value) for c in admitted) or (declared is None and kind != "string")):
        return
    if kind is None and isinstance(value, (Integral, Real)) and not isinstance(value, bool):
        problem = f"{show(value)} is not finite (or beyond 64-bit integers); give a finite value"
    elif kind is None:
        problem = (f"{show(value)} is not plain data (a finite number, a boolean, null or a documented string): an "
                   "object, array, callable or path cannot be given in a config; "
                   + (f"use one of {show(strings, 200)}" if strings else "remove it"))
    elif kind == "string":
        problem = (f"{show(value)} is not one of the documented choices {show(strings, 200)}" if strings else
                   f"{show(value)} is a free string ({path} documents no choices for {name}): it could name a path, "
                   "a cache or an object; remove it")
    else:
        documented = " or ".join(str(c) for c in constraints if _safe(c, "number") or _safe(c, "string")
                                 or _safe(c, "boolean") or _safe(c, "null"))
        problem = f"{show(value)} is not a value {path} documents for {name}" + \
            (f"; it takes {documented[:200]}" if documented else "; see the class's documentation")
    raise ParamError(name, problem)


def template(path: str, params: Mapping[str, Any], kind: str) -> Any:
    """An unfitted estimator with ``params``; ``ValueError`` for a parameter the class does not take,
    ``ParamError`` for a value that is not plain data the class documents (:func:`check_param`)."""
    cls = estimator_class(path, kind)
    accepted = cls().get_params(deep=False)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ParamError(str(unknown[0]), f"unknown parameter {show(unknown[0])} of {path}; it takes {sorted(accepted)}")
    for name, value in params.items():
        check_param(path, cls, name, value)
    if kind == "clusterer" and not any(name in accepted for name in COUNT_PARAMETERS):
        raise ValueError(f"{path} has no cluster count ({' or '.join(COUNT_PARAMETERS)}): k cannot be set")
    for name in COUNT_PARAMETERS:
        if name in params:
            raise ParamError(name, f"{name} is set from k by ordercube; remove it from the params")
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
