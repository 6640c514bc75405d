"""Cubes on object storage (S3, GCS, Azure, memory): what replaces the local folder's rename.

An object store has no rename and no partial objects: a PUT stores a whole object or nothing. So a
new cube is built in memory and uploaded with its root ``zarr.json`` last, after a marker object
``.ordercube-creating``: a prefix without the root ``zarr.json`` is not a cube, and one holding the
marker is the leftover of an interrupted creation, which the next creator deletes (under the cube's
lock). Anything else under the prefix is somebody's data, which ordercube refuses to touch.
Growth and writing cells go through zarr only (see :mod:`ordercube.pipeline.cube.owner`), which works on any store.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import socket
import time
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

import zarr
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import MemoryStore

from ordercube.pipeline.errors import InputError
from ordercube.pipeline.files.location import Location

MARKER = ".ordercube-creating"  # present while a cube is uploaded; never in a finished one
T = TypeVar("T")


def _call(place: Location, action: str, work: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``work`` (a store operation) and turn a backend failure into one line naming the fix (and the
    option or argument that gave the location)."""
    try:
        return sync(work())
    except InputError:
        raise
    except Exception as error:  # noqa: BLE001 - botocore, aiohttp, gcsfs: any failure to reach the store
        detail = " ".join(str(error).split())[:300] or type(error).__name__
        raise InputError(f"{place.option}: cannot {action} {place} ({type(error).__name__}: {detail}); check the bucket name, "
                         "the credentials and the endpoint (for S3: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
                         "AWS_ENDPOINT_URL, or ~/.aws/config)") from None


def remote_is_cube(place: Location) -> bool:
    store = place.store(read_only=True)
    return _call(place, "read", lambda: store.exists("zarr.json"))


async def _children(store: Any, prefix: str = "") -> list[str]:
    return [child async for child in store.list_dir(prefix)]


def check_new_remote(place: Location) -> None:
    """``InputError`` unless a new cube can be uploaded to ``place``: its bucket exists and nothing but
    the leftovers of an interrupted creation is stored under it."""
    store = place.store()
    bucket = store.path.split("/", 1)[0]
    if not place.text.startswith("memory://") and not _call(place, "reach the bucket of", lambda: store.fs._exists(bucket)):
        raise InputError(f"{place.option}: the bucket {bucket!r} of {place} does not exist (or these credentials cannot see it); "
                         "create it first, or choose another --out")
    children = _call(place, "list", lambda: _children(store))
    if children and MARKER not in children:
        raise InputError(f"{place.option}: {place} exists and is not an ordercube cube; choose another --out")


def create_remote(place: Location, build: Callable[[Any], None]) -> zarr.Group:
    """Build a cube with ``build(store)`` in memory and upload it to ``place``, root ``zarr.json`` last.

    The caller holds the cube's lock and has checked it with :func:`check_new_remote`.
    """
    store = place.store()
    children = _call(place, "list", lambda: _children(store))
    if MARKER in children:  # an interrupted creation: nobody is making it (we hold the lock)
        _call(place, "delete the leftovers of an interrupted creation at", lambda: store.delete_dir(""))
    holder = {"host": socket.gethostname(), "pid": os.getpid()}
    prototype = default_buffer_prototype()
    _call(place, "write to", lambda: store.set(MARKER, prototype.buffer.from_bytes(json.dumps(holder).encode())))
    memory = MemoryStore()
    build(memory)

    async def upload() -> None:
        keys = [key async for key in memory.list()]
        values = {key: await memory.get(key, prototype=prototype) for key in keys}
        await asyncio.gather(*(store.set(key, value) for key, value in values.items() if key != "zarr.json"))
        await store.set("zarr.json", values["zarr.json"])  # now it is a cube
        await store.delete(MARKER)

    _call(place, "write to", upload)
    return zarr.open_group(store, mode="r+", use_consolidated=False)


def _is_group(document: str) -> bool:
    try:
        node = json.loads(document)
    except ValueError:
        return False
    return isinstance(node, dict) and node.get("node_type") == "group"


