"""A method's resampling scheme and stored assignments: ``methods[i].scheme``, ``scheme_params`` and ``assignments``.

- ``scheme``: a registered resampling scheme of clusterers (:mod:`ordercube.tasks.schemes`; default the two halves
  of Lange, Braun, Roth & Buhmann 2002), refused on an algorithm that is not a clusterer; what a method gives its
  criteria is then its scheme's (:meth:`ordercube.tasks.algorithms.kinds.Clusterer.with_scheme`).
- ``scheme_params``: the scheme's parameters, checked against its declared ranges.
- ``assignments``: whether each trial's assignment of every item (its cluster in each of the trial's clusterings,
  -1 where not drawn) is stored in the cube. Default: true when the method lists a criterion computed from
  stored assignments (``reads="assignments"``) or its scheme gives no halves' labels; an explicit false with such
  a criterion is refused, and so is storing them on data whose items are not fixed (a generator's fresh points).

Every refusal names the key, the value and the fix; those of one method are reported together
(:class:`~ordercube.pipeline.errors.ConfigErrors`). Here too: the part roles and sizes a config's assignments need
(:func:`part_roles_of`, :func:`wanted_size`) and their size, as ``ordercube validate`` states it (:func:`size_line`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ordercube.pipeline.config.checks import param_fix
from ordercube.pipeline.config.specs import Config, DatasetSpec, MethodSpec
from ordercube.pipeline.errors import ConfigError
from ordercube.tasks.algorithms.kinds import BaseAlgorithm
from ordercube.tasks.criteria import get_criterion, is_reduced
from ordercube.tasks.params import ParamError, show
from ordercube.tasks.schemes import DEFAULT, SCHEMES, get_scheme

SCHEME_KEYS = {"scheme", "scheme_params", "assignments"}
#: zstd (level 0) + CRC32C shrink stored assignments by at least this factor: measured 5.2:1 on halves of 150 rows
#: (k = 2..10, 20 resamples) and 5.6:1 on consensus and halves of the Alon colon data (62 items, k = 2..6); the test
#: of ``ordercube validate``'s line checks the estimate against a written cube.
COMPRESSION_RATIO = 4.0
ASSIGNMENTS = "assignments"  # what a scheme gives when its trials' clusterings can be stored


def method_scheme(entry: Mapping[str, Any], key: str, algorithm: BaseAlgorithm,
                  errors: list[ConfigError]) -> tuple[BaseAlgorithm, str, dict[str, Any]]:
    """``methods[i].scheme`` and ``scheme_params``: the algorithm as the scheme runs it, the scheme's name ("" for
    the default) and its parameters resolved over its defaults ({} for the default). Refusals go to ``errors``."""
    if "scheme" not in entry and "scheme_params" not in entry:
        return algorithm, "", {}
    name = entry.get("scheme", DEFAULT)
    if not isinstance(name, str) or name not in SCHEMES:
        errors.append(ConfigError(f"{key}.scheme", f"unknown scheme {show(name)}", f"expected one of {sorted(SCHEMES)}"))
        return algorithm, "", {}
    if not algorithm.runs_schemes:
        errors.append(ConfigError(f"{key}.scheme", f"{name!r} is a resampling scheme of clustering algorithms, and "
                                  f"{algorithm.name!r} is {algorithm.kind}", "remove 'scheme' (and 'scheme_params') "
                                  "from this method, or use a clustering algorithm"))
        return algorithm, "", {}
    scheme = get_scheme(name)
    given = entry.get("scheme_params") or {}
    if not isinstance(given, Mapping):
        errors.append(ConfigError(f"{key}.scheme_params", f"expected a mapping, got {show(given)}",
                                  f"write 'scheme_params: {{name: value}}' with parameters {sorted(scheme.defaults)}"))
        return algorithm, "", {}
    try:
        params = scheme.resolve(given)
    except ParamError as error:
        errors.append(ConfigError(f"{key}.scheme_params.{error.name}", str(error),
                                  param_fix(error, scheme.ranges, scheme.defaults)))
        return algorithm, "", {}
    if name == DEFAULT and not params:  # the default scheme, named: the same method (and identity) as without it
        return algorithm, "", {}
    return algorithm.with_scheme(name), name, params


def scheme_misfit(algorithm: BaseAlgorithm, scheme: str, criterion: str) -> tuple[str, str] | None:
    """Why ``criterion`` cannot be computed under the method's (non-default) ``scheme``: it reads what the scheme's
    trials do not give. (problem, fix), or None; the fix lists the criteria that fit."""
    reads = get_criterion(criterion).reads
    if not scheme or reads in algorithm.gives:
        return None
    from ordercube.tasks.capabilities import fitting_criteria

    return (f"{criterion} reads {reads!r}, and the scheme {scheme!r} gives {list(algorithm.gives)}",
            f"use one of {fitting_criteria(None, algorithm)} with scheme {scheme!r}, or compute {criterion} in a method "
            f"of another scheme (e.g. the default, {DEFAULT!r})")


def method_assignments(entry: Mapping[str, Any], key: str, algorithm: BaseAlgorithm, names: Sequence[str],
                       errors: list[ConfigError]) -> tuple[bool, dict[str, Any]]:
    """``methods[i].assignments``: whether the method stores them, and the key filled by default (when true by
    default). ``names`` are the method's criteria; refusals go to ``errors``."""
    readers = [name for name in names if is_reduced(name)]
    labelless = algorithm.runs_schemes and "labels" not in algorithm.gives
    why = (f"{', '.join(readers)} {'is' if len(readers) == 1 else 'are'} computed from stored assignments" if readers
           else "its scheme gives no halves' labels: its clusterings are what it computes")
    if "assignments" not in entry:
        default = bool(readers) or labelless
        if default and ASSIGNMENTS not in algorithm.gives:  # an algorithm kind that stores none: said at its criteria
            return False, {}
        return default, ({"assignments": True} if default else {})
    value = entry["assignments"]
    if not isinstance(value, bool):
        errors.append(ConfigError(f"{key}.assignments", f"expected true or false, got {show(value)}",
                                  "write 'assignments: true' to store each trial's cluster of every item, else false"))
        return False, {}
    if value and ASSIGNMENTS not in algorithm.gives:
        errors.append(ConfigError(f"{key}.assignments", f"true, and {algorithm.name!r} is {algorithm.kind}, whose trials "
                                  "give no assignment of items to clusters", "remove 'assignments' from this method"))
        return False, {}
    if not value and (readers or labelless):
        fix = (f"remove 'assignments: false' (or drop {', '.join(readers)} from {key}.criteria)" if readers
               else "remove 'assignments: false'")
        errors.append(ConfigError(f"{key}.assignments", f"false, and {why}", fix))
    return value, {}


