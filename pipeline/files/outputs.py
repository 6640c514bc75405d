"""Where a command may write besides its cube: one guard for every file and folder ordercube writes.

``report``, ``replay`` and ``partition`` (and any command that writes) pass each path they will write
through :func:`output_file` or :func:`output_folder` before writing anything. A path is compared after it
is resolved (symbolic links followed, a relative path made absolute), and refused (``InputError`` naming
the option, the path and the fix) when it is

- inside a zarr store: any cube, an array of one, or one being created (a folder that is, or lies below,
  a folder holding a ``zarr.json``); so never a cube's own file either, nor its writer lock file
  (``CUBE.lock`` beside it, see :mod:`ordercube.pipeline.cube.lock`);
- an existing file the command did not write. A command recognises its own earlier output: a CSV by the
  leading columns of its header, a figure by the ``Software`` text ordercube writes into its PNGs
  (:data:`SOFTWARE`), a report folder by the record of figures every report keeps in it
  (:data:`RECORD`, written first into a new folder so an interrupted report's folder is
  recognised too). Anything else there is left alone;
- a symbolic link (an output file's own path), or, in a report folder at any depth, anything but regular
  files and folders (a link, named pipe, device or socket), or a folder named as a file a report writes.

Every file is then written by :func:`write_output`: a new temporary file in the same folder renamed over the
path, so that a link planted there after the check is replaced, never written through. ``run``'s cube path
goes through :func:`cube_output` (never ``X.lock``, nor inside another cube).
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ordercube.pipeline.errors import InputError
from ordercube.pipeline.files.inputfile import kind_of
from ordercube.pipeline.files.location import Location, location

#: The PNG ``Software`` text of the figures a command writes beside the cube (how they are recognised).
SOFTWARE = "ordercube"
#: The record of the figures a report drew (:class:`ordercube.pipeline.report.figures.Figures`), which also marks a report's folder.
RECORD = ".ordercube-figures.json"
#: The suffixes of the files a report writes in its folder (tables, page, figures, record).
REPORT_SUFFIXES = (".csv", ".html", ".png", ".svg", ".pdf", ".json")
HEAD_BYTES = 4096  # what is read of an existing file to recognise it
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Output:
    """A kind of file a command writes: its name for messages and how an earlier one is recognised."""

    what: str
    recognise: Callable[[bytes], bool]


def csv_header(*columns: str) -> Callable[[bytes], bool]:
    """Recognises a CSV whose header starts with ``columns`` (the columns that name the table)."""
    leading = ",".join(columns).encode()

    def recognise(head: bytes) -> bool:
        first = head.split(b"\n", 1)[0].rstrip(b"\r")
        return first == leading or first.startswith(leading + b",")
    return recognise


def ordercube_png(head: bytes) -> bool:
    """A PNG whose ``Software`` text chunk (written before the image data) names ordercube."""
    return head.startswith(PNG_SIGNATURE) and b"tEXtSoftware\x00" + SOFTWARE.encode() in head


REPLAY_TABLE = Output("replay table", csv_header("dataset", "n", "method", "criterion", "trials", "fixed_k_hat"))
REPLAY_FIGURE = Output("replay figure", ordercube_png)
PARTITION_LABELS = Output("partition's labels", csv_header("row", "cluster"))
PARTITION_CLUSTERS = Output("partition's clusters", csv_header("cluster", "size", "jaccard_mean"))


def write_output(path: Path, data: bytes | str, key: str = "--out") -> None:
    """Write ``data`` to ``path`` without following a symbolic link there: into a new file of a random name in
    the same folder (``O_EXCL | O_NOFOLLOW``: never an existing file or link), then renamed over ``path``, which
    replaces a link planted there instead of writing through it. ``InputError`` naming ``key`` when it fails."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(temporary, flags, 0o666)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
            os.replace(temporary, path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    except OSError as error:
        raise InputError(f"{key}: cannot write {path} ({error.strerror}); choose a path you can write to, "
                         "with nothing but ordercube's own files at it") from None


def write_csv(frame: object, path: Path, key: str = "--out") -> None:
    """A pandas table as CSV (no index) at ``path``, by :func:`write_output`."""
    write_output(path, frame.to_csv(index=False), key)  # type: ignore[attr-defined]


def enclosing_store(path: Path) -> Path | None:
    """The outermost folder among ``path`` (resolved) and its parents that holds a ``zarr.json``: the cube
    (or other zarr store) that ``path`` is, or lies in; None when there is none."""
    resolved = path.resolve()
    for folder in reversed((resolved, *resolved.parents)):
        if (folder / "zarr.json").is_file():
            return folder
    return None


def _outside_stores(path: Path, key: str) -> Path:
    resolved = Path(path).expanduser().resolve()
    store = enclosing_store(resolved)
    if store is None and resolved.suffix == ".lock" and (resolved.with_suffix("") / "zarr.json").is_file():
        raise InputError(f"{key}: {resolved} is the writer lock file of the cube {resolved.with_suffix('')}, which "
                         "its runs open and rewrite; choose another path")
    if store is not None:
        where = "is the cube itself" if store == resolved else f"is inside the cube {store}"
        raise InputError(f"{key}: {resolved} {where}; only 'run' writes inside the cube (a zarr store): "
                         "choose a path outside it")
    return resolved


def cube_output(path: str | os.PathLike[str], key: str = "--out") -> Path:
    """The local cube path ``run`` writes, resolved and checked (``InputError`` naming ``key`` otherwise): not a
    name ending in ``.lock`` (``X.lock`` is the writer lock file of a cube ``X``, :mod:`ordercube.pipeline.cube.lock`), nor a
    path inside another cube (a zarr store); the cube itself, new or existing, is what ``run`` writes."""
    resolved = Path(path).expanduser().resolve()
    if resolved.suffix == ".lock":
        raise InputError(f"{key}: {resolved} ends in .lock, the name of the writer lock file of the cube "
                         f"{resolved.with_suffix('')} beside it; choose a cube path not ending in .lock (e.g. ending in .zarr)")
    store = enclosing_store(resolved)
    if store is not None and store != resolved:
        raise InputError(f"{key}: {resolved} is inside the cube {store} (a zarr store); a cube goes in its own "
                         "folder: choose a path outside it")
    return resolved


def output_file(path: str | os.PathLike[str], output: Output, key: str = "--out") -> Path:
    """``path`` resolved, checked for ``output`` to be written there (``InputError`` naming ``key`` otherwise):
    outside every zarr store, in an existing writable folder, and new or an earlier ``output`` of this command."""
    given = Path(path).expanduser()
    if given.is_symlink():
        raise InputError(f"{key}: {given} is a symbolic link (to {os.readlink(given)}), which ordercube does not write "
                         f"through; give the path of the {output.what} itself, or another path")
    resolved = _outside_stores(given, key)
    try:
        info = os.lstat(resolved)
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise InputError(f"{key}: cannot write {resolved} ({error.strerror}); choose another path") from None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            raise InputError(f"{key}: {resolved} is a folder; give the path of a file (the {output.what})")
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{key}: {resolved} exists and is {kind_of(info.st_mode)}, not a {output.what} written "
                             "by ordercube, which will not write there; choose another path")
        if not output.recognise(_head(resolved)):
            raise InputError(f"{key}: {resolved} exists and is not a {output.what} written by ordercube, which will "
                             "not overwrite it; choose another path, or move that file away")
    folder = resolved.parent
    if not folder.is_dir():
        raise InputError(f"{key}: the folder of {resolved} does not exist; create it, or give a path in an existing folder")
    if not os.access(folder, os.W_OK | os.X_OK) or (info is not None and not os.access(resolved, os.W_OK)):
        raise InputError(f"{key}: cannot write {resolved} (permission denied); choose a path you can write to")
    return resolved


