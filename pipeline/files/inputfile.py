"""Every input file is opened here, once: a regular file, read whole within a bound, with its digest.

A config names data, labels, matrix, graph and image files; the user names them, so they may be anything a
path can name. Each is checked before a byte is read: a folder, a named pipe (FIFO: ``open`` would wait for
a writer forever), a device (``/dev/zero`` reads until memory runs out), a socket or a symbolic-link loop is
refused naming the config key; a regular file larger than the bound is refused with its size. The bytes are
read once, from the descriptor that was checked (``fstat`` on the open file, so a path swapped between the
check and the read is caught too), and both the parser and the digest that identifies the data in the cube
see the same bytes.
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ordercube.pipeline.errors import ConfigError

#: The largest input file read (bytes): far above the papers' data (the largest, the yeast table, is 1.9 MiB)
#: and below what a driver holds comfortably with its parsed copy. ``ORDERCUBE_MAX_INPUT_BYTES`` raises it.
MAX_INPUT_BYTES = 2 * 2**30
MAX_INPUT_ENV = "ORDERCUBE_MAX_INPUT_BYTES"
READ_BLOCK = 2**20  # bytes read at a time beyond the size fstat reported


@dataclass(frozen=True)
class InputFile:
    """The bytes of one input file as read, and what identifies them."""

    path: Path
    data: bytes
    sha256: str

    def binary(self) -> io.BytesIO:
        return io.BytesIO(self.data)

    def text(self, key: str) -> io.StringIO:
        """The file as UTF-8 text (a byte-order mark dropped); ``ConfigError`` under ``key`` when it is not text."""
        try:
            return io.StringIO(self.data.decode("utf-8-sig"), newline="")
        except UnicodeDecodeError as error:
            raise ConfigError(key, f"{self.path} is not UTF-8 text (byte {error.start}: {error.reason})",
                              "give a text file (CSV) saved as UTF-8") from None


def max_input_bytes() -> int:
    from ordercube.pipeline.system.environment import positive_number

    return int(positive_number(MAX_INPUT_ENV, MAX_INPUT_BYTES, integer=True, example=4 * 2**30, unit="bytes"))


def kind_of(mode: int) -> str:
    """What a file is, in words, from its ``st_mode`` (``lstat``'s for a symbolic link)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


#: Why a file that is not a regular one is not read, after what it is.
WHY_NOT_READ = {"a named pipe (FIFO)": ", which would make ordercube wait for a writer", "a device": ", not a file",
                "a socket": ", not a file"}


def _kind(mode: int) -> str | None:
    """What a non-regular file is and why it is not read, in words (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    kind = kind_of(mode)
    return kind + WHY_NOT_READ.get(kind, "")


def read_input(path: str | os.PathLike[str], key: str, *, expected: str) -> InputFile:
    """The bytes of the regular file at ``path`` (symbolic links followed), checked as the module says.

    ``key`` is the config key that named the file, ``expected`` what it should be ("a .csv or .npy file"):
    both go into the message of the ``ConfigError`` raised for anything but a readable regular file.
    """
    path = Path(path)
    limit = max_input_bytes()
    try:
        info = os.stat(path)
    except OSError as error:
        raise ConfigError(key, f"{str(path)!r} {_stat_problem(error)}", f"give the path of {expected}") from None
    kind = _kind(info.st_mode)
    if kind is not None:
        raise ConfigError(key, f"{str(path)!r} is {kind}", f"give the path of {expected}")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise ConfigError(key, f"{str(path)!r} {_stat_problem(error)}", f"give the path of {expected}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        kind = _kind(info.st_mode)
        if kind is not None:  # replaced between the check and the open
            raise ConfigError(key, f"{str(path)!r} is {kind}", f"give the path of {expected}")
        if info.st_size > limit:
            raise ConfigError(key, f"{str(path)!r} holds {info.st_size} bytes, above the {limit} read at most",
                              f"give a smaller file, or raise the bound with {MAX_INPUT_ENV}=BYTES")
        data = _read_at_most(handle, limit, expected_size=info.st_size)
    if len(data) > limit:  # grew while being read
        raise ConfigError(key, f"{str(path)!r} grew beyond the {limit} bytes read at most while it was read",
                          "give a file that is not being written")
    return InputFile(path=path, data=data, sha256=hashlib.sha256(data).hexdigest())


def _read_at_most(handle: io.BufferedReader, limit: int, *, expected_size: int) -> bytes:
    """Up to ``limit + 1`` bytes of ``handle``: the size ``fstat`` gave in one read, then in blocks (a file
    that grows, or one whose size the system does not report). ``read(limit + 1)`` would allocate the whole
    bound (2 GiB) for every file, however small."""
    chunks = [handle.read(min(expected_size, limit) + 1)]
    total = len(chunks[0])
    if total <= expected_size:  # a buffered read is short only at the end of the file
        return chunks[0]
    while chunks[-1] and total <= limit:
        chunks.append(handle.read(min(READ_BLOCK, limit + 1 - total)))
        total += len(chunks[-1])
    return b"".join(chunks)


def _stat_problem(error: OSError) -> str:
    if error.errno == errno.ENOENT:
        return "does not exist"
    if error.errno == errno.ELOOP:
        return "is a loop of symbolic links"
    if error.errno in (errno.EACCES, errno.EPERM):
        return "cannot be read (permission denied)"
    if error.errno == errno.ENOTDIR:
        return "does not exist (a part of the path is a file, not a folder)"
    if error.errno == errno.ENAMETOOLONG:
        return "is too long a path"
    return f"cannot be opened ({error.strerror})"
