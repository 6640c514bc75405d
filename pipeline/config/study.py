"""The study config: YAML in, validated frozen specs out.

Every error names the key path, the value and the fix, e.g.
``methods[0].criteria[1]: unknown criterion 'lnage'; expected one of ['lange', 'pairwise']``.
Relative file paths are read from the config file's folder; the output path from the working folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ordercube.pipeline.errors import ConfigError, ConfigErrors
from ordercube.pipeline.config.familychecks import run_family_checks
from ordercube.pipeline.config.limits import check_size
from ordercube.pipeline.config.yamlload import read_yaml
from ordercube.tasks.algorithms import ALGORITHMS, get_algorithm
from ordercube.tasks.algorithms.kinds import BaseAlgorithm
from ordercube.tasks.algorithms.estimators import is_import_path
from ordercube.pipeline.config.adaptive import parse_adaptive
from ordercube.pipeline.config.checks import (
    check_keys as _check_keys, integer as _integer, n_values as _n_values, param_fix as _fix, require as _require,
    valid_name as _name,
)
from ordercube.pipeline.config.defaults import RESAMPLES, default_criteria, default_name, draw_seed, fitting_criteria
from ordercube.pipeline.config.schemes import (
    SCHEME_KEYS, check_items, check_schemes, method_assignments, method_scheme, missing_parts, scheme_misfit,
)
from ordercube.pipeline.config.specs import (
    Config, DatasetSpec, Execution, IN_PROCESS_SECONDS, MethodSpec, fingerprint,
)
from ordercube.tasks.capabilities import DataObjects, objects_kind, why_not
from ordercube.tasks.criteria import CRITERIA, get_criterion, is_reduced
from ordercube.tasks.predictors import PREDICTORS, get_predictor
from ordercube.tasks.params import Param, ParamError, integer, number, show

TOP_KEYS = {"name", "seed", "out", "n", "k", "resamples", "datasets", "methods", "baseline_draws", "execution",
            "published", "adaptive"}
METHOD_KEYS = {"name", "algorithm", "params", "predictor", "criteria", "adaptive", *SCHEME_KEYS}
MAX_K_VALUES = 10_000
MAX_BASELINE_DRAWS = 100_000
# How work is cut up: bounded so that one chunk, one task and the window of tasks in flight stay small.
EXECUTION: dict[str, Param] = {
    "trials_per_chunk": integer(1, 100_000),
    "task_seconds": number(0.0, 86_400.0, low_open=True),
    "max_tasks_in_flight": integer(1, 100_000),
    "in_process_seconds": number(0.0, 86_400.0),
}


def _k_values(value: Any) -> tuple[int, ...]:
    fix = "write a list like [2, 3, 4] or a range like {from: 2, to: 10}"
    if isinstance(value, Mapping):
        _check_keys(value, {"from", "to", "step"}, "k")
        start = _integer(_require(value, "from", "k."), "k.from", minimum=1, fix=fix)
        stop = _integer(_require(value, "to", "k."), "k.to", minimum=start, fix="k.to must not be below k.from")
        step = _integer(value.get("step", 1), "k.step", minimum=1, fix=fix)
        count = (stop - start) // step + 1  # before the range is made: k: {from: 2, to: 1e15} is not a study
        if count > MAX_K_VALUES:
            raise ConfigError("k", f"the range holds {count:,} values of k; at most {MAX_K_VALUES:,}",
                              "lower k.to or raise k.step")
        return tuple(range(start, stop + 1, step))
    if not isinstance(value, list) or not value:
        raise ConfigError("k", f"expected a non-empty list or a range, got {show(value)}", fix)
    ks = tuple(_integer(v, f"k[{i}]", minimum=1, fix="use cluster numbers >= 1") for i, v in enumerate(value))
    if len(set(ks)) != len(ks):
        raise ConfigError("k", f"repeated values in {list(ks)}", "list each k once")
    return ks


def _method(entry: Any, i: int, ks: tuple[int, ...] | None) -> tuple[MethodSpec, dict[str, Any]]:
    """The spec of ``methods[i]`` and the keys filled by default (``name``, ``predictor``, ``criteria``); with
    ``ks`` None (k is wrong) the checks against the k's are left out."""
    key = f"methods[{i}]"
    _check_keys(entry, METHOD_KEYS, key)
    name = _name(entry["name"], f"{key}.name") if "name" in entry else None
    algorithm = _require(entry, "algorithm", f"{key}.")
    if not isinstance(algorithm, str) or (algorithm not in ALGORITHMS and not is_import_path(algorithm)):
        raise ConfigError(f"{key}.algorithm", f"unknown algorithm {show(algorithm)}", f"expected one of {sorted(ALGORITHMS)} "
                          "or a scikit-learn clusterer by import path, e.g. sklearn.cluster.Birch")
    try:
        resolved_algorithm = get_algorithm(algorithm)
    except ValueError as error:
        raise ConfigError(f"{key}.algorithm", str(error), "name a class of sklearn.cluster or sklearn.mixture") from None
    filled: dict[str, Any] = {}
    if name is None:
        filled["name"] = name = _name(algorithm, f"{key}.name")
    refused: list[ConfigError] = []  # the scheme's and the assignments' refusals, reported together
    resolved_algorithm, scheme, scheme_params = method_scheme(entry, key, resolved_algorithm, refused)
    if refused:  # a scheme refused: the method's other keys would be judged as without it ("predictor: missing")
        raise ConfigErrors.of(refused)
    params_given = entry.get("params") or {}
    if not isinstance(params_given, Mapping):
        raise ConfigError(f"{key}.params", f"expected a mapping, got {show(params_given)}",
                          "write 'params: {name: value}'")
    try:
        params = resolved_algorithm.resolve(params_given)
    except ParamError as error:
        raise ConfigError(f"{key}.params.{error.name}", str(error),
                          _fix(error, resolved_algorithm.ranges, resolved_algorithm.defaults)) from None
    except (ValueError, TypeError) as error:
        raise ConfigError(f"{key}.params", str(error)) from None
    if not resolved_algorithm.needs_predictor:  # its criteria read no labels a predictor would extend
        if "predictor" in entry:
            misfit = why_not(None, resolved_algorithm, predictor=str(entry["predictor"]))
            assert misfit is not None
            raise ConfigError(f"{key}.predictor", misfit.reason, misfit.fix)
        predictor = "none"
    else:
        if "predictor" not in entry and resolved_algorithm.predictor is not None:
            filled["predictor"] = resolved_algorithm.predictor  # matched to its principle (Lange et al. 2002, Sec. 3)
        predictor = entry["predictor"] if "predictor" in entry else filled.get("predictor")
        if predictor is None and "predictor" not in entry:
            _require(entry, "predictor", f"{key}.")
        if not isinstance(predictor, str) or (predictor not in PREDICTORS and not is_import_path(predictor)):
            raise ConfigError(f"{key}.predictor", f"unknown predictor {show(predictor)}", f"expected one of "
                              f"{sorted(PREDICTORS)} or a scikit-learn classifier by import path, e.g. sklearn.svm.SVC")
        try:
            get_predictor(predictor)
        except ValueError as error:
            raise ConfigError(f"{key}.predictor", str(error), "name a classifier class of scikit-learn") from None
    if "criteria" not in entry:
        filled["criteria"] = list(default_criteria(resolved_algorithm))
        if not filled["criteria"]:
            raise ConfigError(f"{key}.criteria", "missing", f"add the key 'criteria' ({algorithm!r} is "
                              f"{resolved_algorithm.kind}: no default set; choose from "
                              f"{fitting_criteria(resolved_algorithm)})")
    try:
        criteria, options = _criteria(entry["criteria"] if "criteria" in entry else filled["criteria"],
                                      f"{key}.criteria", resolved_algorithm, ks, scheme, refused)
    except ConfigError as error:
        raise ConfigErrors.of([*refused, error]) from None
    assignments, stored = method_assignments(entry, key, resolved_algorithm, criteria, refused)
    refused += missing_parts(key, scheme, scheme_params, criteria)
    filled |= stored
    if refused:
        raise ConfigErrors.of(refused)
    # A k below a criterion's min_k is stored as NaN for it (not applicable: stability at k = 1), as long
    # as another criterion of the method is defined there; a k that no criterion can use is an error.
    lowest = min(get_criterion(criterion).min_k for criterion in criteria)
    if ks is not None and min(ks) < lowest:
        raise ConfigError("k", f"the criteria {list(criteria)} of {key} need k >= {lowest}, got k = {min(ks)}",
                          f"start k at {lowest}, or add a criterion defined at k = {min(ks)} "
                          "(prediction_strength, gap, bic, aic)")
    return MethodSpec(name=name, algorithm=algorithm, params=params, predictor=predictor,
                      criteria=tuple(c for c in criteria if not is_reduced(c)), criterion_options=options,
                      reduced=tuple(c for c in criteria if is_reduced(c)), scheme=scheme, scheme_params=scheme_params,
                      assignments=assignments, listed=criteria), filled


