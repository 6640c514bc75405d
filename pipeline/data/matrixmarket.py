"""Matrix Market files (Boisvert, Pozo & Remington 1996), read by :func:`scipy.io.mmread` (the ``mtx`` reader, and
the ``boolean_matrix`` kind's reading of a ``.mtx`` file), and the bound on what a sparse file may be densified to."""

from __future__ import annotations

import numpy as np

from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.files.inputfile import InputFile
from ordercube.tasks.readers import TableRead

#: The largest matrix densified from a sparse file (bytes of float64): 2 GiB, as a matrix dataset's
#: ``MAX_MATRIX_CELLS``; ``ORDERCUBE_MAX_DENSE_BYTES`` changes it.
MAX_DENSE_BYTES = 2 * 2**30
MAX_DENSE_ENV = "ORDERCUBE_MAX_DENSE_BYTES"


def max_dense_bytes() -> int:
    from ordercube.pipeline.system.environment import positive_number

    return int(positive_number(MAX_DENSE_ENV, MAX_DENSE_BYTES, integer=True, example=4294967296, unit="bytes"))


def size(count: float) -> str:
    """A number of bytes as people read it: ``46.9 KiB``."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} TiB"  # pragma: no cover


def _banner(file: InputFile, key: str) -> tuple[list[str], tuple[int, int]]:
    """The Matrix Market banner's words (``matrix coordinate real general``) and the size line's rows and columns,
    read before anything is allocated."""
    lines = iter(file.data[:1 << 16].split(b"\n"))
    words = next(lines, b"").decode("ascii", "replace").split()
    if len(words) != 5 or words[0].lower() != "%%matrixmarket" or words[1].lower() != "matrix":
        raise ConfigError(key, f"{file.path} does not begin with a Matrix Market banner (%%MatrixMarket matrix "
                          f"FORMAT FIELD SYMMETRY), got {' '.join(words)[:60]!r}", "give a file written by "
                          "scipy.io.mmwrite or R's Matrix::writeMM")
    for line in lines:
        text = line.decode("ascii", "replace").strip()
        if text and not text.startswith("%"):
            shape = text.split()[:2]
            if len(shape) == 2 and all(part.isdigit() for part in shape):
                return [word.lower() for word in words[2:]], (int(shape[0]), int(shape[1]))
            break
    raise ConfigError(key, f"{file.path} has no size line (ROWS COLUMNS [ENTRIES]) after its banner",
                      "give a complete Matrix Market file")


def read_matrix_market(file: InputFile, *, key: str) -> TableRead:
    """A Matrix Market file's matrix (sparse for a coordinate file), its banner checked first (the ``mtx`` reader;
    also the ``boolean_matrix`` kind's for a ``.mtx`` file)."""
    import scipy.io

    (layout, field, symmetry), (rows, columns) = _banner(file, key)
    if field == "complex":
        raise ConfigError(key, f"{file.path} holds complex numbers", "give a real, integer or pattern matrix")
    if layout == "array" and 8 * rows * columns > max_dense_bytes():  # mmread would allocate it whole
        raise ConfigError(key, f"{file.path} is a dense {rows} x {columns} array: {size(8 * rows * columns)} as float64, "
                          f"above the {size(max_dense_bytes())} held at most", "give a smaller matrix")
    values = scipy.io.mmread(file.binary())
    if field == "pattern" and hasattr(values, "data"):
        values.data = np.ones_like(values.data, dtype=np.float64)
    return TableRead(values=values, format=f"Matrix Market ({layout} {field} {symmetry})")
