"""ordercube's own file readers, registered as a plug-in's are, and a file read through the reader that opens it.

:mod:`ordercube.tasks.readers` holds the records and the registry; this module registers the built-in readers
(``csv``, ``npy``, and the readers of the ``distances``, ``edge_list``, ``image`` and ``boolean_matrix`` kinds;
:mod:`ordercube.pipeline.data.formats` adds ``parquet``, ``arrow``, ``mtx`` and ``h5ad``: import that module to
have them all) and reads a dataset's file: once,
through :func:`ordercube.pipeline.files.inputfile.read_input`, so that the bytes parsed are the bytes digested
into the cube's identity. The reader is the entry's ``reader:`` when given, else the one claiming the file's
suffix, else the one whose sniff accepts its first bytes (:func:`ordercube.tasks.readers.guess_reader`).

What a reader returns (:class:`ordercube.tasks.readers.TableRead`) becomes a
:class:`ordercube.pipeline.data.tables.Table`, read on as a CSV's is (columns, exclusions, row names, labels,
preprocessing, the checks of every value). A sparse matrix is densified there, since every registered algorithm
reads dense rows; its dense size is said in the data line and refused above :func:`max_dense_bytes`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.files.inputfile import InputFile, read_input
from ordercube.pipeline.data.matrixmarket import MAX_DENSE_ENV, max_dense_bytes, size
from ordercube.tasks.readers import READERS, Reader, TableRead, get_reader, guess_reader, readers_listed
from ordercube.tasks.registry import register_reader

#: The readers whose identity predates the registry: a cube read by them keeps its data digest.
FIRST_READERS = ("csv", "npy")


def option_keys() -> set[str]:
    """Every dataset-entry key some registered reader reads."""
    return {option for reader in READERS.values() for option in reader.options}


def named_reader(given: Any, key: str) -> Reader:
    """The reader an entry's ``reader:`` names; an unknown name lists the registered ones."""
    if not isinstance(given, str) or not given:
        raise ConfigError(f"{key}.reader", f"expected a reader's name, got {given!r}", f"use one of: {readers_listed()}")
    try:
        return get_reader(given)
    except ValueError:
        raise ConfigError(f"{key}.reader", f"no reader is registered as {given!r}",
                          f"use one of: {readers_listed()} (a plug-in adds others)") from None


def pick_reader(file: InputFile, given: Any, key: str) -> Reader:
    """The entry's reader (``reader:``), else the one claiming the file's suffix or accepting its first bytes."""
    if given is not None:
        return named_reader(given, key)
    reader = guess_reader(file.path.suffix, file.data)
    if reader is None:
        suffix = repr(file.path.suffix) if file.path.suffix else "no suffix"
        raise ConfigError(f"{key}.path", f"no registered reader opens {str(file.path)!r} ({suffix}, and no reader "
                          f"recognises its first bytes {file.data[:8]!r})", f"name one with reader: NAME, or give a file "
                          f"of a registered format: {readers_listed()}")
    return reader


def not_read(option: str, what: str, key: str) -> ConfigError:
    """The error for an entry key ``option`` that the dataset (``what``: "a 'file' dataset (read by ...)") does not
    read, naming the datasets that do: a kind named after a reader of its own (``boolean_matrix``), or a file read
    by a reader (``h5ad``)."""
    owners = sorted((other for other in READERS.values() if option in other.options), key=lambda other: other.name)
    if option == "header":
        return ConfigError(f"{key}.header", f"{what} has no header row: only CSV files have one", "remove 'header'")
    kinds = [f"{'an' if owner.name[0] in 'aeiou' else 'a'} {owner.name} dataset" if not owner.suffixes
             else f"a file read by the {owner.name} reader" for owner in owners]
    first = owners[0]
    fix = f"kind: {first.name}" if not first.suffixes else f"kind: file and reader: {first.name}"
    return ConfigError(f"{key}.{option}", f"{what} takes no {option!r}: only {' or '.join(kinds)} does",
                       f"remove it, or set {fix}")


def reader_options(reader: Reader, entry: Mapping[str, Any], key: str, table_keys: set[str]) -> dict[str, Any]:
    """The entry's values of the keys ``reader`` reads; a key only other readers read is refused naming them."""
    for name in sorted(option_keys() - set(reader.options) - (table_keys - {"header"})):
        if entry.get(name) is not None:
            raise not_read(name, f"a file read by the {reader.name} reader", key)
    return {name: entry[name] for name in reader.options if entry.get(name) is not None}