def _criteria(value: Any, key: str, resolved_algorithm: BaseAlgorithm, ks: tuple[int, ...] | None, scheme: str = "",
              refused: list[ConfigError] | None = None) -> tuple[tuple[str, ...], dict[str, dict[str, Any]]]:
    """Criterion names, each a string or a one-key mapping to its options (``{gap: {references: 50}}``); a
    criterion that reads what the method's ``scheme`` does not give is refused into ``refused`` (every one)."""
    if not isinstance(value, list) or not value:
        raise ConfigError(key, f"expected a non-empty list, got {show(value)}", f"choose from {sorted(CRITERIA)}")
    names: list[str] = []
    options: dict[str, dict[str, Any]] = {}
    for j, item in enumerate(value):
        given: Any = {}
        if isinstance(item, Mapping) and len(item) == 1:
            item, given = next(iter(item.items()))
            given = {} if given is None else given
        if not isinstance(item, str) or item not in CRITERIA:
            raise ConfigError(f"{key}[{j}]", f"unknown criterion {show(item)}", f"expected one of {sorted(CRITERIA)}, "
                              "each a name or a one-key mapping to its options ({gap: {references: 50}})")
        criterion = get_criterion(item)
        if not isinstance(given, Mapping):
            raise ConfigError(f"{key}[{j}].{item}", f"expected a mapping of options, got {show(given)}",
                              f"write {{{item}: {{option: value}}}} with options {sorted(criterion.options)}")
        try:
            resolved = criterion.resolve(given)
            if criterion.check is not None and ks is not None:
                criterion.check(resolved, ks)
        except ParamError as error:
            raise ConfigError(f"{key}[{j}].{item}.{error.name}", str(error),
                              _fix(error, criterion.ranges, criterion.options)) from None
        unfit = scheme_misfit(resolved_algorithm, scheme, item)
        if unfit is not None and refused is not None:
            refused.append(ConfigError(f"{key}[{j}]", *unfit))
            continue
        misfit = why_not(None, resolved_algorithm, criterion)
        if misfit is not None:
            raise ConfigError(f"{key}[{j}]", misfit.reason, misfit.fix)
        if item in names:
            raise ConfigError(key, f"repeated criteria in {show(value)}", "list each criterion once")
        names.append(item)
        if resolved:
            options[item] = resolved
    return tuple(names), options


