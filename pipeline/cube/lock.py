"""One writer per cube: an advisory lock file beside it, naming its holder (taken through
:meth:`ordercube.pipeline.cube.owner.Cube.lock`).

``results/quickstart.zarr`` is locked through ``results/quickstart.zarr.lock``, beside the folder the path
resolves to (a symbolic link to the cube, or a relative spelling of its path, takes the same lock), held
with ``flock`` for as long as a run writes (creating, growing, repairing or filling the cube). The kernel
drops the lock when its holder dies, however it dies, so a lock left by a killed run is stale by
construction: the next run takes it and says so. The file holds the holder's host, pid and start time for
the message a second writer gets; it is removed on release.

A cube on object storage (``s3://bucket/x.zarr``) has no file to lock beside it: it is locked through a
local file keyed by its URL, spelled one way (:meth:`ordercube.pipeline.files.location.Location.canonical_url`), under
``~/.cache/ordercube/locks`` (``$XDG_CACHE_HOME``), which keeps two runs *on this machine* from writing it,
and on S3 also through a lock object ``s3://bucket/x.zarr.lock`` created by a conditional write (see
:mod:`ordercube.pipeline.cube.remote`), which keeps out runs on other machines
(see docs/guide/object-storage.md for what that does not cover).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import stat
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

from ordercube.pipeline.errors import InputError
from ordercube.pipeline.files.location import Location, location
from ordercube.pipeline.files.inputfile import kind_of
from ordercube.pipeline.cube.remote import (
    BEATS_PER_LEASE, drop_lock_object, heartbeat_lock_object, holder_lease, lease_seconds, supports_lock_object,
    take_lock_object,
)


def lock_path(cube: Path) -> Path:
    """The lock file of the local cube at ``cube``: beside the folder it really is (symbolic links followed, a
    relative path made absolute), so that every spelling of one cube's path takes the same lock."""
    real = Path(os.path.realpath(cube))
    return real.with_name(real.name + ".lock")


