"""Values computed once per worker process and read by every task of the process that asks for them.

A value kept here must be a function of its key alone (drawn from streams the key addresses, computed from data
the key digests), so that which task, trial or process computes it first cannot change a bit: the Gap statistic's
reference dispersions (Tibshirani, Walther & Hastie 2001, eq. 3), the same for every trial whose sample has the
same box, and consensus clustering's reference data sets (John et al. 2020), the same for every resample of a
dataset. Two threads may both compute a missing value (the same bits): one is kept.

Bounded: the oldest entries go first once :data:`ENTRIES` values or :data:`BYTES` of arrays are held (a
long-lived worker visits many datasets).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

#: At most this many values ...
ENTRIES = 64
#: ... and this many bytes of the arrays they hold (a consensus block's reference sets and their distances).
BYTES = 512 * 2**20

_MEMO: dict[Hashable, tuple[Any, int]] = {}
_LOCK = threading.Lock()


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