def _execution(value: Any) -> Execution:
    if value is None:
        return Execution()
    _check_keys(value, set(EXECUTION), "execution")
    for name, given in value.items():
        if not (given is None and name not in ("task_seconds", "in_process_seconds")) and not EXECUTION[name].accepts(given):
            raise ConfigError(f"execution.{name}", f"expected {EXECUTION[name].describe()}, got {show(given)}",
                              "it only cuts up the work: e.g. trials_per_chunk: 20, task_seconds: 0.5, "
                              "max_tasks_in_flight: 8, in_process_seconds: 5")
    chunk, in_flight = value.get("trials_per_chunk"), value.get("max_tasks_in_flight")
    return Execution(trials_per_chunk=None if chunk is None else int(chunk),
                     task_seconds=float(value.get("task_seconds", 0.5)),
                     max_tasks_in_flight=None if in_flight is None else int(in_flight),
                     in_process_seconds=float(value.get("in_process_seconds", IN_PROCESS_SECONDS)))


def _unique(names: list[str], key: str) -> None:
    seen = [n for i, n in enumerate(names) if n in names[:i]]
    if seen:
        raise ConfigError(key, f"the name {seen[0]!r} is used twice", "give every entry its own name")


def parse_config(raw: Any, *, base: Path = Path("."), out: str | None = None, name: str | None = None) -> Config:
    """Validate a parsed YAML document; ``base`` is the folder relative file paths start from.

    Keys it omits get their defaults (:mod:`ordercube.pipeline.config.defaults`; ``name`` the given one, e.g. the
    YAML file's stem), listed in the config's ``defaults`` and written into its ``raw`` (so the cube records the
    drawn seed). Every independent wrong or missing key is reported at once: one :class:`ConfigError`, or a
    :class:`ConfigErrors` holding one per key.
    """
    errors: list[ConfigError] = []

    def attempt(check: Callable[[], Any], fallback: Any = None) -> Any:
        try:
            return check()
        except ConfigError as error:
            errors.append(error)
            return fallback

    if not isinstance(raw, Mapping):
        _check_keys(raw, TOP_KEYS, "")  # raises: nothing else can be read
    attempt(lambda: _check_keys(raw, TOP_KEYS, ""))
    defaults: dict[str, Any] = {}
    for key, value in (("name", name or default_name(None)), ("seed", None), ("resamples", RESAMPLES)):
        if key not in raw:
            defaults[key] = draw_seed() if key == "seed" else value
    given = {**defaults, **raw}
    study = attempt(lambda: _name(given["name"], "name"))
    seed = attempt(lambda: _integer(given["seed"], "seed", minimum=0, fix="use a non-negative integer seed"))
    resamples = attempt(lambda: _integer(given["resamples"], "resamples", minimum=1, fix="use at least 1 resample"))
    ks = attempt(lambda: _k_values(_require(raw, "k", "")))
    global_n = attempt(lambda: _n_values(raw["n"], "n")) if "n" in raw else None
    lists = {}
    for key in ("datasets", "methods"):
        lists[key] = attempt(lambda key=key: _entries(_require(raw, key, ""), key), fallback=[])
    methods_and_defaults = [attempt(lambda i=i, entry=entry: _method(entry, i, ks))
                            for i, entry in enumerate(lists["methods"])]
    from ordercube.pipeline.config.dataspec import dataset_spec, plain_entry  # it builds on this module's helpers

    from ordercube.pipeline.config.sweeps import expand

    datasets_found: list[DatasetSpec | None] = []
    inherited: set[str] = set()  # the problems of the top-level n, said once (not once per dataset that takes it)
    for i, entry in enumerate(lists["datasets"]):
        expanded = attempt(lambda i=i, entry=entry: expand(entry, f"datasets[{i}]"), fallback=[])
        for one, _ in expanded:
            own_n = isinstance(one, Mapping) and "n" in one
            if "n" in raw and global_n is None and not own_n:  # the top-level n is wrong, and said so
                continue
            try:
                datasets_found.append(dataset_spec(one, i, global_n, base, ks or ()))
            except ConfigError as error:
                problem = str(error)[len(error.key):]
                if own_n or not error.key.startswith(f"datasets[{i}].n") or problem not in inherited:
                    errors.append(error)
                if not own_n and error.key.startswith(f"datasets[{i}].n"):
                    inherited.add(problem)
    baseline_draws = attempt(lambda: _integer(raw.get("baseline_draws", 200), "baseline_draws", minimum=1,
                                              maximum=MAX_BASELINE_DRAWS, fix="e.g. 200: the baseline's standard error "
                                              "shrinks like 1/sqrt(draws)"))
    execution = attempt(lambda: _execution(raw.get("execution")))
    out_path = out or raw.get("out") or f"results/{study}.zarr"
    if not isinstance(out_path, str):
        errors.append(ConfigError("out", f"expected a path, got {show(out_path)}", "give a string"))
    if errors:
        raise ConfigErrors.of(errors)
    methods = tuple(spec for spec, _ in methods_and_defaults)
    for i, (_, filled) in enumerate(methods_and_defaults):
        defaults |= {f"methods[{i}].{key}": value for key, value in filled.items()}
    datasets = tuple(datasets_found)
    _unique([d.name for d in datasets], "datasets")
    _unique([m.name for m in methods], "methods")
    if any(m.needs_evaluation_sample for m in methods):
        for i, dataset in enumerate(datasets):
            if dataset.data is not None and 2 * max(dataset.n) > dataset.data.shape[0]:
                rows = dataset.data.shape[0]
                raise ConfigError(f"datasets[{i}].n", f"the pairwise criterion draws an independent evaluation sample, "
                                  f"so n = {max(dataset.n)} needs {2 * max(dataset.n)} rows but the file has {rows}",
                                  f"use n <= {rows // 2} for this dataset")
    _check_fit(datasets, methods)
    refused = check_items(datasets, methods, [filled for _, filled in methods_and_defaults])
    refused += check_schemes(datasets, methods)
    if refused:
        raise ConfigErrors.of(refused)
    run_family_checks(datasets, methods, ks)
    for i, method in enumerate(methods):
        limit = get_algorithm(method.algorithm).max_features
        for dataset in datasets:
            if limit is not None and dataset.n_features > limit:
                raise ConfigError(f"methods[{i}].algorithm", f"{method.algorithm!r} takes data with at most {limit} "
                                  f"feature(s), but dataset {dataset.name!r} has {dataset.n_features}",
                                  "use 'kmeans' for this dataset, or a config per dimensionality")
    stored = {**raw, "datasets": [plain_entry(entry) for entry in lists["datasets"]]}
    stored |= {key: value for key, value in defaults.items() if key in TOP_KEYS}
    if any(filled for _, filled in methods_and_defaults):  # the cube records the method as it was run
        stored["methods"] = [{**entry, **filled} for entry, (_, filled) in zip(lists["methods"], methods_and_defaults)]
    config = Config(name=study, seed=seed, out=out_path, datasets=datasets, methods=methods, k=ks, resamples=resamples,
                    baseline_draws=baseline_draws, execution=execution, raw=stored,
                    published=_published(raw.get("published"), datasets, methods),
                    adaptive=parse_adaptive(raw, methods, resamples, execution.trials_per_chunk), defaults=defaults)
    check_size(config)  # before anything the size of the grid is allocated (the plan, the cube)
    return config