def _head(path: Path) -> bytes:
    """The first bytes of the regular file ``path`` (opened without waiting, should it be swapped for a pipe)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as handle:
        return handle.read(HEAD_BYTES) if stat.S_ISREG(os.fstat(handle.fileno()).st_mode) else b""


def output_folder(path: str | os.PathLike[str], record: str, key: str = "--out") -> Path:
    """The report folder ``path`` resolved and checked (``InputError`` naming ``key`` otherwise): outside
    every zarr store, creatable, and new, empty or an earlier report's (it holds ``record``)."""
    resolved = _outside_stores(Path(path), key)
    if resolved.exists() and not resolved.is_dir():
        raise InputError(f"{key}: {resolved} exists and is {kind_of(os.stat(resolved).st_mode)}, not a folder; "
                         "choose a folder for the report")
    existing = next(folder for folder in (resolved, *resolved.parents) if folder.exists())
    if not existing.is_dir():
        raise InputError(f"{key}: cannot create the report folder {resolved}: {existing} is a file, not a folder; "
                         "choose another folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{key}: cannot create the report folder {resolved}: {existing} is not writable; "
                         "choose a folder you can write to")
    if existing == resolved and any(resolved.iterdir()) and not (resolved / record).is_file():
        raise InputError(f"{key}: {resolved} holds files but no ordercube report (no {record} in it), and the report "
                         "would overwrite files of the same names there; choose a new or empty folder")
    if existing == resolved:
        _only_files_and_folders(resolved, key)
    return resolved