def check_items(datasets: Sequence[DatasetSpec], methods: Sequence[MethodSpec],
                filled: Sequence[Mapping[str, Any]]) -> list[ConfigError]:
    """Every method that stores assignments runs on datasets whose items are fixed (a file, an array, a matrix of
    dissimilarities, a graph), not on a generator's fresh points: one refusal per method and such dataset."""
    errors = []
    for i, method in enumerate(methods):
        if not method.assignments:
            continue
        given = "true (the default" + (f": {', '.join(method.reduced)} read assignments)" if method.reduced
                                       else ": its scheme gives no labels)") if "assignments" in filled[i] else "true"
        for j, dataset in enumerate(datasets):
            if dataset.items is None:
                errors.append(ConfigError(f"methods[{i}].assignments", f"{given}, and dataset {dataset.name!r} "
                                          f"(datasets[{j}], kind {dataset.kind}) draws fresh points per trial: its items "
                                          "are not fixed, so no item has a cluster across trials",
                                          "store assignments on data of fixed rows (kind: file, an array, distances, a "
                                          f"graph file), or put dataset {dataset.name!r} in a config whose methods "
                                          "store none (assignments: false, no criterion that reads them)"))
    return errors


def check_schemes(datasets: Sequence[DatasetSpec], methods: Sequence[MethodSpec]) -> list[ConfigError]:
    """What each method's scheme says it cannot resample (``Scheme.refusal``) on each dataset and n, refused before
    the sweep in the scheme's own words (its ``methods[]`` key given the method's index): one per method and key."""
    errors: dict[str, ConfigError] = {}
    for i, method in enumerate(methods):
        scheme = get_scheme(method.scheme)
        if scheme.refusal is None:
            continue
        params = {**scheme.defaults, **method.scheme_params}
        for j, dataset in enumerate(datasets):
            for n in dataset.n:
                said = scheme.refusal(dataset.objects, params, dataset.data, n)
                if said is None:
                    continue
                key, _, problem = said.partition(": ")
                key = key.replace("methods[]", f"methods[{i}]") if key.startswith("methods[]") else f"datasets[{j}].{key}"
                errors.setdefault(key, ConfigError(key, f"dataset {dataset.name!r} (n = {n}): {problem}"))
    return list(errors.values())