def _entries(value: Any, key: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise ConfigError(key, f"expected a non-empty list, got {show(value)}", f"add at least one entry under {key}")
    return value


def _check_fit(datasets: tuple[DatasetSpec, ...], methods: tuple[MethodSpec, ...]) -> None:
    """Every method runs on every dataset: its algorithm takes the dataset's objects, its predictor and criteria read
    them (:func:`ordercube.tasks.capabilities.why_not`), and a variant of the algorithm for them accepts its parameters."""
    for i, method in enumerate(methods):
        algorithm = get_algorithm(method.algorithm)
        if method.scheme and algorithm.runs_schemes:
            algorithm = algorithm.with_scheme(method.scheme)
        predictor = method.predictor if algorithm.needs_predictor else None
        named = method.all_criteria
        for d, dataset in enumerate(datasets):
            data = DataObjects(dataset.name, dataset.objects, dataset.provides)
            for j, name in [(-1, None), *enumerate(named)]:
                misfit = why_not(data, algorithm, None if name is None else get_criterion(name), predictor)
                if misfit is not None:
                    where = {"algorithm": f"methods[{i}].algorithm", "predictor": f"methods[{i}].predictor",
                             "criterion": f"methods[{i}].criteria[{j}]", "dataset": f"datasets[{d}].{misfit.field}"}
                    raise ConfigError(where[misfit.part], misfit.reason, misfit.fix)
            _check_variant_params(algorithm, method, i, dataset.objects)


def _check_variant_params(algorithm: BaseAlgorithm, method: MethodSpec, i: int, objects: str) -> None:
    """A method's parameters (given, or the defaults) within the ranges of its algorithm's variant for ``objects``
    (agglomerative clustering of dissimilarities has no Ward linkage)."""
    variant = algorithm.on(objects)
    if variant is algorithm:
        return
    for parameter, allowed in variant.ranges.items():
        if parameter in method.params and not allowed.accepts(method.params[parameter]):
            raise ConfigError(f"methods[{i}].params.{parameter}", f"{method.params[parameter]!r} (given, or the "
                              f"default) is not defined on {objects_kind(objects).taken}",
                              f"give {parameter}: {allowed.describe()}")


DATA_KEY = "data"  # published.data: {DATASET: digest of the data the paper's values belong to}
METHODS_KEY = "methods"  # published.methods: {METHOD: digest of the method (algorithm, parameters, predictor)}


def data_digest(identity: Mapping[str, Any]) -> str:
    """A dataset's data digest: the fingerprint of its identity (kind and generator parameters, or the file's
    sha256 with its labels, reading and preprocessing), as ``ordercube validate`` prints it."""
    return fingerprint(identity)


def _published(value: Any, datasets: tuple[DatasetSpec, ...], methods: tuple[MethodSpec, ...]) -> dict[str, Any]:
    """A paper's k̂ per ``dataset/method`` and criterion, printed by the report next to the cube's, and under
    ``data`` the digest of each dataset's data the values belong to (shown only where the cube's data match)."""
    if value is None:
        return {}
    _check_keys(value, {f"{d.name}/{m.name}" for d in datasets for m in methods} | {DATA_KEY, METHODS_KEY}, "published")
    out: dict[str, Any] = {}
    for pair, entries in value.items():
        if pair in (DATA_KEY, METHODS_KEY):
            out[pair] = _published_digests(entries, [d.name for d in datasets] if pair == DATA_KEY
                                           else [m.name for m in methods], pair)
            continue
        method = next(m for m in methods if m.name == pair.split("/", 1)[1])
        _check_keys(entries, set(method.all_criteria), f"published.{pair}")
        out[pair] = {name: _published_value(value, f"published.{pair}.{name}", get_criterion(name).counts_clusters)
                     for name, value in entries.items()}
    return out


def _published_digests(value: Any, names: list[str], part: str) -> dict[str, str]:
    """``published.data`` or ``published.methods``: a digest (16 hexadecimal digits) per dataset or method name."""
    what = "data digest" if part == DATA_KEY else "method digest"
    _check_keys(value, set(names), f"published.{part}")
    for name, digest in value.items():
        if not (isinstance(digest, str) and len(digest) == 16 and all(c in "0123456789abcdef" for c in digest)):
            raise ConfigError(f"published.{part}.{name}", f"expected the {what} of 16 hexadecimal digits, "
                              f"got {show(digest)}", f"copy the '{what}' that 'ordercube validate' prints for {name} "
                              "(of the data or method the paper's values belong to)")
    return dict(value)


def _published_value(value: Any, key: str, counts_clusters: bool) -> Any:
    """A paper's k̂ (an integer); for a classifier's selector, Table 1's mean k̂ and error in % ({N: 9.11, R: 28.6})."""
    if counts_clusters:
        return _integer(value, key, minimum=1, fix="give the published k̂, e.g. 3")
    _check_keys(value, {"N", "R"}, key)
    for name, given in value.items():
        if isinstance(given, bool) or not isinstance(given, (int, float)) or not np.isfinite(given):
            raise ConfigError(f"{key}.{name}", f"expected a number, got {show(given)}", "e.g. {N: 9.11, R: 28.6}")
    return dict(value)


def load_config(path: str | Path, *, out: str | None = None) -> Config:
    """Read and validate the YAML file at ``path`` (bounded YAML data: see :mod:`ordercube.pipeline.config.yamlload`)."""
    path = Path(path)
    if not os.path.lexists(path):
        raise ConfigError("CONFIG", f"file {str(path)!r} does not exist", "give the path of a YAML config")
    return parse_config(read_yaml(path), base=path.parent, out=out, name=default_name(path))