def open_file(path: Path, given: Any, entry: Mapping[str, Any], key: str,
              table_keys: set[str]) -> tuple[Any, InputFile, Reader, dict[str, Any]]:
    """A data file read once and opened by its reader: (the table, the file, the reader, its options)."""
    expected = f"a data file ({', '.join(sorted({s for r in READERS.values() for s in r.suffixes}))}, or a reader's)"
    file = read_input(path, f"{key}.path", expected=expected)
    reader = pick_reader(file, given, key)
    options = reader_options(reader, entry, key, table_keys)
    return table_of(call(reader, file, options, key), reader, file, key), file, reader, options


def call(reader: Reader, file: InputFile, options: Mapping[str, Any], key: str) -> Any:
    """``reader.open(file, **options)``; ordercube's own readers also get the config key for their messages."""
    try:
        if reader.builtin:
            return reader.open(file, key=f"{key}.path", **options)
        return reader.open(file, **options)
    except ConfigError:
        raise
    except ImportError as error:
        needs = reader.requires or f"{error.name or error} (pip install {error.name or '...'})"
        raise ConfigError(f"{key}.path", f"{file.path} is read by the {reader.name} reader, which needs {needs}: "
                          f"not installed where the driver runs ({error})", "install it in the driver's environment "
                          "(the workers receive the values and need nothing more)") from None
    except (ValueError, TypeError, OSError, KeyError) as error:
        plugin = "" if reader.builtin else f" (a plug-in's reader: {reader.open.__module__})"
        raise ConfigError(f"{key}.path", f"the {reader.name} reader{plugin} cannot read {file.path}: "
                          f"{' '.join(str(error).split())}", "give a file it reads, or name another with reader: "
                          f"NAME ({readers_listed()})") from None


def table_of(result: Any, reader: Reader, file: InputFile, key: str) -> Any:
    """The :class:`ordercube.pipeline.data.tables.Table` of what a reader returned."""
    from ordercube.pipeline.data.tables import Table, frame_table

    if isinstance(result, Table):
        return result
    if not isinstance(result, TableRead):
        raise ConfigError(f"{key}.path", f"the {reader.name} reader returned a {type(result).__name__}, not a TableRead",
                          "fix the reader: its open returns ordercube.plugin.TableRead(values=..., ...)")
    source = str(file.path)
    notes = [note for note in (result.format and f"format: {result.format}", *result.notes) if note]
    if result.frame is not None:
        table = frame_table(result.frame, source)
        return Table(table.cells, table.names, "column", source, "data row", "; ".join(notes),
                     index_names=_names_of_index(result.frame), index_note="row names from the table's index")
    values, dense_note = dense(result.values, source, f"{key}.path")
    rows, width = values.shape
    names = tuple(range(width)) if result.column_names is None else tuple(result.column_names)
    _check_lengths(result, rows, width, names, reader, key)
    import pandas as pd

    extra = {str(name): np.asarray(column, dtype=object) for name, column in result.columns.items()}
    naming = "index" if result.column_names is None else "column"
    return Table(pd.DataFrame(values), names, naming, source, "row index" if naming == "index" else "data row",
                 "; ".join([*notes, dense_note] if dense_note else notes), extra=extra,
                 index_names=tuple(str(name) for name in result.row_names or ()))


def _names_of_index(frame: Any) -> tuple[str, ...]:
    import pandas as pd

    index = frame.index
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        return ()
    return tuple(str(name) for name in index)


def _check_lengths(result: TableRead, rows: int, width: int, names: tuple[Any, ...], reader: Reader, key: str) -> None:
    problems = []
    if len(names) != width:
        problems.append(f"{len(names)} column names for {width} columns")
    if result.row_names is not None and len(result.row_names) != rows:
        problems.append(f"{len(result.row_names)} row names for {rows} rows")
    problems += [f"column {name!r} of {len(column)} values for {rows} rows" for name, column in result.columns.items()
                 if len(column) != rows]
    if problems:
        raise ConfigError(f"{key}.path", f"the {reader.name} reader returned {'; '.join(problems)}",
                          "fix the reader: one name per column and per row, one value per row in each column")


