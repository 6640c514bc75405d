"""What a registry lookup does with a name it does not hold: ask the plug-in loader, once one is installed.

The loader (:mod:`ordercube.tasks.plugins`) reads the registries to check what each plug-in registered, so the
registries reach it through this hook instead of importing it: the imports stay one way (registries, then the
loader), and a worker that runs a block has the loader installed by :mod:`ordercube.tasks.cell`.
"""

from __future__ import annotations

from collections.abc import Callable

_loaders: list[Callable[[], bool]] = []


def install(loader: Callable[[], bool]) -> None:
    """Make ``loader`` (``() -> bool``: True when it loaded something now) answer the registries' misses."""
    if loader not in _loaders:
        _loaders.append(loader)


def load_on_miss() -> bool:
    """Called by a registry lookup that found no record of a name; True when a loader loaded something now (the
    lookup is worth trying again)."""
    return any([loader() for loader in _loaders])