def _only_files_and_folders(folder: Path, key: str) -> None:
    """Refuse a report folder holding, at any depth, anything but regular files and folders (a symbolic link,
    a named pipe or a device there could redirect or block what the report writes), or a folder named as the
    files a report writes (``index.html/``), which would stop it half-way."""
    pending = [folder]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                mode = entry.stat(follow_symlinks=False).st_mode
                if stat.S_ISDIR(mode) and Path(entry.name).suffix.lower() in REPORT_SUFFIXES:
                    raise InputError(f"{key}: {entry.path} in the report folder is a folder named as a file the report "
                                     "writes; move it away, or choose a new folder")
                if stat.S_ISDIR(mode):
                    pending.append(Path(entry.path))
                elif not stat.S_ISREG(mode):
                    raise InputError(f"{key}: {entry.path} in the report folder is {kind_of(mode)}, not a file "
                                     "ordercube wrote, and the report will not write through it; remove it, or "
                                     "choose a new folder")


def claim_folder(folder: Path, record: str, key: str = "--out") -> None:
    """Create the report ``folder`` checked by :func:`output_folder` and mark it as a report's before anything
    else is written there (an empty record: every figure is drawn), so that an interrupted report's folder
    is recognised by the next report."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"{key}: cannot create the report folder {folder} ({error.strerror}); "
                         "choose a folder you can write to") from None
    marker = folder / record
    if not marker.exists():
        write_output(marker, "{}", key)


def beside_cube(place: Location, suffix: str) -> Path:
    """``<cube's stem><suffix>`` beside a local cube, or in the working folder for a cube on object storage."""
    if place.is_local:
        cube = place.local().resolve()
        return cube.with_name(cube.stem + suffix)
    return Path(Path(place.name).stem + suffix).resolve()


def report_folder(cube: Location, given: str | os.PathLike[str] | None, key: str = "--out") -> Path:
    """The report folder: ``given`` or ``<cube>-report`` beside the cube (in the working folder for a cube on
    object storage), checked by :func:`output_folder`; a URL (``memory://`` too) is refused, the report
    being written to a local folder."""
    if given is None or not str(given):
        return output_folder(beside_cube(cube, "-report"), RECORD, key)
    place = location(os.fspath(given), key=key)  # never a local folder named after a mistyped URL either
    if not place.is_local:
        raise InputError(f"{key}: {str(given)!r} is a URL, but the report is written to a local folder; give a path")
    return output_folder(place.local(), RECORD, key)


def partition_paths(out: Path) -> tuple[Path, Path]:
    """Where ``partition`` writes its labels and, beside them, its clusters' table."""
    labels = output_file(out, PARTITION_LABELS)
    return labels, output_file(labels.with_name(labels.stem + "-clusters.csv"), PARTITION_CLUSTERS)


def replay_paths(out: Path) -> tuple[Path, Path]:
    """Where ``replay`` writes its table and, beside it (the same name, ``.png``), its figure."""
    if out.suffix.lower() == ".png":
        raise InputError(f"--out: {out} names the figure, which goes beside the table; give the table's path (.csv)")
    table = output_file(out, REPLAY_TABLE)
    return table, output_file(table.with_suffix(".png"), REPLAY_FIGURE)
