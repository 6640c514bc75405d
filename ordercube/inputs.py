"""From what a Python caller gives (a YAML path or a dict, in-memory datasets) to a validated ``Config``.

The dict has the YAML file's schema and is validated by the same :func:`ordercube.pipeline.config.study.parse_config`:
one schema, one set of messages. In-memory datasets become dataset entries with a ``data`` key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ordercube.pipeline.errors import ConfigError

if TYPE_CHECKING:
    from ordercube.pipeline.config.specs import Config



def read_config(config: Any, *, data: Mapping[str, Any] | None = None, out: str | os.PathLike[str] | None = None) -> Config:
    """The validated config; a file's relative paths start from its folder, a dict's from the current one."""
    from ordercube.pipeline.config.study import parse_config
    from ordercube.pipeline.config.plugins import load_plugins
    from ordercube.pipeline.config.yamlload import read_yaml

    load_plugins()  # the installed plug-ins' names, before the config names them
    if isinstance(config, (str, os.PathLike)):
        path = Path(config)
        raw, base = read_yaml(path, key="config"), path.parent  # a folder, FIFO or device is refused naming it
    elif isinstance(config, Mapping):
        raw, base = dict(config), Path.cwd()
    else:
        raise ConfigError("config", f"expected the path of a YAML file or a dict, got {type(config).__name__}",
                          "pass e.g. 'configs/quickstart.yaml' or {'name': ..., 'seed': ..., ...}")
    if data is not None:
        raw = with_data(raw, data)
    return parse_config(raw, base=base, out=None if out is None else os.fspath(out))


def with_data(raw: Any, data: Any) -> Any:
    """``raw`` with the in-memory ``data`` ({name: X | (X, labels)}) as dataset entries: filling the
    entry of that name when the config has one (its ``n``, ``preprocess``, ... apply), else appended."""
    if not isinstance(data, Mapping):
        raise ConfigError("data", f"expected a dict {{name: array | DataFrame | (X, labels)}}, got {type(data).__name__}",
                          "e.g. data={'iris': (X, y)}")
    if not isinstance(raw, Mapping):
        return raw  # parse_config says what is wrong with it
    datasets = raw.get("datasets", [])
    if not isinstance(datasets, list):
        return raw
    datasets = list(datasets)
    names = [entry.get("name") if isinstance(entry, Mapping) else None for entry in datasets]
    for name, value in data.items():
        if not isinstance(name, str):
            raise ConfigError("data", f"dataset names must be strings, got {name!r}", "e.g. data={'iris': X}")
        entry = _entry(name, value)
        if name in names:
            i = names.index(name)
            datasets[i] = {**datasets[i], **entry}
        else:
            datasets.append(entry)
    return {**raw, "datasets": datasets}


def _entry(name: str, value: Any) -> dict[str, Any]:
    if isinstance(value, tuple):
        if len(value) != 2:
            raise ConfigError(f"data[{name!r}]", f"expected an array, a DataFrame or a pair (X, labels), "
                              f"got a tuple of {len(value)} items", "pass (X, labels) or X alone")
        X, labels = value
        return {"name": name, "data": X, "labels": labels}
    return {"name": name, "data": value}
