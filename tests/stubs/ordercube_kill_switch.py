"""Test-only plugin: SIGKILL the driver's process group at the Nth file-system change of a cube's
creation or growth (``ORDERCUBE_KILL_AT=N``), or count those changes (``ORDERCUBE_KILL_COUNT=FILE``).

A change is a call of ``os.replace``, ``os.rename``, ``os.unlink`` or ``os.rmdir`` (zarr's
LocalStore writes every file as a temp file then ``os.replace``; deletions and shrinking go through
unlink/rmdir), or for a cube on object storage of ``FsspecStore.set``, ``delete`` or ``delete_dir``,
made while ``Cube.create`` or ``Cube.grow`` (:mod:`ordercube.pipeline.cube.owner`) runs, or while the driver stores
computed blocks (phase ``write``: :mod:`ordercube.pipeline.cube.writes`). The kill
comes *before* the Nth change, as a power cut would: its temp file may be on disk, the change not.
Only the driver counts (Dask's worker processes load plugins too; they inherit ``ORDERCUBE_KILL_PID``).
"""

from __future__ import annotations

import json
import os
import signal
from functools import wraps

from ordercube.pipeline.cube.owner import Cube

DRIVER = os.environ.setdefault("ORDERCUBE_KILL_PID", str(os.getpid())) == str(os.getpid())
KILL_AT = int(os.environ.get("ORDERCUBE_KILL_AT", "0"))
COUNT_FILE = os.environ.get("ORDERCUBE_KILL_COUNT")
state = {"phase": None, "changes": 0, "counts": {}}


def _count() -> None:
    if state["phase"] is not None:
        state["changes"] += 1
        state["counts"][state["phase"]] = state["counts"].get(state["phase"], 0) + 1
        if state["changes"] == KILL_AT:
            os.killpg(os.getpgid(0), signal.SIGKILL)


def _counted(function):
    @wraps(function)
    def change(*args, **kwargs):
        _count()
        return function(*args, **kwargs)

    return change


def _counted_async(function):
    @wraps(function)
    async def change(*args, **kwargs):
        _count()
        return await function(*args, **kwargs)

    return change


def _phase(name, function):
    @wraps(function)
    def inside(*args, **kwargs):
        state["phase"] = name
        try:
            return function(*args, **kwargs)
        finally:
            state["phase"] = None
            if COUNT_FILE:
                with open(COUNT_FILE, "w") as file:
                    json.dump(state["counts"], file)

    return inside


if DRIVER and (KILL_AT or COUNT_FILE):
    for name in ("replace", "rename", "unlink", "rmdir"):
        setattr(os, name, _counted(getattr(os, name)))
    from zarr.storage import FsspecStore  # a cube on object storage: every object written or deleted

    for name in ("set", "set_if_not_exists", "delete", "delete_dir"):
        setattr(FsspecStore, name, _counted_async(getattr(FsspecStore, name)))
    Cube.create = _phase("create", Cube.create)
    Cube.grow = _phase("grow", Cube.grow)
    from ordercube.pipeline.cube import writes  # the stored blocks: a chunk's, or a held shard's, writes

    writes.write_block = _phase("write", writes.write_block)
    writes.write_objects = _phase("write", writes.write_objects)