def remote_documents(place: Location) -> dict[str, str | None]:
    """The text of every ``zarr.json`` of the cube at ``place`` (None when it cannot be read), by URL:
    the root's, its children's and its subgroups' children's, as the local check globs them."""
    store = place.store(read_only=True)
    prototype = default_buffer_prototype()

    async def text(key: str) -> str | None:
        buffer = await store.get(key, prototype=prototype)
        try:
            return None if buffer is None else buffer.to_bytes().decode()
        except UnicodeDecodeError:
            return None

    async def read() -> dict[str, str | None]:
        found = {"zarr.json": await text("zarr.json")}
        children = [child for child in await _children(store) if child not in ("zarr.json", MARKER)]
        texts = await asyncio.gather(*(text(f"{child}/zarr.json") for child in children))
        for child, document in zip(children, texts):
            if document is None:
                continue
            found[f"{child}/zarr.json"] = document
            if _is_group(document):
                grandchildren = [g for g in await _children(store, child) if g != "zarr.json"]
                for grandchild, inner in zip(grandchildren, await asyncio.gather(
                        *(text(f"{child}/{g}/zarr.json") for g in grandchildren))):
                    if inner is not None:
                        found[f"{child}/{grandchild}/zarr.json"] = inner
        return found

    return {place.key(key): document for key, document in _call(place, "read", read).items()}


def supports_lock_object(place: Location) -> bool:
    """Can runs on other machines be kept out by a lock object (a write that fails if the object exists)?
    s3fs makes one (``If-None-Match: *``); the other backends are locked on this machine only."""
    return place.is_s3


def _lock_key(place: Location) -> tuple[Any, str]:
    store = place.store()
    return store.fs, store.path.rstrip("/") + ".lock"


#: A holder whose heartbeat is older than its lease is taken for dead: its lock may be broken (``--break-lock``).
#: ``ORDERCUBE_LOCK_LEASE_SECONDS`` sets another for the runs of a process; each run writes its lease in its lock
#: object, and a run breaking it reads the holder's own (a holder is never judged by another's setting).
LEASE_SECONDS = 120.0
#: A holder rewrites its heartbeat four times per lease (every 30 s by default): one beat lost to a slow or failing
#: request leaves three more before the lease runs out.
BEATS_PER_LEASE = 4


def lease_seconds() -> float:
    """The lease a run's lock object states: ``ORDERCUBE_LOCK_LEASE_SECONDS``, else :data:`LEASE_SECONDS` (exit 2
    on a value that is not a positive number)."""
    from ordercube.pipeline.system.environment import positive_number

    return float(positive_number("ORDERCUBE_LOCK_LEASE_SECONDS", LEASE_SECONDS, integer=False, example=600,
                                 unit="seconds"))


def holder_lease(holder: Mapping[str, Any]) -> float:
    """The lease ``holder`` stated in its lock object (:data:`LEASE_SECONDS` for one written before leases were
    recorded, or a value that is not a positive number)."""
    lease = holder.get("lease")
    return float(lease) if isinstance(lease, (int, float)) and math.isfinite(lease) and lease > 0 else LEASE_SECONDS


def holder_name(holder: Mapping[str, Any]) -> str:
    """How a lock's holder is named to ``--break-lock``: ``HOST:PID``."""
    return f"{holder.get('host')}:{holder.get('pid')}"


def _same_holder(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a.get(field) == b.get(field) for field in ("host", "pid", "started"))


