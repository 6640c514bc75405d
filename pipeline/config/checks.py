"""Checks shared by the config's parsers: a key present, known keys, integers, names, sample sizes, steps.

Each raises :class:`~ordercube.pipeline.errors.ConfigError` naming the key path, the value and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ordercube.pipeline.config.specs import MIN_N
from ordercube.pipeline.errors import ConfigError
from ordercube.tasks.params import Param, ParamError, show
from ordercube.tasks.preprocess import STEP_NAMES, STEPS

# A name is also a folder or a cube label: long enough for a description, short enough for a path.
MAX_NAME = 100
# Words a reader of the cube may write for a config key: the cube's dimension 'trial' indexes the
# config's 'resamples' (not renamed: xarray's Dataset.resample is a method). Refused with the key to write.
ALIASES = {"trials": "resamples", "trial": "resamples"}
ALIASES_WHY = {"resamples": "the number of resamples; the cube's 'trial' dimension indexes them"}


def require(mapping: Mapping[str, Any], key: str, path: str) -> Any:
    if key not in mapping:
        raise ConfigError(f"{path}{key}" if path else key, "missing", f"add the key '{key}'")
    return mapping[key]


def check_keys(mapping: Any, allowed: set[str], path: str) -> None:
    if not isinstance(mapping, Mapping):
        raise ConfigError(path or "config", f"expected a mapping, got {show(mapping)}", "write 'key: value' entries")
    unknown = sorted(set(map(str, mapping)) - allowed)
    if unknown:
        shown = unknown[0] if len(unknown[0]) <= MAX_NAME else f"{unknown[0][:MAX_NAME]}…"
        where = f"{path}.{shown}" if path else shown
        hint = ALIASES.get(shown) if ALIASES.get(shown) in allowed else None
        raise ConfigError(where, "unknown key", f"write '{hint}:' ({ALIASES_WHY[hint]})" if hint
                          else f"expected one of {sorted(allowed)}")


def integer(value: Any, key: str, *, minimum: int, fix: str, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError(key, f"expected an integer >= {minimum}, got {show(value)}", fix)
    if value < minimum or (maximum is not None and value > maximum):
        bounds = f">= {minimum}" + (f" and <= {maximum:,}" if maximum is not None else "")
        raise ConfigError(key, f"expected an integer {bounds}, got {value:,}", fix)
    return int(value)


def valid_name(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value or not value.replace("_", "").replace("-", "").replace(".", "").isalnum():
        raise ConfigError(key, f"expected a name of letters, digits, '_', '-' or '.', got {show(value)}", "rename it")
    if len(value) > MAX_NAME:
        raise ConfigError(key, f"a name of {len(value):,} characters ({show(value, 30)}); at most {MAX_NAME}, as it "
                          "labels the cube and names folders", f"shorten it to {MAX_NAME} characters or fewer")
    return value


def n_values(value: Any, key: str) -> list[int | str]:
    if isinstance(value, Mapping):  # a geometric grid: {from: 64, to: 131072, factor: 2}
        check_keys(value, {"from", "to", "factor"}, key)
        fix = "write {from: 64, to: 131072, factor: 2}"
        start = integer(require(value, "from", f"{key}."), f"{key}.from", minimum=MIN_N, fix=fix)
        stop = integer(require(value, "to", f"{key}."), f"{key}.to", minimum=start, fix=f"{key}.to must not be below from")
        factor = integer(value.get("factor", 2), f"{key}.factor", minimum=2, fix=fix)
        return [start * factor**i for i in range(int(np.floor(np.log(stop / start) / np.log(factor) + 1e-9)) + 1)]
    values = value if isinstance(value, list) else [value]
    if not values:
        raise ConfigError(key, "empty list", "give at least one sample size")
    out: list[int | str] = []
    for i, v in enumerate(values):
        if v == "all":
            out.append("all")
        else:
            out.append(integer(v, f"{key}[{i}]", minimum=MIN_N, fix=f"use sample sizes >= {MIN_N} or 'all'"))
    return out


def steps(value: Any, key: str) -> tuple[tuple[str, Mapping[str, Any]], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError(key, f"expected a list of steps, got {show(value)}", "write '- step: {params}' items")
    steps = []
    for i, item in enumerate(value):
        name, params = (item, {}) if isinstance(item, str) else (next(iter(item)), item[next(iter(item))]) \
            if isinstance(item, Mapping) and len(item) == 1 else (None, None)
        if not isinstance(name, str) or name not in STEP_NAMES:
            raise ConfigError(f"{key}[{i}]", f"unknown step {show(item)}", f"expected one of {STEP_NAMES}")
        params = {} if params is None else params
        if not isinstance(params, Mapping):
            raise ConfigError(f"{key}[{i}].{name}", f"expected a mapping of parameters, got {show(params)}",
                              f"write '- {name}: {{parameter: value}}' with parameters {sorted(STEPS[name].ranges)}")
        try:
            STEPS[name].validate(params)
        except ParamError as error:
            raise ConfigError(f"{key}[{i}].{name}.{error.name}", str(error),
                              param_fix(error, STEPS[name].ranges, STEPS[name].defaults)) from None
        steps.append((name, dict(params)))
    return tuple(steps)


def param_fix(error: ParamError, ranges: Mapping[str, Param], defaults: Mapping[str, Any]) -> str:
    """What to do: the error's own fix, else the default of a value out of range (a typo's message lists
    the valid names already)."""
    if error.fix or error.name not in ranges:
        return error.fix
    if error.name in defaults:
        return f"e.g. {error.name}: {defaults[error.name]!r} (the default)"
    return f"set {error.name} within that range"