def part_roles_of(config: Config) -> dict[str, list[str]]:
    """The role of each part (``"data"`` / ``"reference"``) of every method of ``config`` that stores assignments."""
    from ordercube.tasks.schemes import get_scheme

    roles = {}
    for method in config.methods:
        if method.assignments:
            scheme = get_scheme(method.scheme)
            roles[method.name] = list(scheme.part_roles({**scheme.defaults, **method.scheme_params}))
    return roles


def wanted_size(config: Config) -> tuple[int, int]:
    """(parts, items) the config's assignments need: the most parts of a method, the most items of a dataset."""
    parts = max((len(roles) for roles in part_roles_of(config).values()), default=0)
    items = max((d.items or 0 for d in config.datasets), default=0)
    return parts, items


def size_estimate(config: Config, cells_by_model: Mapping[str, int]) -> tuple[int, int]:
    """The assignments a run of ``config`` writes: raw int16 bytes (every stored cell's parts x the cube's items,
    as written: padded to the most items of a dataset) and the estimate on disk (:data:`COMPRESSION_RATIO`).
    ``cells_by_model``: the cells to compute of each method."""
    parts, items = wanted_size(config)
    raw = sum(cells for model, cells in cells_by_model.items()
              if any(m.name == model and m.assignments for m in config.methods)) * parts * items * 2
    return raw, int(raw / COMPRESSION_RATIO)


def size_line(config: Config, plan: Any) -> str | None:
    """``ordercube validate``'s line on the assignments a run of ``plan`` (:class:`ordercube.pipeline.run.sweep.Plan`)
    writes, None when no method stores them."""
    from ordercube.pipeline.config.limits import human

    if not config.stores_assignments:
        return None
    cells: dict[str, int] = {}
    for chunk in plan.chunks:
        model = plan.coords.model[chunk.model]
        cells[model] = cells.get(model, 0) + chunk.cells
    raw, disk = size_estimate(config, cells)
    parts, items = wanted_size(config)
    storing = [m.name for m in config.methods if m.assignments]
    count = sum(cells.get(name, 0) for name in storing)
    return (f"assignments: stored by {', '.join(storing)}: {count} cells x {parts} parts x {items} items = {human(raw)} "
            f"raw (int16), about {human(disk)} on disk (zstd; {COMPRESSION_RATIO:g}:1, below the ratio measured on "
            "halves of 150 rows)")


def missing_parts(key: str, scheme: str, params: Mapping[str, Any], criteria: Sequence[str]) -> list[ConfigError]:
    """The refusals of the ``criteria`` that need part roles (``needs_parts``) the method's scheme, with its
    ``params``, does not store (M3C under ``references: 0``, or without a scheme): caught before the sweep, not by the report after it. ``key``: the method's."""
    roles = set(get_scheme(scheme).part_roles(params)) if scheme else set()
    refused = []
    for name in criteria:
        for role, fix in get_criterion(name).needs_parts.items():
            if role not in roles:
                shown = ", ".join(f"{param}: {value}" for param, value in sorted(params.items()))
                if scheme:
                    refused.append(ConfigError(f"{key}.scheme_params", f"{name} reads the stored clusterings of "
                                               f"{role!r} parts, and the scheme {scheme!r} with {{{shown}}} stores none "
                                               f"(it stores {sorted(roles)})", fix))
                else:
                    refused.append(ConfigError(f"{key}.scheme", f"{name} reads the stored clusterings of {role!r} "
                                               "parts, and a method without a scheme (the halves) stores none",
                                               f"name a scheme that stores them; {fix}"))
    return refused