def take_lock_object(place: Location, record: dict, describe: Callable[[dict], str],
                     break_lock: str | None = None) -> dict | None:
    """Create the lock object ``CUBE.lock`` beside the cube at ``place``, holding ``record``; returns the record
    of the holder it replaced (None if it was free). The caller holds this machine's lock of the cube, so a lock
    object naming this host is stale. One naming another host is an ``InputError``, unless ``break_lock`` names
    that holder (``HOST:PID``) and its heartbeat (rewritten :data:`BEATS_PER_LEASE` times per lease while it runs) is
    older than the lease the holder stated (:func:`holder_lease`): a holder that lives is never broken."""
    fs, key = _lock_key(place)

    async def create() -> bool:
        try:
            await fs._pipe_file(key, json.dumps(record).encode(), mode="create")
        except FileExistsError:  # S3's 412 Precondition Failed: somebody holds it, or held it and died
            return False
        return True

    if _call(place, "lock", create):
        return None
    text = _call(place, "read the lock object of", lambda: fs._cat_file(key))
    try:
        holder = json.loads(text)
    except ValueError:
        holder = {}
    holder = holder if isinstance(holder, dict) else {}
    if holder.get("host") != record["host"]:
        _check_break(place, holder, describe, break_lock)
    _call(place, "lock", lambda: fs._pipe_file(key, json.dumps(record).encode()))
    now = json.loads(_call(place, "read the lock object of", lambda: fs._cat_file(key)))
    if not _same_holder(now, record):  # another run broke it at the same moment: it is theirs
        raise InputError(f"{place.option}: the lock object {place.sibling('.lock')} was taken by another run at the same "
                         f"moment ({describe(now)}); wait for it to finish, then run again")
    return holder


def _check_break(place: Location, holder: dict, describe: Callable[[dict], str], break_lock: str | None) -> None:
    """``InputError`` unless ``break_lock`` names ``holder`` (a run on another host) and its heartbeat is older
    than the lease."""
    heartbeat, lease = holder.get("heartbeat"), holder_lease(holder)
    age = time.time() - float(heartbeat) if isinstance(heartbeat, (int, float)) else None
    said = (f"its heartbeat {age:.0f} s ago" if age is not None else "no heartbeat (an older ordercube)")
    if break_lock is None:
        raise InputError(f"{place.option}: the cube {place} is being written by another ordercube run ({describe(holder)}; "
                         f"{said}); wait for it to finish (or stop it), then run again. If that run is gone without "
                         f"releasing its lock (its machine died), its heartbeat stops: once it is more than "
                         f"{lease:g} s old, run again with --break-lock {holder_name(holder)}")
    if break_lock != holder_name(holder):
        raise InputError(f"--break-lock: {break_lock!r} does not name the lock's holder, which is {holder_name(holder)} "
                         f"({describe(holder)}); give --break-lock {holder_name(holder)} if that run is gone")
    if age is not None and age < lease:
        stated = "it stated" if "lease" in holder else "(ordercube's default: it stated none)"
        raise InputError(f"--break-lock: {holder_name(holder)} wrote its heartbeat {age:.0f} s ago, under the "
                         f"{lease:g} s lease {stated}: it is running; its lock is not broken. Wait for it to finish "
                         "(or stop it), or until its heartbeat is older than the lease")


def heartbeat_lock_object(place: Location, record: dict) -> bool:
    """Rewrite the lock object with ``record``'s heartbeat now, if it still holds this run's lock; False when
    another run took it (it was broken: this run's writes are no longer alone)."""
    fs, key = _lock_key(place)
    try:
        now = json.loads(sync(fs._cat_file(key)))
    except Exception:  # noqa: BLE001 - unreachable for a moment: the next beat tries again
        return True
    if not isinstance(now, dict) or not _same_holder(now, record):
        return False
    record["heartbeat"] = time.time()
    try:
        sync(fs._pipe_file(key, json.dumps(record).encode()))
    except Exception:  # noqa: BLE001 - the next beat tries again, within the lease
        pass
    return True


def drop_lock_object(place: Location, record: dict) -> None:
    """Delete the lock object if it still holds this run's lock (a release must not delete another run's lock)."""
    fs, key = _lock_key(place)
    try:
        if _same_holder(json.loads(sync(fs._cat_file(key))), record):
            sync(fs._rm(key))
    except Exception:  # noqa: BLE001 - already gone, or the store unreachable: the next run reports the lock
        pass
