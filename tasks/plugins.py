"""Plug-ins: installed packages that add datasets, algorithms, predictors, criteria, schemes, kinds of objects or
file readers.

A distribution declares an entry point in the group ``ordercube.plugins``; its value names a module, whose
import registers what it adds, or a callable ``module:register`` called with no argument. Each is loaded
once per process: by the driver before a config is read (:func:`ordercube.pipeline.config.plugins.load_plugins`), and
elsewhere (a worker of any cluster) on the first lookup of a name no registry holds (``get_algorithm``,
``get_criterion``, ``get_predictor``, ``get_synthetic``, ``get_reader`` reach :func:`load_on_miss` through
:mod:`ordercube.tasks.misses`), so a worker needs no preload. A later miss rescans the installed entry points once
per missed name while nothing on ``sys.path`` changes (as xarray's ``refresh_engines``): a plug-in installed beside
a running worker is found then, and a name still unknown fails with the plug-ins loaded and what to do
(:func:`unknown_note`). The modules named in ``ORDERCUBE_PLUGINS`` (comma-separated; a module on the path, not
packaged) are loaded after them, the same way; one named later in the process (a test's command run in-process) is loaded by
the next :func:`load`.

This module is on the ``tasks`` side of the wall: it imports nothing of ``pipeline``, and its errors are
:class:`PluginError` (a ``ValueError``) naming the distribution, the entry point and the fix; the driver turns
them into an input error (exit code 2), a worker into a failed cell's reason.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any

from ordercube.tasks import misses

GROUP = "ordercube.plugins"
VARIABLE = "ORDERCUBE_PLUGINS"


class PluginError(ValueError):
    """A plug-in that cannot be loaded, or whose registrations are refused; the message names it and the fix."""


@dataclass(frozen=True)
class Plugin:
    """One entry point of the group, or one module named in ``ORDERCUBE_PLUGINS``.

    Attributes
    ----------
    distribution : str
        The installed distribution that declares it (``ORDERCUBE_PLUGINS`` for a module named there).
    name : str
        The entry point's name.
    value : str
        What it loads: ``module`` or ``module:callable``.
    registered : tuple of str
        What it added, as ``kind name`` (``criterion heldout_sse``), once loaded.
    """

    distribution: str
    name: str
    value: str
    registered: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.distribution == VARIABLE:
            return f"plug-in module {self.value!r} (named in {VARIABLE})"
        return f"plug-in {self.distribution!r} (entry point {self.name} = {self.value} of group {GROUP})"

    @property
    def fix(self) -> str:
        """How to get rid of it, for a message."""
        if self.distribution == VARIABLE:
            return f"or remove it from {VARIABLE}"
        return f"or uninstall it (pip uninstall {self.distribution})"


_lock = threading.RLock()
_loading = False
_done: dict[tuple[str, str, str], Plugin] = {}  # by (distribution, entry point, value), in loading order
_failed: dict[tuple[str, str, str], str] = {}  # the message of each plug-in that failed to load
_scanned: str | None = None  # ORDERCUBE_PLUGINS when every declared plug-in was last loaded (None: never)
# The missed names the entry points were rescanned for, with the folders of sys.path as they were then: a name is
# rescanned for again only once something was installed or removed there (a folder's mtime moved).
_rescanned: dict[str, tuple[tuple[str, int], ...]] = {}
# Which plug-in registered each (kind, name), for a message about a name taken twice.
_owners: dict[tuple[str, str], Plugin] = {}


def registries() -> dict[str, dict[str, Any]]:
    """The registries a plug-in adds to, by the kind of record they hold."""
    from ordercube.tasks.algorithms import ALGORITHMS
    from ordercube.tasks.capabilities import OBJECTS
    from ordercube.tasks.criteria import CRITERIA
    from ordercube.tasks.datasets.synthetic import SYNTHETIC
    from ordercube.tasks.predictors import PREDICTORS
    from ordercube.tasks.readers import READERS
    from ordercube.tasks.schemes import SCHEMES

    return {"algorithm": ALGORITHMS, "criterion": CRITERIA, "dataset": SYNTHETIC, "predictor": PREDICTORS,
            "objects": OBJECTS, "scheme": SCHEMES, "reader": READERS}


def declared() -> list[Plugin]:
    """The installed entry points of the group (sorted by distribution and name, so every process loads them in the
    same order), then the modules named in ``ORDERCUBE_PLUGINS``."""
    found = [Plugin(point.dist.name if point.dist is not None else "(unknown distribution)", point.name, point.value)
             for point in entry_points(group=GROUP)]
    named = [Plugin(VARIABLE, module, module) for module in
             (part.strip() for part in os.environ.get(VARIABLE, "").split(",")) if module]
    return sorted(found, key=lambda plugin: (plugin.distribution.lower(), plugin.name)) + named


def load() -> tuple[Plugin, ...]:
    """Load every declared plug-in that this process has not loaded yet (each once per process); returns those
    declared now, with what each registered.

    Raises
    ------
    PluginError
        A plug-in failed to import or register, registered a name another record holds, or registered a record
        that is not of its registry's type; the same error again on every later call in this process.
    """
    global _loading, _scanned
    with _lock:
        if _loading:  # a plug-in's own lookup while it loads
            return loaded()
        _loading = True
        try:
            plugins = declared()
            for plugin in plugins:
                key = (plugin.distribution, plugin.name, plugin.value)
                if key in _failed:  # a new error each time: one raised again grows its traceback with every task
                    raise PluginError(_failed[key])
                if key not in _done:
                    try:
                        _done[key] = _load_one(plugin)
                    except PluginError as error:
                        _failed[key] = str(error)
                        raise
            _scanned = os.environ.get(VARIABLE, "")
        finally:
            _loading = False
        return tuple(_done[(plugin.distribution, plugin.name, plugin.value)] for plugin in plugins)


def load_on_miss(what: str = "") -> bool:
    """Called by a registry lookup that found no record of ``what`` (``"dataset piecewise_constant"``): load the
    plug-ins unless this process has done so already (with the same ``ORDERCUBE_PLUGINS``); after that, rescan the
    installed entry points, import caches invalidated, once per missed name and state of the folders on
    ``sys.path`` (a distribution installed since is found; a name looked up again and again in an unchanged
    environment costs no scan). True when a plug-in was loaded now (the lookup is worth trying again)."""
    with _lock:
        if _loading:
            return False
        if _scanned == os.environ.get(VARIABLE, ""):
            state = _path_state()
            if _rescanned.get(what) == state:
                return False
            _rescanned[what] = state
            importlib.invalidate_caches()  # the path finders' and importlib.metadata's cached folder listings
        before = len(_done)
        load()
        return len(_done) > before


def _path_state() -> tuple[tuple[str, int], ...]:
    """The folders of ``sys.path`` with their modification times: pip installing or removing a distribution in
    one changes its time (microseconds to read, against milliseconds for a scan of the entry points)."""
    state = []
    for entry in sys.path:
        try:
            state.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            state.append((entry, -1))
    return tuple(state)


def unknown_note() -> str:
    """What the message of a name no registry holds adds: the plug-ins loaded in this process and what to do."""
    plugins = loaded()
    names = ", ".join(f"{plugin.distribution} ({plugin.name})" for plugin in plugins) if plugins else "none"
    return (f"; plug-ins loaded in this process: {names} (the entry points of group {GROUP} were rescanned); a name "
            "a plug-in registers needs the plug-in installed where this process runs: install it in the workers' "
            f"environment and restart the workers, or name its module in {VARIABLE} (comma-separated) for them")


def loaded() -> tuple[Plugin, ...]:
    """The plug-ins loaded in this process so far, in the order they were loaded."""
    return tuple(_done.values())


def _load_one(plugin: Plugin) -> Plugin:
    before = _snapshot()
    try:
        target = _import(plugin)
        if not isinstance(target, ModuleType):
            if not callable(target):
                raise PluginError(f"{plugin}: {plugin.value} is a {type(target).__name__}, not a module or a "
                                  f"callable; name a module or a function register() in the entry point")
            target()
    except PluginError:
        _restore(before)
        raise
    except Exception as error:  # anything its code raises: the plug-in is named, the cause kept in one line
        _restore(before)
        raise PluginError(f"{plugin} failed to load: {type(error).__name__}: {error}; fix the plug-in "
                          f"{plugin.fix}") from error
    added = _changes(plugin, before)
    return Plugin(plugin.distribution, plugin.name, plugin.value, tuple(f"{kind} {name}" for kind, name in added))


def _import(plugin: Plugin) -> Any:
    module_name, _, attribute = plugin.value.partition(":")
    module = importlib.import_module(module_name.strip())
    target: Any = module
    for part in attribute.strip().split(".") if attribute.strip() else ():
        target = getattr(target, part)
    return target


def _snapshot() -> dict[str, dict[str, Any]]:
    return {kind: dict(registry) for kind, registry in registries().items()}


def _restore(before: Mapping[str, Mapping[str, Any]]) -> None:
    """Put the registries back as they were before a plug-in that is refused."""
    for kind, registry in registries().items():
        own = {name: record for name, record in registry.items() if getattr(record, "builtin", False)}
        registry.clear()
        registry.update({**own, **before[kind]})  # ordercube's own readers stay, first imported by the plug-in


def _changes(plugin: Plugin, before: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """What ``plugin`` added, checked: no record replaced, every record of its registry's type and name."""
    added = []
    for kind, registry in registries().items():
        old = before[kind]
        for name, record in registry.items():
            if name in old and old[name] is record:
                continue
            if name not in old and getattr(record, "builtin", False):  # ordercube's own readers, first imported now
                continue
            if name in old:
                owner = _owners.get((kind, name))
                _restore(before)
                holder = f"{owner}, loaded before it" if owner is not None else "ordercube itself (built in)"
                raise PluginError(f"{plugin} registers {kind} {name!r}, a name already taken by {holder}; rename it "
                                  f"in the plug-in {plugin.fix}")
            problem = _invalid(kind, name, record)
            if problem:
                _restore(before)
                raise PluginError(f"{plugin} registers {kind} {name!r}: {problem[0]}; {problem[1]} in the plug-in "
                                  f"{plugin.fix}")
            added.append((kind, name))
        for name in set(old) - set(registry):
            _restore(before)
            raise PluginError(f"{plugin} removed {kind} {name!r} from ordercube's registry; a plug-in only adds "
                              "records: fix the plug-in")
    for kind, name in added:
        _owners[(kind, name)] = plugin
    return added