def dense(values: Any, source: str, key: str) -> tuple[np.ndarray, str]:
    """A reader's values as a float64 array, and for a sparse matrix what the data line says of it (its density
    and its dense size); a sparse matrix whose dense size exceeds :func:`max_dense_bytes` is refused first."""
    if hasattr(values, "toarray") and hasattr(values, "nnz"):  # scipy.sparse, never imported here otherwise
        rows, width = values.shape
        needed, bound = 8 * rows * width, max_dense_bytes()
        if needed > bound:
            raise ConfigError(key, f"{source} is a sparse {rows} x {width} matrix ({values.nnz} stored values): its "
                              f"dense float64 copy, which the algorithms read, would take {size(needed)}, above the "
                              f"{size(bound)} held at most", f"keep fewer columns (e.g. the most variable features) or "
                              f"rows in the file, or raise {MAX_DENSE_ENV} if the driver and every worker have the memory")
        density = values.nnz / max(rows * width, 1)
        note = (f"sparse: {values.nnz} stored values, density {100 * density:.3g}%, densified to {size(needed)} "
                "(the algorithms read dense rows)")
        return np.asarray(values.toarray(), dtype=np.float64), note
    array = np.asarray(values)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2 or array.dtype.kind not in "biuf":
        raise ConfigError(key, f"{source} gave a {array.ndim}-D {array.dtype} array", "expected a 2-D array of "
                          "real numbers (rows x features)")
    with np.errstate(over="ignore"):
        return np.asarray(array, dtype=np.float64), ""


def identity_of(reader: Reader, options: Mapping[str, Any]) -> dict[str, Any]:
    """What a dataset's identity says of its reader: nothing for the first readers (a cube made before the
    registry resumes under its digest), else the reader's name and the options given."""
    if reader.name in FIRST_READERS:
        return {}
    given = {name: value for name, value in options.items() if name != "header"}
    return {"reader": reader.name, **({"reader_options": given} if given else {})}


# ordercube's own readers


def _csv(file: InputFile, *, key: str, header: bool | None = None) -> Any:
    from ordercube.pipeline.data.tables import read_csv_table

    return read_csv_table(file, key, header)


def _npy(file: InputFile, *, key: str, header: bool | None = None) -> Any:
    from ordercube.pipeline.data.tables import array_table, read_npy

    if header is not None:
        raise ConfigError(f"{key.rsplit('.', 1)[0]}.header", f"{file.path} is a .npy array: only .csv files have "
                          "a header row", "remove 'header' (columns of an array are named by index from 0)")
    array = read_npy(file, key, kinds="biuf", ndims=(1, 2), expected="a 1-D or 2-D array of real numbers")
    return array_table(array, str(file.path))


def _edge_list(file: InputFile, *, key: str, nodes: Any = None) -> TableRead:
    from ordercube.pipeline.data.graphfiles import graph_of

    graph, names = graph_of(file, None, None, key.rsplit(".", 1)[0])
    return TableRead(values=graph.weights, row_names=names, column_names=names, format="edge list")


def _image(file: InputFile, *, key: str) -> TableRead:
    from ordercube.pipeline.data.imagefiles import image_of

    image = image_of(file, key)
    return TableRead(values=image.pixels, format=f"grey image (peak {image.peak:g})")


def _boolean(file: InputFile, *, key: str, format: str | None = None) -> TableRead:  # noqa: A002 (the entry's key)
    from ordercube.pipeline.data.matrixfiles import boolean_of

    matrix = boolean_of(file, key.rsplit(".", 1)[0], format)
    return TableRead(values=matrix.values, format="0/1 matrix")


def _is_npy(head: bytes) -> bool:
    return head.startswith(b"\x93NUMPY")


BUILTIN = (
    Reader("csv", _csv, (".csv",), options={"header": None}, builtin=True,
           description="comma-separated text: a header row, row names recognised, labels a column"),
    Reader("npy", _npy, (".npy",), _is_npy, options={"header": None}, builtin=True,
           description="a NumPy array saved by numpy.save (never unpickled)"),
    Reader("distances", _csv, (), options={"header": None}, objects="dissimilarity", builtin=True,
           description="a square CSV of dissimilarities (kind: distances)"),
    Reader("edge_list", _edge_list, (), options={"nodes": None}, objects="graph", builtin=True,
           description="a signed graph as source,target,weight lines (kind: edge_list)"),
    Reader("image", _image, (), objects="matrix", builtin=True,
           description="a grey PNG or a CSV of grey levels (kind: image)"),
    Reader("boolean_matrix", _boolean, (), options={"format": None}, objects="matrix", builtin=True,
           description="a 0/1 matrix, dense or user,permission pairs (kind: boolean_matrix)"),
)

for _reader in BUILTIN:
    if _reader.name not in READERS:
        register_reader(_reader)
