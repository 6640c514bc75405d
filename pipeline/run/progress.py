"""The sweep's progress bar: cells done/total, rate, ETA and failures (rich in a terminal, one updated line in
Jupyter).

The ETA is seeded with the run's estimate (:mod:`ordercube.pipeline.run.estimate`): from speed alone it is poor at
the start, when few and uneven cells have arrived. It blends the estimate's remaining time with the pace observed
so far, trusting the pace more as the done share of the modelled work grows; that share weighs each cell by the
cost model, so a grid whose large-n cells come last is not promised an early end.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TaskProgressColumn, TextColumn
from rich.text import Text


#: A bar is drawn for a run estimated at more than this (seconds); a shorter one ends before a bar says much.
PROGRESS_FROM_SECONDS = 10.0


def eta_seconds(*, elapsed: float, done: float, estimate: float | None) -> float | None:
    """The remaining seconds after ``elapsed`` seconds with the share ``done`` (0-1) of the work done, for a run
    estimated at ``estimate`` seconds (None: the pace alone). None while nothing is known."""
    paced = elapsed * (1 - done) / done if done > 0 else None
    if estimate is None:
        return paced
    # past the estimate, the work left takes its share of the time spent so far
    prior = estimate - elapsed if elapsed < estimate else (1 - done) * elapsed
    if paced is None:
        return prior
    return (1 - done) * prior + done * paced


def clock(seconds: float | None) -> str:
    if seconds is None:
        return "-:--:--"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class _ETAColumn(ProgressColumn):
    def __init__(self, bar: SweepProgress) -> None:
        super().__init__()
        self.bar = bar

    def render(self, task: Any) -> Text:
        return Text(clock(self.bar.eta()), style="progress.remaining")


class SweepProgress:
    """A context manager around a progress bar; silent when ``enabled`` is False.

    ``estimate``: the run's estimated seconds from its start (seeds the ETA); ``weight``: the modelled seconds of a
    chunk and ``work`` their total (the done share of the work; without them, the share of the cells).
    """

    def __init__(self, total: int, *, enabled: bool = True, estimate: float | None = None,
                 weight: Callable[[Any], float] | None = None, work: float | None = None) -> None:
        self.failed = 0
        self.total, self.done_cells, self.done_work = total, 0, 0.0
        self.estimate, self.weight, self.work = estimate, weight, work
        self.enabled = enabled
        self.started = time.perf_counter()
        self._console = Console(stderr=True)
        self._notebook = enabled and self._console.is_jupyter
        self._handle: Any = None
        self._shown = 0.0
        self._progress = Progress(
            TextColumn("cells"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
            TextColumn("{task.fields[rate]:>9} cells/s"), TextColumn("ETA"), _ETAColumn(self),
            TextColumn("failed: {task.fields[failed]}"),
            console=self._console, disable=not enabled or self._notebook, refresh_per_second=4,
        )
        self._task = self._progress.add_task("sweep", total=total, rate="-", failed=0)

    def share(self) -> float:
        """The done share of the work (0-1)."""
        if self.weight is not None and self.work:
            return min(self.done_work / self.work, 1.0)
        return self.done_cells / self.total if self.total else 1.0

    def eta(self) -> float | None:
        return eta_seconds(elapsed=time.perf_counter() - self.started, done=self.share(), estimate=self.estimate)

    def line(self) -> str:
        """The bar as one line of text (what a notebook shows)."""
        elapsed = time.perf_counter() - self.started
        rate = f"{self.done_cells / elapsed:.1f}" if self.done_cells and elapsed > 0 else "-"
        filled = int(30 * self.done_cells / self.total) if self.total else 30
        return (f"cells {'#' * filled}{'.' * (30 - filled)} {self.done_cells}/{self.total} "
                f"{100 * self.done_cells / max(self.total, 1):.0f}% {rate} cells/s ETA {clock(self.eta())} "
                f"failed: {self.failed}")

    def __enter__(self) -> SweepProgress:
        self.started = time.perf_counter()
        if self._notebook:
            self._show(force=True)
        else:
            self._progress.start()
        return self

    def _show(self, *, force: bool = False) -> None:
        from IPython.display import display

        now = time.perf_counter()
        if not force and now - self._shown < 0.25:
            return
        self._shown = now
        text = _Line(self.line())
        if self._handle is None:
            self._handle = display(text, display_id=True)
        else:
            self._handle.update(text)

    def advance(self, cells: int, *, failed: int = 0, chunk: Any = None) -> None:
        self.failed += failed
        self.done_cells += cells
        if self.weight is not None and chunk is not None:
            self.done_work += self.weight(chunk)
        elif self.work and self.total:  # cells without a chunk (skipped by an adaptive rule): their mean share
            self.done_work += self.work * cells / self.total
        if self._notebook:
            self._show()
            return
        self._progress.advance(self._task, cells)
        speed = self._progress.tasks[0].speed
        self._progress.update(self._task, failed=self.failed, rate=f"{speed:.1f}" if speed else "-")

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._notebook:
            self._show(force=True)
            sys.stderr.flush()
        else:
            self._progress.stop()


class _Line:
    """Text a notebook shows as it is (no quotes around it, as a str's repr would have)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text
