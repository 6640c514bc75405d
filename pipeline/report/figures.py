"""Drawing the report's figures: fixed layouts, one save, and a record that redraws only what changed.

Speed comes from what is not done: no ``tight_layout`` (it draws every figure twice to measure its text),
no mathtext tick labels on log axes (``10^2`` is parsed by pyparsing), no minor ticks, one legend per
figure, PNG written with light compression. Margins are fixed in inches, so a panel looks the same in
every figure. A figure whose inputs, format and drawing code are unchanged since the last report into
the same folder is kept as it is (``--decide`` on one criterion redraws that criterion's figures only).
``ordercube report`` shares the drawing with a second process (:class:`Helper`) on a machine with two cores.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import re
import signal
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr

from ordercube.pipeline.files.outputs import RECORD, SOFTWARE, write_output  # the marks by which a command recognises what it wrote

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

FORMATS = ("png", "svg", "pdf")
STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
READY = "ready"  # what the figure helper sends once warmed up
DPI = 110
# Margins in inches: room for a two-line y label on the left, a title above, tick labels and x label below.
LEFT, RIGHT, TOP, BOTTOM, WSPACE, HSPACE = 1.0, 0.2, 0.4, 0.55, 1.1, 0.75
COLOUR_BAR_MARGIN = 1.2


def grid(rows: int, columns: int, *, width: float = 3.65, height: float = 2.45,
         right: float = RIGHT) -> tuple[Figure, np.ndarray]:
    """A figure of ``rows`` x ``columns`` axes of ``width`` x ``height`` inches each, margins fixed
    (``right`` inches on the right: room for a colour bar)."""
    from matplotlib.figure import Figure  # imported when drawing; never pyplot, never the global backend

    total_width = LEFT + right + columns * width + (columns - 1) * WSPACE
    total_height = TOP + BOTTOM + rows * height + (rows - 1) * HSPACE
    figure = Figure(figsize=(total_width, total_height))
    axes = figure.subplots(rows, columns, squeeze=False, gridspec_kw={
        "left": LEFT / total_width, "right": 1 - right / total_width, "bottom": BOTTOM / total_height,
        "top": 1 - TOP / total_height, "wspace": WSPACE / width, "hspace": HSPACE / height})
    return figure, axes


def panels(count: int, columns: int = 3, *, right: float = RIGHT) -> tuple[Figure, np.ndarray]:
    """``count`` panels in rows of at most ``columns``; the unused ones hidden."""
    count = max(count, 1)
    columns = min(count, columns)
    figure, axes = grid(int(np.ceil(count / columns)), columns, right=right)
    for ax in axes.ravel()[count:]:
        ax.set_visible(False)
    return figure, axes.ravel()


def colour_bar(figure: Figure, image: Any, label: str) -> None:
    """A colour bar in the right margin of a figure drawn with ``right=COLOUR_BAR_MARGIN``."""
    width, height = figure.get_size_inches()
    bar = figure.add_axes((1 - (COLOUR_BAR_MARGIN - 0.15) / width, BOTTOM / height, 0.15 / width,
                           1 - (TOP + BOTTOM) / height))
    figure.colorbar(image, cax=bar, label=label)


def log_axis(ax: Axes, axis: str, ticks: np.ndarray | None = None) -> None:
    """A log scale with plain tick labels, no minor ticks: at ``ticks`` when given (the grid's n values),
    else at 1, 2, 5 x 10^j when the data span less than a factor 30, at the powers of 10 otherwise."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullLocator

    target = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    if ticks is None:
        low, high = ax.dataLim.intervalx if axis == "x" else ax.dataLim.intervaly
        narrow = np.isfinite(low) and low > 0 and high / low < 30
        target.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if narrow else (1.0,)))
    else:
        target.set_major_locator(FixedLocator(np.asarray(ticks, dtype=float)))
    target.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    target.set_minor_locator(NullLocator())


TITLE_GID = "ordercube-title"  # the id of every title in an SVG figure: a browser can measure where it falls
CHAR_WIDTH = 0.52  # a character of DejaVu Sans, on average, in ems: how many fit on a line


def wrapped(text: str, inches: float, fontsize: float) -> str:
    """``text`` broken at spaces into lines of at most as many characters as ``inches`` hold at ``fontsize``."""
    import textwrap

    width = max(12, int(inches * 72 / (CHAR_WIDTH * fontsize)))
    return "\n".join(textwrap.fill(line, width, break_long_words=False) for line in text.split("\n"))


