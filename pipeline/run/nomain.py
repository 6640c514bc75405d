"""Worker processes of the embedded LocalCluster that never import the user's main module.

multiprocessing's ``spawn`` (Dask's default) tells each child, in its preparation data, to run the parent's
main module again (``init_main_from_path`` from ``__main__.__file__``, or ``init_main_from_name`` from
``__main__.__spec__``), as ``__mp_main__``: a script that sweeps at its top level would sweep again in every
worker, and a script read from standard input (``<stdin>``, no file) cannot be run again at all. Our workers
need nothing of the main module: a task is a function of the installed ordercube package and its data, and a
plug-in reaches a worker as an installed or named module (:mod:`ordercube.tasks.plugins`), never through
``__main__``. So, as joblib's loky executor does (its processes start with ``init_main_module=False``), the
preparation data of a Dask worker process is given without those two keys while one of our LocalClusters
is up: when the nanny starts its worker and whenever it restarts one that died. (A LocalCluster of the user's
started meanwhile, from another thread, gets the same; its tasks then cannot refer to ``__main__`` either.)

What would have to come from ``__main__`` in a worker is refused before the cluster starts
(:func:`records_from_main`): a record registered by the script or notebook itself, whose code the workers
could not import.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing import spawn
from typing import Any

#: The name distributed's nanny gives the process of its worker (distributed.nanny.WorkerProcess.start).
WORKER_PROCESS_NAME = "Dask Worker process (from Nanny)"
MAIN_KEYS = ("init_main_from_path", "init_main_from_name")

_lock = threading.Lock()
_clusters = 0  # our LocalClusters up in this process
_original = spawn.get_preparation_data


def _preparation_data(name: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """multiprocessing's preparation data, without the main module for a Dask worker process of our clusters."""
    data = _original(name, *args, **kwargs)
    if _clusters and name == WORKER_PROCESS_NAME:
        for key in MAIN_KEYS:
            data.pop(key, None)
    return data


@contextmanager
def workers_without_main() -> Iterator[None]:
    """While this block runs (the whole life of a LocalCluster), the Dask worker processes spawned in this process,
    restarts included, do not import the main module. Other processes (a ``multiprocessing.Pool`` of the user's)
    are spawned as usual."""
    global _clusters
    with _lock:
        # multiprocessing's spawning code looks the function up in its module at each start: replaced once, kept
        spawn.get_preparation_data = _preparation_data
        _clusters += 1
    try:
        yield
    finally:
        with _lock:
            _clusters -= 1


def records_from_main() -> list[str]:
    """``kind 'name' (where)`` for each registered record whose code is defined in ``__main__`` (a class or a
    function of the script or notebook that registered it): a worker process cannot import it."""
    from ordercube.tasks.plugins import registries

    found = []
    for kind, registry in registries().items():
        for name, record in registry.items():
            if where := _main_code(record):
                found.append(f"{kind} {name!r} ({where})")
    return found


def _main_code(record: Any) -> str | None:
    """What of ``record`` (its type, itself if callable, or a callable or class among its fields) is ``__main__``'s."""
    parts: list[Any] = [type(record), record]
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        parts += [getattr(record, field.name, None) for field in dataclasses.fields(record)]
    elif hasattr(record, "__dict__"):
        parts += list(vars(record).values())
    for part in parts:
        if (callable(part) or isinstance(part, type)) and getattr(part, "__module__", None) == "__main__":
            return f"{getattr(part, '__qualname__', type(part).__qualname__)} is defined in __main__"
    return None
