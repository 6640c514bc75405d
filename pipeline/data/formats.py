"""The readers of formats that need a package beyond ordercube's own: Parquet and Arrow (pyarrow), Matrix Market
(SciPy) and AnnData's ``.h5ad`` (h5py), each registered as a plug-in's reader is.

- ``parquet`` (``.parquet``, ``.pq``; first bytes ``PAR1``) and ``arrow`` (``.arrow``, ``.feather``, ``.ipc``;
  ``ARROW1``): the table as pandas reads it through pyarrow (``pip install 'ordercube[parquet]'``). Its numeric
  columns are the features; every other column is named as the labels (``labels: {column: NAME}``), the row
  names (``row_names: NAME``) or excluded, as a CSV's; an index stored with the table (pandas' ``to_parquet``)
  names the rows.
- ``mtx`` (``.mtx``; ``%%MatrixMarket``): a Matrix Market matrix (Boisvert, Pozo & Remington 1996), coordinate
  (sparse) or array, read by :func:`scipy.io.mmread`; a pattern matrix reads as ones, a complex one is refused.
  The rows are its objects, named by index from 0, as its columns.
- ``h5ad`` (``.h5ad``; the HDF5 signature): an AnnData file (Virshup et al. 2024) read with h5py alone
  (``pip install 'ordercube[anndata]'``), following AnnData's on-disk format: ``X`` (dense, or a CSR/CSC
  group), a named ``layer:`` or an ``obsm:`` embedding; ``obs_names`` name the rows, ``var_names`` the columns of
  ``X`` and its layers; every ``obs`` column (categorical, strings, numbers) may be the labels.

A sparse matrix is densified where the table is built (:func:`ordercube.pipeline.data.readers.dense`), its dense
size said in the data line and bounded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import ordercube.pipeline.data.readers  # noqa: F401  (the first readers: registered before these, listed first)
from ordercube.pipeline.data.matrixmarket import read_matrix_market
from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.files.inputfile import InputFile
from ordercube.tasks.readers import READERS, Reader, TableRead
from ordercube.tasks.registry import register_reader

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def _parquet(file: InputFile, *, key: str) -> TableRead:
    import pyarrow.parquet as pq

    frame = pq.read_table(file.binary()).to_pandas()
    return TableRead(frame=frame, format=f"Parquet, {frame.shape[1]} columns")


def _arrow(file: InputFile, *, key: str) -> TableRead:
    import pyarrow.feather as feather

    frame = feather.read_table(file.binary()).to_pandas()
    return TableRead(frame=frame, format=f"Arrow IPC, {frame.shape[1]} columns")


def _strings(dataset: Any) -> np.ndarray:
    import h5py

    if h5py.check_string_dtype(dataset.dtype) is not None:
        return np.asarray(dataset.asstr()[()], dtype=object)
    values = dataset[()]
    return values.astype(str).astype(object) if values.dtype.kind == "S" else values


def _column(group: Any, name: str) -> np.ndarray:
    """One column of an AnnData dataframe group: categorical (codes into categories, -1 missing), nullable, plain."""
    node = group[name]
    kind = _encoding(node)
    if kind == "categorical":
        categories, codes = _strings(node["categories"]), node["codes"][()]
        out = np.asarray(categories, dtype=object)[np.clip(codes, 0, None)]
        out[codes < 0] = None
        return out
    if kind.startswith("nullable"):
        values = node["values"][()].astype(object)
        values[node["mask"][()].astype(bool)] = None
        return values
    if "categories" in node.attrs:  # AnnData before 0.8: codes, with a reference to their categories
        codes = node[()]
        out = np.asarray(_strings(group.file[node.attrs["categories"]]), dtype=object)[np.clip(codes, 0, None)]
        out[codes < 0] = None
        return out
    return _strings(node)


def _encoding(node: Any) -> str:
    value = node.attrs.get("encoding-type", "")
    return value.decode() if isinstance(value, bytes) else str(value)


def _frame(group: Any, what: str) -> tuple[tuple[str, ...], dict[str, np.ndarray]]:
    """(row names, columns) of AnnData's ``obs`` or ``var`` group."""
    import h5py

    if not isinstance(group, h5py.Group):
        raise ValueError(f"its {what} is a {type(group).__name__}, written by AnnData before 0.7; read the file "
                         "with anndata and write it again (adata.write_h5ad)")
    index = group.attrs.get("_index", "_index")
    index = index.decode() if isinstance(index, bytes) else str(index)
    names = tuple(str(name) for name in _strings(group[index])) if index in group else ()
    order = [str(name) for name in np.atleast_1d(group.attrs.get("column-order", []))]
    columns = [name for name in order if name in group] or [name for name in group if name not in (index, "__categories")]
    return names, {name: _column(group, name) for name in columns}


