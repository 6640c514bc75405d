"""Where a plug-in registers what it adds: a kind of objects, a dataset kind, an algorithm (of any kind), a predictor,
a criterion, a resampling scheme, a file reader.

Each function refuses a name already taken (naming the module that registers it, so an error names the plug-in)
and a record of the wrong type; the registries themselves are ``ordercube.tasks.datasets.SYNTHETIC``,
``ordercube.tasks.algorithms.ALGORITHMS``, ``ordercube.tasks.predictors.PREDICTORS`` (with ``PREDICTOR_TAKES``),
``ordercube.tasks.criteria.CRITERIA`` (with ``VARIABLES``), ``ordercube.tasks.schemes.SCHEMES`` and
``ordercube.tasks.readers.READERS``. What fits what
is then :func:`ordercube.tasks.capabilities.why_not`'s.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ordercube.tasks.algorithms import ALGORITHMS
from ordercube.tasks.algorithms.kinds import BaseAlgorithm
from ordercube.tasks.capabilities import OBJECTS, ObjectKind
from ordercube.tasks.criteria import CRITERIA, VARIABLES
from ordercube.tasks.criteria.base import Criterion
from ordercube.tasks.datasets import SYNTHETIC, SyntheticDataset
from ordercube.tasks.predictors import PREDICTOR_TAKES, PREDICTORS
from ordercube.tasks.readers import READERS, Reader
from ordercube.tasks.schemes import SCHEMES, Scheme


def _caller() -> str:
    """The module that called the register function (the plug-in), for error messages."""
    frame = inspect.currentframe()
    caller = frame.f_back.f_back if frame is not None and frame.f_back is not None else None
    return str(caller.f_globals.get("__name__", "?")) if caller is not None else "?"


def _free(registry: dict[str, Any], name: str, what: str, record_type: type | None, record: Any, who: str) -> None:
    if record_type is not None and not isinstance(record, record_type):
        raise TypeError(f"{who}: register_{what}({name!r}): expected a {record_type.__module__}."
                        f"{record_type.__name__}, got {type(record).__name__}")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{who}: register_{what}: expected a non-empty name, got {name!r}")
    if name in registry:
        raise ValueError(f"{who}: {what} {name!r} is registered already; give yours another name")


def register_objects(name: str, words: ObjectKind) -> None:
    """Add a kind of objects (what a dataset's rows are) with how messages and data lines say it."""
    _free(OBJECTS, name, "objects", ObjectKind, words, _caller())
    OBJECTS[name] = words


def register_dataset(dataset: SyntheticDataset) -> None:
    """Add a dataset kind (a generator; its ``objects`` and ``provides`` declare what its data are)."""
    _free(SYNTHETIC, getattr(dataset, "name", ""), "dataset", SyntheticDataset, dataset, _caller())
    SYNTHETIC[dataset.name] = dataset


def register_algorithm(algorithm: BaseAlgorithm) -> None:
    """Add an algorithm of any kind (a subclass of :class:`ordercube.tasks.algorithms.kinds.BaseAlgorithm` that gives its
    trial runner)."""
    _free(ALGORITHMS, getattr(algorithm, "name", ""), "algorithm", BaseAlgorithm, algorithm, _caller())
    ALGORITHMS[algorithm.name] = algorithm


def register_predictor(name: str, predictor: Callable[..., Any], *, takes: str = "points") -> None:
    """Add a predictor ``predictor(X_train, labels, k, X_new) -> labels`` that reads objects ``takes``."""
    who = _caller()
    _free(PREDICTORS, name, "predictor", None, predictor, who)
    if not callable(predictor):
        raise TypeError(f"{who}: register_predictor({name!r}): expected a function, got {predictor!r}")
    PREDICTORS[name] = predictor
    if takes != "points":
        PREDICTOR_TAKES[name] = takes


def register_criterion(criterion: Criterion) -> None:
    """Add a criterion (its computation, needs, decision rule and report sections are its own fields); every cube
    variable it stores must be new."""
    who = _caller()
    _free(CRITERIA, getattr(criterion, "name", ""), "criterion", Criterion, criterion, who)
    taken = [variable for variable in criterion.variables if variable in VARIABLES]
    if taken:
        raise ValueError(f"{who}: criterion {criterion.name!r} stores {taken}, which "
                         f"{sorted({VARIABLES[v] for v in taken})} store already; name its outputs otherwise")
    CRITERIA[criterion.name] = criterion
    VARIABLES.update(dict.fromkeys(criterion.variables, criterion.name))


def register_scheme(scheme: Scheme) -> None:
    """Add a resampling scheme for clusterers (a config's ``methods[i].scheme``): its trial runner, what its trials
    give the criteria, its parameters with their ranges, the roles of its parts and its cost."""
    _free(SCHEMES, getattr(scheme, "name", ""), "scheme", Scheme, scheme, _caller())
    SCHEMES[scheme.name] = scheme


def register_reader(reader: Reader) -> None:
    """Add a file reader (:class:`ordercube.tasks.readers.Reader`: the suffixes and the sniff of the formats it
    opens, its ``open(file, **options) -> TableRead`` and the entry keys it reads); ``kind: file`` datasets pick it
    by suffix or sniff, or by ``reader: NAME``."""
    who = _caller()
    _free(READERS, getattr(reader, "name", ""), "reader", Reader, reader, who)
    if not callable(reader.open):
        raise TypeError(f"{who}: register_reader({reader.name!r}): open must be a function, got {reader.open!r}")
    bad = [suffix for suffix in reader.suffixes if not (isinstance(suffix, str) and suffix.startswith(".")
                                                         and suffix == suffix.lower())]
    if bad:
        raise ValueError(f"{who}: register_reader({reader.name!r}): suffixes are lower case with their dot "
                         f"(\".parquet\"), got {bad}")
    READERS[reader.name] = reader
