"""The sweep's progress bar: cells done/total, rate, ETA and failures (rich)."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn


class SweepProgress:
    """A context manager around a rich progress bar; silent when ``enabled`` is False."""

    def __init__(self, total: int, *, enabled: bool = True) -> None:
        self.failed = 0
        self._progress = Progress(
            TextColumn("cells"), BarColumn(), MofNCompleteColumn(), TaskProgressColumn(),
            TextColumn("{task.fields[rate]:>9} cells/s"), TextColumn("ETA"), TimeRemainingColumn(),
            TextColumn("failed: {task.fields[failed]}"),
            console=Console(stderr=True), disable=not enabled, refresh_per_second=4,
        )
        self._task = self._progress.add_task("sweep", total=total, rate="-", failed=0)

    def __enter__(self) -> SweepProgress:
        self._progress.start()
        return self

    def advance(self, cells: int, *, failed: int = 0) -> None:
        self.failed += failed
        self._progress.advance(self._task, cells)
        speed = self._progress.tasks[0].speed
        self._progress.update(self._task, failed=self.failed, rate=f"{speed:.1f}" if speed else "-")

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._progress.stop()
