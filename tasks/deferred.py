"""A kernel named by its import path and imported on its first call."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any


@dataclass(frozen=True)
class Deferred:
    """A kernel imported on its first call (``"module:function"``): the registry names every algorithm, and
    a config, a status or a k-means sweep need not import numba, scipy's hierarchy or the linear algebra of
    the others (each costs 0.1-0.3 s of a command's start). Pickles as its name, for Dask."""

    target: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module, _, name = self.target.partition(":")
        return getattr(import_module(module), name)(*args, **kwargs)
