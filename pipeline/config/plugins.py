"""Plug-ins in the driver: loaded before a config is read, their errors an input error (exit code 2).

A plug-in is an installed distribution with an entry point in the group ``ordercube.plugins``
(:mod:`ordercube.tasks.plugins`, which also loads them in any other process on the first lookup of a name no registry
holds: the workers of any cluster need nothing more). The workers of the embedded LocalCluster also load them as
they start (Dask's worker preload of this module), so that a plug-in that does more on import than register (a
test's instrumentation) is in force there from the first task; a failure there is left to the first lookup, which
fails the cells naming the plug-in.
"""

from __future__ import annotations

from typing import Any

from ordercube.pipeline.errors import InputError
from ordercube.tasks.plugins import Plugin, PluginError, load


def load_plugins() -> tuple[Plugin, ...]:
    """Load every plug-in (once per process); returns them with what each registered.

    Raises
    ------
    InputError
        Naming the plug-in (distribution and entry point) and the fix, when one fails to load or its
        registrations are refused.
    """
    from ordercube.pipeline.data import formats  # noqa: F401  (ordercube's own readers, before any plug-in's)

    try:
        return load()
    except PluginError as error:
        raise InputError(str(error)) from None


def describe(plugins: tuple[Plugin, ...]) -> str:
    """One line: ``plug-ins: ordercube-demo (changepoint: algorithm dp_segments, criterion heldout_sse)``."""
    if not plugins:
        return "plug-ins: none"
    return "plug-ins: " + "; ".join(f"{plugin.distribution} ({plugin.name}: {', '.join(plugin.registered) or 'nothing'})"
                                    for plugin in plugins)


def preload(plugins: tuple[Plugin, ...]) -> list[str]:
    """What the embedded LocalCluster's workers preload: this module when there are plug-ins, else nothing."""
    return [__name__] if plugins else []


def dask_setup(worker: Any) -> None:
    """Dask's preload hook: load the plug-ins in a starting worker. A failure is left to the first lookup that
    needs them, where it fails the cells with the plug-in's name instead of the worker's start."""
    try:
        load()
    except PluginError:
        pass
