"""A generator parameter as an axis: ``sweep: {std: [0.2, 0.4, ...]}`` in a synthetic dataset entry.

The entry stands for one dataset per value, named ``NAME_PARAMVALUE`` (``gmm_std0.45``), each an ordinary
dataset of the cube (its own identity, its own cells), so a grid can be extended by adding values and the
engine knows nothing of sweeps. Frank et al. (2011) vary the overlap of the Gaussians (Fig. 1), Shamir & Tishby (2007) the
separation mu. The config stored in the cube keeps the entry as written, so the report recovers which
dataset holds which value (:func:`swept`) and draws k̂ and the selection frequencies against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any

from ordercube.pipeline.errors import ConfigError
from ordercube.tasks.params import show

MAX_SWEEP_VALUES = 1000


@dataclass(frozen=True)
class Swept:
    """A dataset made by a sweep: its entry's name (``base``), the parameter and the value it holds."""

    base: str
    parameter: str
    value: Any


def value_text(value: Any) -> str:
    """How a value appears in a dataset's name: ``0.45``, ``1``, ``true`` (floats by ``%g``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Real) and not isinstance(value, int):
        return f"{float(value):g}"
    return str(value)


def expand(entry: Any, key: str) -> list[tuple[Any, Swept | None]]:
    """The dataset entries ``entry`` stands for, with what each sweeps (None for an entry without ``sweep``)."""
    if not isinstance(entry, Mapping) or "sweep" not in entry:
        return [(entry, None)]
    sweep = entry["sweep"]
    example = "write sweep: {std: [0.2, 0.4, 0.6]} (one generator parameter and its values)"
    if not isinstance(sweep, Mapping) or len(sweep) != 1:
        raise ConfigError(f"{key}.sweep", f"expected one parameter and its list of values, got {show(sweep)}", example)
    ((parameter, values),) = sweep.items()
    if entry.get("kind") in ("file", "memory") or "data" in entry:
        raise ConfigError(f"{key}.sweep", "a sweep varies a generator's parameter; a file or an array has none",
                          "remove sweep, or use a synthetic kind")
    if not isinstance(values, list) or not values or len(values) > MAX_SWEEP_VALUES:
        raise ConfigError(f"{key}.sweep.{parameter}", f"expected a list of 1 to {MAX_SWEEP_VALUES} values, got "
                          f"{show(values)}", example)
    params = entry.get("params") or {}
    if not isinstance(params, Mapping):
        return [(entry, None)]  # dataset_spec names the key and the fix
    if parameter in params:
        raise ConfigError(f"{key}.sweep.{parameter}", f"{parameter} is given under params too ({show(params[parameter])})",
                          f"remove params.{parameter}: the sweep sets it")
    name = entry.get("name")
    if not isinstance(name, str):
        return [(entry, None)]
    out = []
    for value in values:
        expanded = {k: v for k, v in entry.items() if k != "sweep"}
        expanded["name"] = f"{name}_{parameter}{value_text(value)}"
        expanded["params"] = {**params, parameter: value}
        out.append((expanded, Swept(base=name, parameter=str(parameter), value=value)))
    return out


def swept(config: Mapping[str, Any]) -> dict[str, Swept]:
    """Which dataset of a config (as stored in a cube's ``ordercube_config``) holds which swept value."""
    out: dict[str, Swept] = {}
    for i, entry in enumerate(config.get("datasets") or []):
        try:
            expanded = expand(entry, f"datasets[{i}]")
        except ConfigError:  # a stored config was valid when it was run; nothing to draw otherwise
            continue
        for dataset, sweep in expanded:
            if sweep is not None:
                out[dataset["name"]] = sweep
    return out
