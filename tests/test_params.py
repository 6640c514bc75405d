"""The range-check machinery: every registered parameter has a declared range, and the ranges mean what they say."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from importlib import import_module

import numpy as np
import pytest

from conftest import REPO
from ordercube.pipeline.config.study import load_config
from ordercube.pipeline.config.limits import MAX_CELL_BYTES, MAX_CELLS, cell_bytes, human
from ordercube.pipeline.config.yamlload import read_yaml
from ordercube.pipeline.errors import ConfigError
from ordercube.tasks.algorithms import ALGORITHMS, Algorithm, Deferred
from ordercube.tasks.algorithms.estimators import REFUSED, check_param
from ordercube.tasks.criteria import ADJUSTABLE, CRITERIA, DECISION_RANGES, Criterion
from ordercube.tasks.params import INT64_MAX, ParamError, check_params, choice, integer, number
from ordercube.tasks.preprocess import STEPS


def _keywords(function: Callable | None) -> set[str]:
    """The keyword-only parameters of a kernel: the ones a config may set."""
    if function is None:
        return set()
    return {name for name, p in inspect.signature(function).parameters.items() if p.kind is p.KEYWORD_ONLY}


@pytest.mark.parametrize("name", ALGORITHMS)
def test_every_algorithm_parameter_has_a_declared_range_holding_its_default(name):
    algorithm = ALGORITHMS[name]
    assert set(algorithm.ranges) == set(algorithm.defaults)
    assert all(algorithm.ranges[p].accepts(value) for p, value in algorithm.defaults.items())
    kernels = [getattr(algorithm, kernel, None) for kernel in ("cluster", "cluster_many", "classify")]
    for kernel in kernels:  # a kernel parameter the registry forgot fails here
        if isinstance(kernel, Deferred):
            kernel = getattr(import_module(kernel.target.partition(":")[0]), kernel.target.partition(":")[2])
        assert _keywords(kernel) - {"n0", "swap_rule"} <= set(algorithm.ranges), (name, _keywords(kernel))


@pytest.mark.parametrize("name", CRITERIA)
def test_every_criterion_option_has_a_declared_range_holding_its_default(name):
    criterion = CRITERIA[name]
    if criterion.reads == "error_rates":  # applied by each classifier's kernel (the swap's n0 and rule)
        for algorithm in criterion.algorithms:
            kernel = ALGORITHMS[algorithm].classify
            assert set(criterion.options) <= _keywords(import_module(kernel.target.partition(":")[0]).__dict__[
                kernel.target.partition(":")[2]]), (name, algorithm)
        assert set(criterion.ranges) == set(criterion.options)
    else:
        assert set(criterion.ranges) == set(criterion.options) == _keywords(criterion.evaluate_trial or criterion.evaluate
                                                                            or criterion.reduce)
    assert all(criterion.ranges[o].accepts(value) for o, value in criterion.options.items())


@pytest.mark.parametrize("name", STEPS)
def test_every_step_parameter_has_a_declared_range(name):
    step = STEPS[name]
    assert set(step.ranges) == _keywords(step.transform)
    assert set(step.required) == _keywords(step.transform) - set(step.defaults)
    assert all(step.ranges[p].accepts(value) for p, value in step.defaults.items())


def test_every_adjustable_decision_field_has_a_declared_range():
    assert {field for fields in ADJUSTABLE.values() for field in fields} == set(DECISION_RANGES)
    assert not DECISION_RANGES["threshold"].accepts(float("nan")) and DECISION_RANGES["threshold"].accepts(0.8)


def test_a_registry_entry_without_a_range_fails_when_it_is_made():
    with pytest.raises(TypeError, match=r"\['n_init'\] lack a declared range"):
        Algorithm("new", lambda X, k, rng, *, n_init=1: X, defaults={"n_init": 1})
    with pytest.raises(TypeError, match=r"\['n_init'\] lack a declared range"):  # a default outside its range
        Algorithm("new", lambda X, k, rng, *, n_init=0: X, defaults={"n_init": 0}, ranges={"n_init": integer(1)})
    with pytest.raises(TypeError, match=r"\['splits'\] lack a declared range"):
        Criterion("new", min_k=2, description="", options={"splits": 3})


@pytest.mark.parametrize(("param", "value", "accepted"), [
    (integer(1), 1, True), (integer(1), 0, False), (integer(1), True, False), (integer(1), 1.0, False),
    (integer(1), np.int64(5), True), (integer(1), INT64_MAX, True), (integer(1), INT64_MAX + 1, False),
    (integer(1, 10), 11, False), (integer(1), "3", False),
    (number(0.0), 0, True), (number(0.0), -1e-9, False), (number(0.0), float("inf"), False),
    (number(), float("nan"), False), (number(), float("-inf"), False), (number(), 10**18, True), (number(), 10**30, False),
    (number(), False, False), (number(), None, False), (number(allow_none=True), None, True),
    (number(0.0, 1.0, low_open=True, high_open=True), 0.0, False),
    (number(0.0, 1.0, low_open=True, high_open=True), 1.0, False),
    (number(0.0, 1.0, low_open=True, high_open=True), 0.999, True), (number(0.0, excluded=(1.0,)), 1, False),
    (number(0.0, excluded=(1.0,)), 2, True), (choice(1, 2), 2, True), (choice(1, 2), True, False),
    (choice(1, 2), 2.0, False), (choice("a", "b"), "a", True), (choice("a", "b"), ["a"], False),
])
def test_param_accepts_exactly_its_range(param, value, accepted):
    assert param.accepts(value) is accepted


def test_param_descriptions_read_as_the_rule():
    assert integer(1, 100_000).describe() == "an integer >= 1 and <= 100,000"
    assert integer(0).describe() == "an integer >= 0"  # the 64-bit bound is not worth a word
    assert number(0.0, 1.0, low_open=True, high_open=True).describe() == "a finite number > 0 and < 1"
    assert number(0.0, low_open=True, excluded=(1.0,)).describe() == "a finite number > 0 and != 1"
    assert number(allow_none=True).describe() == "a finite number, or null"
    assert choice("rows", "columns").describe() == "one of ['rows', 'columns']"


def test_check_params_names_the_parameter_in_order_unknown_range_missing_relation():
    ranges = {"a": integer(1), "b": number()}

    def relation(params):
        raise ParamError("b", "b must exceed a", "raise b")

    with pytest.raises(ParamError) as error:
        check_params({"c": 1}, ranges)
    assert error.value.name == "c" and "expected one of ['a', 'b']" in str(error.value)
    with pytest.raises(ParamError) as error:
        check_params({"a": 0}, ranges)
    assert error.value.name == "a" and str(error.value) == "expected an integer >= 1, got 0"
    with pytest.raises(ParamError) as error:
        check_params({}, ranges, required=("b",))
    assert error.value.name == "b" and "missing" in str(error.value)
    with pytest.raises(ParamError) as error:
        check_params({"a": 1}, ranges, check=relation)
    assert error.value.fix == "raise b"
    check_params({"a": 1, "b": -2.5}, ranges)


def test_annealing_schedule_bounds_the_number_of_temperatures():
    annealing = ALGORITHMS["deterministic_annealing"]
    annealing.resolve({"cooling": 0.999, "final_temperature": 1e-3})  # 6,904 temperatures: slow but bounded
    with pytest.raises(ParamError, match="13,809 temperatures"):
        annealing.resolve({"cooling": 0.999, "final_temperature": 1e-6})


def test_clip_floor_and_ceiling_are_checked_together():
    STEPS["clip"].validate({"floor": 1, "ceiling": 1})
    STEPS["clip"].validate({"floor": 5, "ceiling": None})
    with pytest.raises(ParamError, match="floor = 5 is above ceiling = 1"):
        STEPS["clip"].validate({"floor": 5, "ceiling": 1})


def test_documented_defaults_of_every_scikit_learn_clusterer_pass_the_data_check():
    """The allow-list refuses paths and objects, not the values scikit-learn itself documents."""
    import sklearn.cluster
    import sklearn.mixture
    from sklearn.base import ClusterMixin, DensityMixin

    checked = 0
    for module in (sklearn.cluster, sklearn.mixture):
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if not issubclass(cls, (ClusterMixin, DensityMixin)):
                continue
            for name, value in cls().get_params(deep=False).items():
                # (a default of inf, OPTICS' max_eps, is had by leaving the parameter out: configs give finite numbers)
                finite = not isinstance(value, float) or np.isfinite(value)
                if name not in REFUSED and finite and (value is None or isinstance(value, (bool, int, float, str))):
                    check_param(cls.__name__, cls, name, value)
                    checked += 1
    assert checked > 50


@pytest.mark.parametrize(("name", "value", "message"), [
    ("memory", "/tmp/cache", "joblib pickles"), ("memory", None, "joblib pickles"),
    ("random_state", 3, "cell's random stream"), ("linkage", "wardd", "documented choices"),
    ("metric", "builtins.eval", "documented choices"), ("connectivity", [[0, 1], [1, 0]], "not plain data"),
    ("distance_threshold", float("inf"), "not finite"), ("compute_full_tree", "yes", "documented choices"),
])
def test_agglomerative_parameters_that_are_not_plain_documented_data_are_refused(name, value, message):
    from sklearn.cluster import AgglomerativeClustering

    with pytest.raises(ParamError, match=message) as error:
        check_param("sklearn.cluster.AgglomerativeClustering", AgglomerativeClustering, name, value)
    assert error.value.name == name


def test_cell_memory_estimate_by_hand():
    # 3 copies of 100 x 2 points and 4 arrays of 100 x 5, 8 bytes each; plus 24 bytes per pair of a half of 50
    assert cell_bytes(n=100, features=2, k=5, evaluation=False, pair_bytes=0.0) == 8 * (600 + 2000)
    assert cell_bytes(n=100, features=2, k=5, evaluation=True, pair_bytes=24.0) == 8 * (1200 + 2000) + 24 * 2500
    assert human(3 * 2**30) == "3.0 GiB" and human(512) == "512 bytes"


def test_million_cell_benchmark_stays_valid_and_well_inside_the_limits():
    config = load_config(REPO / "benchmarks" / "million_cells.yaml")
    cells = len(config.datasets) * len(config.datasets[0].n) * len(config.methods) * len(config.k) * config.resamples
    assert cells == 1_000_000 and cells * 100 == MAX_CELLS
    assert cell_bytes(n=512, features=1, k=11, evaluation=True, pair_bytes=0.0) < MAX_CELL_BYTES / 1000


def test_yaml_merge_keys_may_override_but_plain_keys_may_not_repeat(tmp_path):
    path = tmp_path / "merge.yaml"
    path.write_text("base: &b {n_init: 3, tol: 0.1}\nparams: {<<: *b, n_init: 5}\n")
    assert read_yaml(path)["params"] == {"n_init": 5, "tol": 0.1}
    path.write_text("params:\n  n_init: 3\n  tol: 0.1\n  n_init: 5\n")
    with pytest.raises(ConfigError, match="line 4: the key 'n_init' appears twice in one mapping \\(first at line 2\\)"):
        read_yaml(path)
