"""Values computed once per worker process and read by every task of the process that asks for them.

A value kept here must be a function of its key alone (drawn from streams the key addresses, computed from data
the key digests), so that which task, trial or process computes it first cannot change a bit: the Gap statistic's
reference dispersions (Tibshirani, Walther & Hastie 2001, eq. 3), the same for every trial whose sample has the
same box, and consensus clustering's reference data sets (John et al. 2020), the same for every resample of a
dataset. Two threads may both compute a missing value (the same bits): one is kept.

Bounded: the oldest entries go first once :data:`ENTRIES` values or :data:`BYTES` of arrays are held (a
long-lived worker visits many datasets).

Across the processes of one machine: :func:`shared_by_machine` shares a list of arrays through a
:class:`SharedStore` the pipeline installs (:func:`use_shared_store`; a folder every worker of a local cluster
shares), so that what one process computed another reads instead of computing it again. This module does no I/O
of its own: the store does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

T = TypeVar("T")

#: At most this many values ...
ENTRIES = 64
#: ... and this many bytes of the arrays they hold (a consensus block's reference sets and their distances).
BYTES = 512 * 2**20

_MEMO: dict[Hashable, tuple[Any, int]] = {}
_LOCK = threading.Lock()


class SharedStore(Protocol):
    """Arrays by name, shared by the processes of one machine: ``get`` returns None for a name never put; a
    ``put`` is whole or absent to a reader (never half-written); ``claim`` is True for the first process to ask
    for a name (it is to compute it), False for the others."""

    def get(self, name: str) -> np.ndarray | None: ...

    def put(self, name: str, value: np.ndarray) -> None: ...

    def claim(self, name: str) -> bool: ...


_SHARED: list[SharedStore | None] = [None]


def use_shared_store(store: SharedStore | None) -> None:
    """Share the arrays of :func:`shared_by_machine` through ``store`` (None: each process computes its own)."""
    _SHARED[0] = store


def shared_by_machine(names: Sequence[str], compute: Callable[[int], np.ndarray]) -> list[np.ndarray]:
    """``[compute(i) for i in range(len(names))]``, the work shared by the processes of this machine through the
    installed :class:`SharedStore`: each value is read when another process put it, else computed by the process
    that claims it first; those another process claimed are read at the end, or computed here if they are not
    there yet (its claimer still at it, or gone). ``names[i]`` names ``compute(i)`` on the machine, and each value
    must be a function of its name alone: which process computes it cannot change a bit."""
    store = _SHARED[0]
    if store is None:
        return [compute(i) for i in range(len(names))]
    found: dict[int, np.ndarray] = {}
    theirs = []
    for i, name in enumerate(names):
        value = store.get(name)
        if value is None and not store.claim(name):
            theirs.append(i)
            continue
        if value is None:
            value = compute(i)
            store.put(name, value)
        found[i] = value
    for i in reversed(theirs):  # from the far end: the claimer works its way up from the near one
        value = store.get(names[i])
        if value is None:
            value = compute(i)
            store.put(names[i], value)
        found[i] = value
    return [found[i] for i in range(len(names))]


def nbytes(value: Any) -> int:
    """The bytes of the arrays in ``value`` (an array, or a tuple, list or dict of them)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (tuple, list)):
        return sum(nbytes(part) for part in value)
    if isinstance(value, dict):
        return sum(nbytes(part) for part in value.values())
    return 0


def once_per_process(key: Hashable, compute: Callable[[], T]) -> T:
    """``compute()`` the first time ``key`` is asked for in this process, the kept value after."""
    found = _MEMO.get(key)
    if found is not None:
        return found[0]  # type: ignore[no-any-return]
    value = compute()
    size = nbytes(value)
    with _LOCK:
        while _MEMO and (len(_MEMO) >= ENTRIES or sum(held for _, held in _MEMO.values()) + size > BYTES):
            del _MEMO[next(iter(_MEMO))]  # oldest first
        if size <= BYTES:
            _MEMO[key] = (value, size)
    return value


def keys() -> list[Hashable]:
    """The keys held now, oldest first."""
    return list(_MEMO)


def clear() -> None:
    """Forget every value (tests: the next ask computes again)."""
    with _LOCK:
        _MEMO.clear()
