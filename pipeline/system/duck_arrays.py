"""xarray's check for dask arrays, answered without importing ``dask.array`` while nothing has imported it.

On every ``Variable`` it builds, xarray asks whether the data are a dask array (``isinstance(data,
array_type("dask"))``), and the first time it answers by importing ``dask.array``: 0.4 s of a report that never
meets one (measured: ``import xarray, zarr, pandas`` 0.63 s, with ``dask.array`` 1.02 s). No object can be a dask
array before ``dask.array`` is imported, so until then the answer is "none", exactly; from then on (or for any other
question, such as dask's version) xarray's own record is made and used, as without this module.
"""

from __future__ import annotations

import sys
from typing import Any


class _DaskOnceImported:
    """Stands in xarray's record of the dask module: its ``type`` is empty while ``dask.array`` is not imported,
    and everything else (and ``type`` afterwards) comes from xarray's own record, made on first need."""

    def __init__(self, cache: dict[str, Any], record: type) -> None:
        self._cache, self._record = cache, record

    def _real(self) -> Any:
        real = self._record("dask")
        self._cache["dask"] = real  # xarray reads its own record from now on
        return real

    @property
    def type(self) -> tuple[type, ...]:
        return self._real().type if "dask.array" in sys.modules else ()

    def __getattr__(self, name: str) -> Any:  # module, version, available: xarray's own answers
        return getattr(self._real(), name)


def defer_dask_array_import() -> None:
    """Install the stand-in (:class:`_DaskOnceImported`) where xarray keeps its duck-array records, unless a record
    of dask is there already or this xarray keeps them elsewhere (then nothing changes)."""
    try:
        from xarray.namedarray import pycompat
    except ImportError:
        return
    cache = getattr(pycompat, "_cached_duck_array_modules", None)
    record = getattr(pycompat, "DuckArrayModule", None)
    if isinstance(cache, dict) and record is not None and "dask" not in cache:
        cache["dask"] = _DaskOnceImported(cache, record)
