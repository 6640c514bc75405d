"""Config checks a model family owns: what a dataset's sizes allow its orders (a half's points per cluster, a
learning set, a matrix's rank), registered by algorithm kind and run for every method of that kind.

Whether a method fits a dataset at all (objects, labels, criteria) is :func:`ordercube.tasks.capabilities.why_not`'s; these
checks come after it. A plug-in registers its kind's with :func:`register_config_check`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ordercube.pipeline.errors import ConfigError
from ordercube.tasks.algorithms import get_algorithm
from ordercube.tasks.algorithms.kinds import BaseAlgorithm, Classifier, Clusterer, MatrixModel
from ordercube.tasks.deferred import Deferred

# check(datasets, method, index, ks) raises ConfigError naming the key
ConfigCheck = Callable[[Sequence[Any], Any, int, Sequence[int]], None]


def check_clusterer(datasets: Sequence[Any], method: Any, i: int, ks: Sequence[int]) -> None:
    """Some dataset and n can hold the largest k: a half of the largest n has enough points per cluster."""
    algorithm = get_algorithm(method.algorithm)
    assert isinstance(algorithm, Clusterer)  # registered for its kind
    largest_n = max(n for dataset in datasets for n in dataset.n)
    if not algorithm.feasible(max(ks), largest_n // 2):  # no dataset and n could ever hold this k
        per_cluster = algorithm.min_points_per_cluster
        most = largest_n // 2 // per_cluster
        # below k = 2 there is no number of clusters to compare: the data are too few, whatever k is asked
        fix = f"use k <= {most}, or larger n" if most >= 2 else \
            f"give at least {4 * per_cluster} rows (k = 2 needs halves of {2 * per_cluster} points)"
        raise ConfigError("k", f"k = {max(ks)} cannot be fitted at any sample size: the largest n ({largest_n}) "
                          f"gives halves of {largest_n // 2} points and {method.algorithm} needs "
                          f"{per_cluster} points per cluster", fix)


CONFIG_CHECKS: dict[type, ConfigCheck] = {
    Clusterer: check_clusterer,
    Classifier: Deferred("ordercube.pipeline.config.supervision:check_classifier"),
    MatrixModel: Deferred("ordercube.pipeline.data.matrixfiles:check_ranks"),
}


def register_config_check(kind: type, check: ConfigCheck) -> None:
    """Run ``check(datasets, method, index, ks)`` for every method whose algorithm is a ``kind`` (or a subclass)."""
    if not (isinstance(kind, type) and issubclass(kind, BaseAlgorithm)):
        raise TypeError(f"register_config_check: expected a subclass of ordercube.tasks.algorithms.kinds.BaseAlgorithm, "
                        f"got {kind!r}")
    CONFIG_CHECKS[kind] = check


def run_family_checks(datasets: Sequence[Any], methods: Sequence[Any], ks: Sequence[int]) -> None:
    """Every method's family checks, most specific kind first."""
    for i, method in enumerate(methods):
        for kind in type(get_algorithm(method.algorithm)).__mro__:
            if kind in CONFIG_CHECKS:
                CONFIG_CHECKS[kind](datasets, method, i, ks)
