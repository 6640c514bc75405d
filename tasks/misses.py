"""What a registry lookup does with a name it does not hold: ask the plug-in loader, once one is installed.

The loader (:mod:`ordercube.tasks.plugins`) reads the registries to check what each plug-in registered, so the
registries reach it through this hook instead of importing it: the imports stay one way (registries, then the
loader), and a worker that runs a block has the loader installed by :mod:`ordercube.tasks.cell`.

A miss loads the plug-ins not loaded yet and, once per missed name, rescans the installed entry points first (as
xarray's ``refresh_engines``): a worker started before a plug-in was installed beside it finds it then. When the
name is still unknown, :func:`unknown_note` says which plug-ins this process holds and what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")

_loaders: list[Callable[[str], bool]] = []
_notes: list[Callable[[], str]] = []


def install(loader: Callable[[str], bool], note: Callable[[], str] | None = None) -> None:
    """Make ``loader`` (``(what) -> bool``: True when it loaded something now) answer the registries' misses, and
    ``note`` (``() -> str``) add to their messages."""
    if loader not in _loaders:
        _loaders.append(loader)
    if note is not None and note not in _notes:
        _notes.append(note)


def load_on_miss(what: str = "") -> bool:
    """Called by a registry lookup that found no record of ``what`` (``"criterion heldout_sse"``); True when a
    loader loaded something now (the lookup is worth trying again)."""
    return any([loader(what) for loader in _loaders])


def unknown_note() -> str:
    """What an unknown name's message adds: the plug-ins loaded in this process and what to do ("" before the
    loader is installed)."""
    return "".join(note() for note in _notes)


def lookup(records: Mapping[str, T], kind: str, name: str, *, alternatives: str = "") -> T:
    """``records[name]`` of a registry of ``kind`` records ("criterion"); a name it does not hold asks the loaders
    (:func:`load_on_miss`) and looks again, else raises ``ValueError`` listing the known names, ``alternatives``
    (" or a scikit-learn clusterer by import path") and :func:`unknown_note`."""
    while True:
        try:
            return records[name]
        except KeyError:
            if not load_on_miss(f"{kind} {name}"):
                raise ValueError(f"unknown {kind} {name!r}; expected one of {sorted(records)}{alternatives}"
                                 f"{unknown_note()}") from None