def _record_types() -> dict[str, type | None]:
    from ordercube.tasks.algorithms.kinds import BaseAlgorithm
    from ordercube.tasks.capabilities import ObjectKind
    from ordercube.tasks.criteria import Criterion
    from ordercube.tasks.datasets.synthetic import SyntheticDataset
    from ordercube.tasks.readers import Reader
    from ordercube.tasks.schemes import Scheme

    return {"algorithm": BaseAlgorithm, "criterion": Criterion, "dataset": SyntheticDataset, "predictor": None,
            "objects": ObjectKind, "scheme": Scheme, "reader": Reader}


def _invalid(kind: str, name: str, record: Any) -> tuple[str, str] | None:
    """Why ``record`` cannot be the ``kind`` named ``name``, and the fix (None when it can)."""
    expected = _record_types()[kind]
    if expected is None:
        if callable(record):
            return None
        return (f"expected a function predict(X_train, labels, k, X_new) -> labels, got a {type(record).__name__}",
                "register a function")
    if not isinstance(record, expected):
        return (f"expected a {expected.__module__}.{expected.__qualname__}, got a {type(record).__name__}",
                "build the record from that class")
    if getattr(record, "name", name) != name:
        return f"the record is named {record.name!r}", "register it under its own name"
    return None


misses.install(load_on_miss, unknown_note)  # the registries' lookups reach the loader through this hook
