"""The one timing helper of the benchmarks (each runs as ``python benchmarks/NAME.py``, so this folder is on the path)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_seconds(function: Callable[[], Any], repeats: int = 3) -> float:
    """The shortest of ``repeats`` wall-clock timings of ``function()``: the least disturbed by the machine's load."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        times.append(time.perf_counter() - started)
    return min(times)
