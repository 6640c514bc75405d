"""Ctrl-C and SIGTERM, noticed even when the KeyboardInterrupt they raise is lost.

Python raises a signal's KeyboardInterrupt in whatever code runs when it arrives; in a garbage-collector
callback (distributed registers one to time collections), a ``__del__`` or a weakref callback it is
printed as "Exception ignored" and dropped, and the sweep went on to the end (exit 0 instead of 130, seen
once in CI). The CLI's handler also records the request, and the executors look at it between tasks.
"""

from __future__ import annotations

import threading
from types import FrameType

REQUESTED = threading.Event()


def on_signal(signum: int, frame: FrameType | None) -> None:
    """The CLI's handler for SIGINT and SIGTERM: record the request, then interrupt the running code."""
    REQUESTED.set()
    raise KeyboardInterrupt


def check() -> None:
    """Raise KeyboardInterrupt if a stop was asked for and its own KeyboardInterrupt was swallowed."""
    if REQUESTED.is_set():
        raise KeyboardInterrupt