class CubeLock:
    """Exclusive, non-blocking writer lock of the cube at ``cube`` (a context manager).

    ``acquire`` raises ``InputError`` naming the holder when another live process writes the cube.
    ``stale`` is the holder record a dead process left behind (None when the lock was free).
    """

    def __init__(self, cube: Path | str | Location, break_lock: str | None = None) -> None:
        place = location(cube)
        self.break_lock = break_lock  # HOST:PID of a dead holder of an S3 cube's lock object, to be taken over
        self.place = place
        self.cube = str(place)
        self.local = place.is_local
        self.path = lock_path(place.local()) if place.is_local else place.local_lock_file()
        self.stale: dict | None = None
        self._fd: int | None = None
        self._object: dict | None = None  # the record in the lock object of an S3 cube, while held
        self._beating: tuple[threading.Event, threading.Thread] | None = None  # the heartbeat: set to stop, its thread
        self.broken = False  # another run broke this run's lock object while it ran
        self._stale_age: tuple[float, float] | None = None  # a taken lock object's heartbeat age and lease, seconds

    def acquire(self) -> CubeLock:
        lease = lease_seconds() if supports_lock_object(self.place) else None  # a bad setting: exit 2 before locking
        while True:
            try:
                if not self.local:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = _open_lock(self.path)
            except OSError as error:
                where = ("beside the cube so that two runs never write one cube: choose an --out in a folder you can "
                         "write to") if self.local else ("in your cache folder so that two runs on this machine never "
                                                         "write one cube: make it writable, or set XDG_CACHE_HOME")
                raise InputError(f"--out: cannot create the lock file {self.path} ({error.strerror}); ordercube writes "
                                 f"it {where}") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_holder(fd)
                os.close(fd)
                raise InputError(f"--out: the cube {self.cube} is being written by another ordercube run "
                                 f"({_describe(holder)}); wait for it to finish (or stop it), then run again") from None
            except OSError as error:  # a file system without flock (some network or FUSE mounts)
                os.close(fd)
                raise InputError(f"--out: cannot lock {self.path} ({error.strerror}): its file system does not support "
                                 "file locks, which keep two runs from writing one cube; put the cube on a local "
                                 "or lock-capable file system") from None
            if _same_file(fd, self.path):  # not unlinked by a releasing holder between our open and flock
                break
            os.close(fd)
        previous = _read_holder(fd)
        self.stale = previous or None
        record = {"host": socket.gethostname(), "pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                  "command": " ".join(sys.argv[:4])}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        self._fd = fd
        if supports_lock_object(self.place):
            record["lease"], record["heartbeat"] = lease, time.time()
            try:
                taken = take_lock_object(self.place, record, _describe, self.break_lock)
                if taken is not None:
                    self.stale = taken
                    beat = taken.get("heartbeat")
                    if isinstance(beat, (int, float)):
                        self._stale_age = (time.time() - float(beat), holder_lease(taken))
            except BaseException:
                self.release()
                raise
            self._object = record
            stop = threading.Event()
            beat = threading.Thread(target=self._beat, args=(stop, record), daemon=True, name="ordercube-lock-heartbeat")
            beat.start()
            self._beating = (stop, beat)
        return self

    def _beat(self, stop: threading.Event, record: dict) -> None:
        """Rewrite the lock object's heartbeat :data:`BEATS_PER_LEASE` times per lease until ``stop``: a run on
        another machine may break the lock only once the heartbeat is older than the lease (its holder is gone)."""
        while not stop.wait(record["lease"] / BEATS_PER_LEASE):
            if not heartbeat_lock_object(self.place, record):
                self.broken = True
                return

    def release(self) -> None:
        if self._fd is None:
            return
        if self._beating is not None:  # stopped, and a beat in flight finished, before the object is deleted: a
            stop, beat = self._beating  # beat written after the delete would leave a lock object nobody holds
            stop.set()
            beat.join(timeout=self._object["lease"] / BEATS_PER_LEASE if self._object else None)
            self._beating = None
        if self._object is not None:
            record, self._object = self._object, None
            drop_lock_object(self.place, record)
        try:
            os.unlink(self.path)  # while still holding it: a waiter that opened this file sees it is gone
        except FileNotFoundError:
            pass
        os.close(self._fd)
        self._fd = None

    @property
    def stale_note(self) -> str | None:
        """The line a run prints when it took over the lock of a run that died (None when the lock was free)."""
        if self.stale is None:
            return None
        age = ("" if self._stale_age is None else
               f" (its last heartbeat {self._stale_age[0]:.0f} s old, its lease {self._stale_age[1]:g} s)")
        return (f"a previous run ({_describe(self.stale)}) ended without finishing; its lock was stale{age} and is "
                "taken over")

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> CubeLock:
        return self.acquire()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        """Write what the run's writers still hold (a sharded cube's blocks: :mod:`ordercube.pipeline.cube.writes`),
        then let go. After a failure that write is a best effort: what it cannot store is computed again."""
        from ordercube.pipeline.cube.writes import flush_open_writers

        try:
            flush_open_writers()
        except Exception:  # noqa: BLE001 - the run's own error is the one to report; its cells stay pending
            if kind is None:
                raise
        finally:
            self.release()


def _open_lock(path: Path) -> int:
    """The lock file opened for reading and writing (created when missing), never through a symbolic link:
    a path that exists and is not a regular file (a link, folder, pipe, device) is refused naming it."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        raise InputError(f"--out: the cube's lock file {path} exists and is {kind_of(mode)}, which ordercube will not "
                         "open or remove; move it away (runs create a regular file there), or choose another --out")
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC
    fd = os.open(path, flags, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped between the check and the open
        os.close(fd)
        raise InputError(f"--out: the cube's lock file {path} is not a regular file; move it away, or choose "
                         "another --out")
    return fd


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def _read_holder(fd: int) -> dict:
    try:
        return json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (ValueError, UnicodeDecodeError):
        return {}


def _describe(holder: dict) -> str:
    if not holder:
        return "holder unknown"
    return f"pid {holder.get('pid')} on host {holder.get('host')}, started {holder.get('started')}"