def title(ax: Axes, text: str) -> None:
    """A panel's title at a fixed height (matplotlib's automatic placement measures every tick label), broken into
    lines that fit the panel's width, and smaller when it takes more than two: it never runs past the figure's
    edge or its top margin."""
    figure_width, figure_height = ax.figure.get_size_inches()
    position = ax.get_position()
    inches = position.width * figure_width
    fontsize = 9.0
    lines = wrapped(text, inches, fontsize)
    if lines.count("\n") >= 2:
        fontsize = 7.0
        lines = wrapped(text, inches, fontsize)
    ax.set_title(lines, fontsize=fontsize, y=1.0, pad=4, gid=TITLE_GID)


def within_noise_band(ax: Axes, ks: Any, color: Any = "C1", label: str | None = "within noise of k̂") -> None:
    """Shade the k's that cannot be told apart from k̂ (a run of neighbours as one band, each k +- 0.5), when there
    are two or more; labelled once for the legend."""
    ks = sorted(int(k) for k in ks)
    if len(ks) < 2:
        return
    runs, start = [], ks[0]
    for before, k in zip(ks, ks[1:]):
        if k != before + 1:
            runs.append((start, before))
            start = k
    runs.append((start, ks[-1]))
    for i, (low, high) in enumerate(runs):
        ax.axvspan(low - 0.5, high + 0.5, color=color, alpha=0.12, lw=0, label=label if i == 0 else None)


def say(ax: Axes, text: str) -> None:
    """A panel that states why it has no curve."""
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=8, transform=ax.transAxes, wrap=True)
    ax.set(xticks=[], yticks=[])


def save(figure: Figure, path: Path) -> None:
    """Write ``figure`` in the format of ``path``'s suffix (PNG at ``DPI`` with fast compression, its ``Software``
    text naming ordercube)."""
    options: dict[str, Any] = ({"pil_kwargs": {"compress_level": 1}, "metadata": {"Software": SOFTWARE}}
                               if path.suffix == ".png" else {})
    buffer = io.BytesIO()
    figure.savefig(buffer, format=path.suffix[1:] or "png", dpi=DPI, **options)
    write_output(path, buffer.getvalue())  # never through a symbolic link planted at the path


def _feed(digest: Any, value: Any) -> None:
    """Add ``value`` to ``digest`` by content: arrays by bytes, labelled data with its labels."""
    if isinstance(value, xr.Dataset):
        for name in sorted(map(str, value.data_vars)):
            _feed(digest, (name, value[name]))
    elif isinstance(value, xr.DataArray):
        _feed(digest, (value.dims, {str(c): value[c].values for c in value.coords}, value.values))
    elif isinstance(value, np.ndarray):
        digest.update(f"{value.dtype}{value.shape}".encode())
        digest.update(np.ascontiguousarray(value).tobytes() if value.dtype != object else repr(value.tolist()).encode())
    elif isinstance(value, pd.DataFrame):
        digest.update(value.to_csv().encode())
    elif isinstance(value, Mapping):
        for key in sorted(value, key=str):
            _feed(digest, (str(key), value[key]))
    elif isinstance(value, (list, tuple)):
        digest.update(f"[{len(value)}".encode())
        for item in value:
            _feed(digest, item)
    elif is_dataclass(value) and not isinstance(value, type):
        _feed(digest, (type(value).__name__, asdict(value)))
    else:
        digest.update(repr(value).encode())


def _code_digest(draw: Callable[..., Any]) -> str:
    """The drawing function's module and this one, by content: a changed figure code redraws."""
    digest = hashlib.sha256()
    for module in (sys.modules[draw.__module__], sys.modules[__name__]):
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()


MIME = {"png": "image/png", "svg": "image/svg+xml"}
FIGURE_STYLE = "margin: 0 0 1em; max-width: 100%"  # the page's own style (no style sheet is loaded)
SHOWN = "ordercube-figure:"  # a placeholder's mark in a section's HTML fragment (:meth:`Figures.shown`)


def embedded(path: Path, caption: str) -> str:
    """A figure as an image in the page (a data URI: the page loads nothing) with its caption, or a link for PDF."""
    escaped = html.escape(caption)
    if path.suffix[1:] not in MIME:
        return f'<p><a href="{html.escape(path.name)}">{html.escape(path.name)}</a>: {escaped}</p>'
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure id="{html.escape(path.stem)}" style="{FIGURE_STYLE}"><img alt="{html.escape(path.stem)}" '
            f'src="data:{MIME[path.suffix[1:]]};base64,{data}"><figcaption style="max-width: 36em">{escaped}'
            "</figcaption></figure>")