def _matrix(node: Any, where: str) -> Any:
    """A dense dataset, or a CSR/CSC group as a SciPy sparse matrix."""
    import h5py

    if isinstance(node, h5py.Dataset):
        return node[()]
    kind = _encoding(node)
    if kind in ("csr_matrix", "csc_matrix"):
        import scipy.sparse

        build = scipy.sparse.csr_matrix if kind == "csr_matrix" else scipy.sparse.csc_matrix
        shape = tuple(int(side) for side in node.attrs["shape"])
        return build((node["data"][()], node["indices"][()], node["indptr"][()]), shape=shape)
    raise ValueError(f"{where} is an AnnData {kind or 'group'}, not an array or a sparse matrix; choose another "
                     "with layer: or obsm:")


def _pick(handle: Any, path: Any, layer: Any, obsm: Any, key: str) -> tuple[Any, str, bool]:
    """(the node, how the data line names it, whether its columns are the variables) of X, a layer or an obsm."""
    base = key.rsplit(".", 1)[0]
    if layer is not None and obsm is not None:
        raise ConfigError(f"{base}.obsm", "both 'layer' and 'obsm' are given", "give one: a layer of X's shape, or "
                          "an embedding in obsm")
    for option, group, value in (("layer", "layers", layer), ("obsm", "obsm", obsm)):
        if value is None:
            continue
        held = sorted(handle[group]) if group in handle else []
        if not isinstance(value, str) or value not in held:
            raise ConfigError(f"{base}.{option}", f"no {option} {value!r} in {path}",
                              f"use one of {held}" if held else f"remove '{option}' (the file has no {group})")
        return handle[group][value], f"{option} {value!r}", option == "layer"
    if "X" not in handle:
        raise ConfigError(key, f"{path} has no X", "choose a matrix with layer: NAME or obsm: NAME")
    return handle["X"], "matrix X", True


def _h5ad(file: InputFile, *, key: str, layer: Any = None, obsm: Any = None) -> TableRead:
    import h5py

    with h5py.File(file.binary(), "r") as handle:
        node, what, variables = _pick(handle, file.path, layer, obsm, key)
        values = _matrix(node, what)
        if "obs" not in handle:
            raise ValueError("it has no obs (AnnData's table of observations): it is not an AnnData file")
        row_names, columns = _frame(handle["obs"], "obs")
        column_names = None
        if variables and "var" in handle:
            var_names = _frame(handle["var"], "var")[0]
            column_names = var_names if len(var_names) == values.shape[1] else None
    return TableRead(values=values, row_names=row_names or None, column_names=column_names, columns=columns,
                     format="AnnData .h5ad", notes=(what,))


OPTIONAL = (
    Reader("parquet", _parquet, (".parquet", ".pq"), lambda head: head.startswith(b"PAR1"), builtin=True,
           requires="pyarrow (pip install 'ordercube[parquet]')",
           description="an Apache Parquet table: numeric columns as features, others as labels or row names"),
    Reader("arrow", _arrow, (".arrow", ".feather", ".ipc"), lambda head: head.startswith(b"ARROW1"), builtin=True,
           requires="pyarrow (pip install 'ordercube[parquet]')",
           description="an Arrow IPC (Feather v2) table, read as a Parquet one"),
    Reader("mtx", read_matrix_market, (".mtx",), lambda head: head[:14].lower() == b"%%matrixmarket", builtin=True,
           description="a Matrix Market matrix, sparse or dense (SciPy)"),
    Reader("h5ad", _h5ad, (".h5ad",), lambda head: head.startswith(HDF5_SIGNATURE), {"layer": None, "obsm": None},
           builtin=True, requires="h5py (pip install 'ordercube[anndata]')",
           description="an AnnData file: X, a layer or an obsm embedding; obs columns as labels"),
)

for _reader in OPTIONAL:
    if _reader.name not in READERS:
        register_reader(_reader)
