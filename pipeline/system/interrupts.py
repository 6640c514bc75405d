"""Ctrl-C and SIGTERM, noticed even when the KeyboardInterrupt they raise is lost.

Python raises a signal's KeyboardInterrupt in whatever code runs when it arrives; in a garbage-collector
callback (distributed registers one to time collections), a ``__del__`` or a weakref callback it is
printed as "Exception ignored" and dropped, and the sweep went on to the end (exit 0 instead of 130, seen
once in CI). The CLI's handler also records the request, and the executors look at it between tasks.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

REQUESTED = threading.Event()
_deferring = 0  # writes under way that a signal must not cut (the handler runs in the main thread)


def on_signal(signum: int, frame: FrameType | None) -> None:
    """The CLI's handler for SIGINT and SIGTERM: record the request, then interrupt the running code (inside
    :func:`deferred`, only record it: the executors stop at their next :func:`check`)."""
    REQUESTED.set()
    if not _deferring:
        raise KeyboardInterrupt


@contextmanager
def deferred() -> Iterator[None]:
    """A block of writes that a Ctrl-C or SIGTERM lets finish: a KeyboardInterrupt raised inside zarr's event-loop
    bridge left coroutines never awaited (printed as warnings at exit) and a write half done."""
    global _deferring
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1


def check() -> None:
    """Raise KeyboardInterrupt if a stop was asked for and its own KeyboardInterrupt was swallowed."""
    if REQUESTED.is_set():
        raise KeyboardInterrupt