@dataclass(frozen=True)
class Job:
    """One figure to draw: ``function(*args, **kwargs)`` saved at ``path``."""

    path: Path
    function: Callable[..., Figure | None]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


def run_job(job: Job) -> tuple[str, str]:
    """Draw ``job``: ``("drawn" | "nothing" | "failed", reason)``. A figure that fails is a line in the report,
    never a traceback that loses the rest of it."""
    try:
        figure = job.function(*job.args, **job.kwargs)
        if figure is None:
            return "nothing", ""
        save(figure, job.path)
        return "drawn", ""
    except Exception as error:  # noqa: BLE001 - any drawing error is reported with the figure's name
        job.path.unlink(missing_ok=True)
        return "failed", f"{type(error).__name__}: {error}"


def _warm_up() -> None:
    """What a first figure pays: the data's libraries (a figure's inputs are labelled arrays), matplotlib, and a
    small figure drawn (fonts, text layout, PNG)."""
    import io

    from ordercube.pipeline.system.duck_arrays import defer_dask_array_import

    defer_dask_array_import()
    _ = xr.DataArray(np.zeros(2), dims="k") + 1.0
    figure, axes = panels(1)
    axes[0].plot([1, 2], [1, 2], marker="o", label="k = 2")
    axes[0].legend(fontsize=7)
    title(axes[0], "warm-up")
    figure.savefig(io.BytesIO(), format="png", dpi=DPI)


