"""The file readers a ``kind: file`` dataset is read with: records and their registry, no file opened here.

A reader declares the formats it opens (file-name suffixes, and a sniff of the file's first bytes) and turns a
file's bytes into a :class:`TableRead`: the values (a 2-D array, or a SciPy sparse matrix), the rows' and the
columns' names, and the other columns the file holds (labels, names) apart from the features. The registry is
modelled on xarray's backends (``BackendEntrypoint.open_dataset`` and ``guess_can_open``; plug-ins by entry
point): ordercube's own readers (CSV, ``.npy``, Parquet, Matrix Market, AnnData ``.h5ad``, and the readers of
the edge-list, distance-matrix, image and Boolean-matrix kinds) are registered as a plug-in's are, through
:func:`ordercube.tasks.registry.register_reader`.

The driver picks the reader (:func:`guess_reader`: the entry's ``reader:`` when given, else the suffix, else the
sniff), reads the file once and digests its bytes into the cube's identity; the workers receive the values and
never open the file. This module is on the ``tasks`` side of the wall: it holds records and rules, the readers
themselves live with the pipeline's file handling (:mod:`ordercube.pipeline.data.readers`) or in a plug-in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Bytes of a file's beginning a sniff is shown.
SNIFF_BYTES = 4096


@dataclass(frozen=True)
class TableRead:
    """What a reader returns: the values of one table and what else the file holds.

    Attributes
    ----------
    values : array or scipy.sparse matrix
        The numbers, shape (rows, columns): a NumPy array of real numbers (NaN where missing), or a SciPy
        sparse matrix, which ordercube densifies where its algorithms need dense rows, within a memory bound.
    column_names : tuple, optional
        Each column's name, as a config's ``columns:`` and ``exclude:`` name them; None: by index from 0.
    row_names : tuple of str, optional
        Each row's name (labels files are matched to the rows by them); None: the rows have none.
    columns : mapping of str to 1-D sequence
        Other columns of the file, one value per row, never features: a ``labels: {column: NAME}`` or a
        ``row_names: NAME`` may name one (an AnnData file's ``obs`` columns).
    format : str
        The format as the data line says it (``"Parquet"``, ``"Matrix Market (coordinate real general)"``).
    notes : tuple of str
        What else the data line says about what was read (``"layer 'counts'"``).
    frame : pandas.DataFrame, optional
        Instead of ``values``: a table whose columns are read as a CSV's are (numbers are features; every other
        column must be named as row names, the labels or excluded); its index, when it names the rows, gives the
        row names.
    """

    values: Any = None
    column_names: tuple[Any, ...] | None = None
    row_names: tuple[str, ...] | None = None
    columns: Mapping[str, Any] = field(default_factory=dict)
    format: str = ""
    notes: tuple[str, ...] = ()
    frame: Any = None


@dataclass(frozen=True)
class Reader:
    """A file format ordercube reads, and how.

    Attributes
    ----------
    name : str
        What a dataset entry's ``reader:`` names it by.
    open : callable
        ``open(file, **options) -> TableRead``: ``file`` has ``path`` (a ``pathlib.Path``), ``data`` (the file's
        bytes, read once by the driver) and ``binary()`` (a fresh ``io.BytesIO`` of them); ``options`` are the
        entry's values of the keys in ``options``. Bad input raises ``ValueError`` naming the problem and the fix;
        the driver adds the config key and the file.
    suffixes : tuple of str
        File-name suffixes it opens, lower case with the dot (``(".parquet", ".pq")``); matched before any sniff.
    sniff : callable, optional
        ``sniff(head: bytes) -> bool``: whether a file beginning with ``head`` (its first :data:`SNIFF_BYTES`)
        is of this format; asked for a file whose suffix no reader claims.
    options : mapping of str to object
        The dataset-entry keys it reads, with their defaults (``{"layer": None, "obsm": None}``).
    objects : str
        What its rows are (:mod:`ordercube.tasks.capabilities`); ``points`` for a table of features.
    requires : str
        The package it needs and how to get it, for the message when it is missing
        (``"pyarrow (pip install 'ordercube[parquet]')"``); "" when it needs nothing more.
    description : str
        One line for the list of readers in messages and docs.
    builtin : bool
        True for ordercube's own readers (a plug-in leaves it False).
    """

    name: str
    open: Callable[..., Any]
    suffixes: tuple[str, ...] = ()
    sniff: Callable[[bytes], bool] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    objects: str = "points"
    requires: str = ""
    description: str = ""
    builtin: bool = False

    def claims(self, suffix: str) -> bool:
        """Whether a file named with ``suffix`` is of this format by its name."""
        return suffix.lower() in self.suffixes


READERS: dict[str, Reader] = {}


def get_reader(name: str) -> Reader:
    """The registered reader ``name``; an unknown name rescans the plug-ins once, then lists the known ones."""
    from ordercube.tasks.misses import lookup  # a plug-in's reader not loaded yet: loaded on the miss

    return lookup(READERS, "reader", name)


def readers_listed() -> str:
    """The registered readers with what each opens, for a message: ``csv (.csv), npy (.npy), ...``."""
    return ", ".join(f"{name} ({', '.join(reader.suffixes) or 'by name'})" for name, reader in sorted(READERS.items()))


def guess_reader(suffix: str, head: bytes) -> Reader | None:
    """The reader of a file whose name ends in ``suffix`` and that begins with ``head``: the one claiming the
    suffix (ordercube's own first, then plug-ins' by name), else the first whose sniff accepts ``head``; None
    when no reader knows the file."""
    ordered = sorted(READERS.values(), key=lambda reader: (not reader.builtin, reader.name))
    for reader in ordered:
        if reader.claims(suffix):
            return reader
    for reader in ordered:
        if reader.sniff is not None and reader.sniff(head[:SNIFF_BYTES]):
            return reader
    return None
