"""User plugins: modules that register extra datasets, algorithms, predictors or criteria.

``ORDERCUBE_PLUGINS=mypkg.algorithms,other.module`` names modules to import; each adds entries to the
registries in ``tasks`` at import time. The driver imports them before validating a config, and the
workers of a LocalCluster import them through Dask's ``distributed.worker.preload``; workers of an
existing cluster need ``dask worker --preload mypkg.algorithms``.
"""

from __future__ import annotations

import importlib
import os

from pipeline.errors import InputError

VARIABLE = "ORDERCUBE_PLUGINS"


def plugin_modules() -> list[str]:
    return [name.strip() for name in os.environ.get(VARIABLE, "").split(",") if name.strip()]


def load_plugins() -> list[str]:
    """Import every module named in ``ORDERCUBE_PLUGINS``; returns their names."""
    modules = plugin_modules()
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as error:
            raise InputError(f"{VARIABLE}: cannot import plugin module {name!r} ({error}); "
                             "fix the module name or PYTHONPATH") from None
    return modules