def _serve(connection: Any) -> None:
    """The helper process: warm up while the parent reads the cube, then draw what it is sent.

    Ctrl-C (sent to the whole process group) is the parent's to handle: ignored here. SIGTERM, by which the
    parent stops it, ends it at once and silently. Both were blocked across the fork (:meth:`Helper.start`), so
    a signal arriving meanwhile meets these dispositions, never the parent's handler and its traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    _warm_up()
    try:
        connection.send(READY)
    except (OSError, ValueError):
        return
    while True:
        try:
            job = connection.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        connection.send(run_job(job))


class Helper:
    """A second process that draws figures beside this one, on a machine with two cores or more.

    Started by ``ordercube report`` before it reads the cube, while the process has one thread (forking a
    process with threads can deadlock the child): it imports matplotlib meanwhile, says when it is ready, then
    takes one figure at a time, lent only while another is left for this process to draw meanwhile. Where it
    cannot start (one core, another platform, threads already running), there is none.
    """

    def __init__(self, process: Any, connection: Any) -> None:
        self.process, self.connection = process, connection
        self._ready = False

    @property
    def ready(self) -> bool:
        """Whether the helper has warmed up (imported matplotlib, drawn its first figure): until then a figure lent
        to it would wait for its warm-up, which on two busy cores outlasts drawing the figure here."""
        if not self._ready:
            try:
                self._ready = bool(self.connection.poll()) and self.connection.recv() == READY
            except (EOFError, OSError):
                return False
        return self._ready

    @classmethod
    def start(cls) -> Helper | None:
        import threading

        from ordercube.pipeline.system.cores import usable_cores

        if sys.platform != "linux" or usable_cores() < 2 or threading.active_count() > 1:
            return None
        import multiprocessing

        context = multiprocessing.get_context("fork")
        mine, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(theirs,), daemon=True, name="ordercube-figures")
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # one that came meanwhile is handled here, now
        theirs.close()
        return cls(process, mine)

    def stop(self, *, now: bool = False) -> None:
        """End the helper: after the figures it was sent, or ``now`` (the report ended early: an error or an
        interrupt), without waiting for it and without a word from it. One still warming up was lent nothing: it
        is ended at once, not waited for."""
        if now or not self.ready:
            self.process.terminate()
        try:
            self.connection.send(None)
        except (OSError, ValueError):
            pass
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout=5)
        self.connection.close()


class Figures:
    """The figures of one report folder, in ``fmt``; each drawn only when its inputs changed.

    ``draw(stem, function, *args, **kwargs)`` asks for ``function(*args, **kwargs)`` (a matplotlib ``Figure``,
    or None when there is nothing to draw) unless ``stem.fmt`` exists and was drawn from the same inputs, format
    and code. ``finish()`` draws what was asked for (shared with ``helper``, a second process, when there is
    one), writes the record, and deletes the figures an earlier report drew that this one did not (a criterion
    no longer in the cube, a figure that no longer applies); files it did not draw stay. A figure that fails is
    listed in ``failed`` with its reason. ``shown`` asks for one that a section shows in its own HTML fragment.
    """

    def __init__(self, folder: Path, fmt: str = "png", helper: Helper | None = None) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"figure format {fmt!r} is not one of {list(FORMATS)}")
        self.folder, self.fmt, self.helper = folder, fmt, helper
        self.drawn: list[str] = []
        self.kept: list[str] = []
        self.failed: list[tuple[str, str]] = []
        self.by_helper = 0  # figures the helper drew
        try:
            self._before: dict[str, str] = json.loads((folder / RECORD).read_text())
        except (OSError, ValueError):
            self._before = {}
        self._now: dict[str, str] = {}
        self._shown_by_sections: dict[str, str] = {}  # a figure a section shows: its caption
        self._code: dict[Callable[..., Any], str] = {}
        self._jobs: list[Job] = []

    def draw(self, stem: str, function: Callable[..., Figure | None], /, *args: Any, **kwargs: Any) -> None:
        """Ask for ``folder/stem.fmt`` drawn by ``function`` (kept when unchanged; drawn by ``finish``)."""
        path = self.folder / f"{stem}.{self.fmt}"
        if function not in self._code:
            self._code[function] = _code_digest(function)
        digest = hashlib.sha256(f"{stem}|{self.fmt}|{function.__qualname__}|{self._code[function]}".encode())
        _feed(digest, (args, kwargs))
        self._now[path.name] = digest.hexdigest()
        if self._before.get(path.name) == self._now[path.name] and path.is_file():
            self.kept.append(path.name)
        else:
            self._jobs.append(Job(path, function, args, kwargs))

    def shown(self, stem: str, caption: str, function: Callable[..., Figure | None], /, *args: Any,
              **kwargs: Any) -> str:
        """As :meth:`draw`, for a section that shows the figure in its own HTML fragment, with ``caption``: a
        placeholder for that fragment, which :meth:`resolved` replaces, once :meth:`finish` has drawn the figures
        (the helper drawing its share), by the figure and its caption, or by nothing when there was nothing to draw
        or it failed (then in ``failed``). The figure is left out of :attr:`names`."""
        path = self.folder / f"{stem}.{self.fmt}"
        self.draw(stem, function, *args, **kwargs)
        self._shown_by_sections[path.name] = caption
        return f"<!--{SHOWN}{path.name}-->"

    def resolved(self, fragment: str) -> str:
        """``fragment`` with each placeholder of :meth:`shown` replaced (after :meth:`finish`)."""
        return re.sub(f"<!--{SHOWN}(.*?)-->", lambda found: embedded(self.folder / found[1], self._shown_by_sections[found[1]])
                      if found[1] in self._now else "", fragment)

    @property
    def names(self) -> list[str]:
        """The figures of this report (drawn or kept) in the order they were asked for, but those a section shows
        (:meth:`shown`)."""
        return [name for name in self._now if name not in self._shown_by_sections]

    def _done(self, job: Job, outcome: tuple[str, str]) -> None:
        state, reason = outcome
        if state == "drawn":
            self.drawn.append(job.path.name)
            return
        del self._now[job.path.name]
        if state == "failed":
            self.failed.append((job.path.name, reason))

    def _draw_all(self) -> None:
        """The asked-for figures, the helper taking the next one whenever it is free."""
        queue, lent = list(self._jobs), None
        while queue or lent is not None:
            if self.helper is not None and lent is None and len(queue) > 1 and self.helper.ready:
                lent = queue.pop(0)
                try:
                    self.helper.connection.send(lent)
                except (OSError, ValueError):  # the helper is gone: draw its share here
                    queue.insert(0, lent)
                    self.helper, lent = None, None
            if queue:
                job = queue.pop(0)
                self._done(job, run_job(job))
            if lent is not None and (not queue or self.helper.connection.poll()):
                try:
                    self._done(lent, self.helper.connection.recv())
                    self.by_helper += 1
                except (EOFError, OSError):
                    queue.insert(0, lent)
                    self.helper = None
                lent = None

    def finish(self) -> None:
        self._draw_all()
        for name in set(self._before) - set(self._now):
            if Path(name).name == name and Path(name).suffix[1:] in FORMATS:  # only a figure of this folder
                (self.folder / name).unlink(missing_ok=True)
        write_output(self.folder / RECORD, json.dumps(self._now, indent=1, sort_keys=True))
