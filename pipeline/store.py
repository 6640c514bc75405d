"""The cube on disk: a zarr v3 group written by one process, read with xarray.

Layout: per-cell variables over ``(dataset, n, model, k, trial)`` (one float variable per criterion
with the raw value, ``status``, ``reason`` and ``seconds``), the random-labeling baseline over
``(n, k)``, and attributes holding the config, its identity and fingerprint, the plan and the
package versions. Values of a block are written before its status, so a cell counts as done only once
its values are on disk; the cube is the only durable state of a sweep.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import dask.array as da
import numpy as np
import xarray as xr
import zarr

from pipeline.config import Config, fingerprint
from pipeline.errors import InputError
from pipeline.software import package_versions
from pipeline.grid import DIMS, Chunk, Coords, merge_coords, plan_of
from tasks.cell import BlockResult, Status

BASELINE = "lange_random"
CELL_VARIABLES = ("status", "reason", "seconds")
STATUS_MEANINGS = {int(s): s.name.lower() for s in Status}
PACKAGES = ("ordercube", "numpy", "scipy", "scikit-learn", "dask", "distributed", "xarray", "zarr")


def array(group: zarr.Group, name: str) -> zarr.Array:
    """The array ``name`` of the cube (the cube's layout guarantees it is an array, not a group)."""
    node = group[name]
    assert isinstance(node, zarr.Array)  # invariant of the layout written by this module
    return node


def versions() -> dict[str, str]:
    return package_versions(PACKAGES)


def _fill(dtype: Any) -> Any:
    if np.dtype(dtype).kind == "f":
        return np.nan
    if np.dtype(dtype).kind == "O":
        return ""
    return 0


def _cell_variable(shape: tuple[int, ...], chunks: tuple[int, ...], dtype: Any) -> da.Array:
    return da.full(shape, _fill(dtype), dtype=dtype, chunks=chunks)


def template(coords: Coords, chunks: dict[str, int], variables: list[str]) -> xr.Dataset:
    """An all-pending cube (lazy: writing it with ``compute=False`` stores only metadata)."""
    shape, chunk_shape = coords.shape, chunk_shape_of(chunks)
    data: dict[str, tuple[tuple[str, ...], da.Array]] = {
        name: (DIMS, _cell_variable(shape, chunk_shape, np.float64)) for name in variables}
    data["status"] = (DIMS, _cell_variable(shape, chunk_shape, np.int8))
    data["seconds"] = (DIMS, _cell_variable(shape, chunk_shape, np.float64))
    data[BASELINE] = (("n", "k"), da.full((len(coords.n), len(coords.k)), np.nan, chunks=(1, len(coords.k))))
    labels = coords.as_dict()
    ds = xr.Dataset(data, coords={dim: np.array(labels[dim], dtype=object if dim in ("dataset", "model") else np.int64)
                                  for dim in DIMS})
    ds["status"].attrs = {"meaning": json.dumps(STATUS_MEANINGS)}
    ds[BASELINE].attrs = {"description": "mean Hungarian-matched disagreement of two random labelings of n//2 points"}
    return ds


def _encoding(ds: xr.Dataset) -> dict[str, dict[str, Any]]:
    return {str(name): {"chunks": tuple(c[0] for c in ds[name].chunks or ()), "fill_value": _fill(ds[name].dtype)}
            for name in ds.data_vars}


def _attrs(config: Config, identity: dict[str, Any], true_k: dict[str, int]) -> dict[str, str]:
    return {
        "ordercube_true_k": json.dumps(true_k),
        "ordercube_config": json.dumps(config.raw, default=str),
        "ordercube_identity": json.dumps(identity, sort_keys=True),
        "ordercube_fingerprint": fingerprint(identity),
        "ordercube_plan": json.dumps(plan_of(config)),
        "ordercube_versions": json.dumps(versions()),
        "ordercube_status_codes": json.dumps(STATUS_MEANINGS),
    }


def remove_partial_files(path: Path) -> int:
    """Delete the temp files a crash can leave behind (zarr writes ``*.partial`` then renames)."""
    leftovers = list(path.rglob("*.partial"))
    for file in leftovers:
        file.unlink(missing_ok=True)
    return len(leftovers)


def is_cube(path: Path) -> bool:
    return (path / "zarr.json").exists()


def check_new_cube_path(path: Path) -> None:
    """``InputError`` unless a new cube can be created at ``path``: absent or an empty folder, writable."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise InputError(f"--out: {path} exists and is not an ordercube cube; choose another --out")
    existing = next(folder for folder in (path, *path.absolute().parents) if folder.exists())
    if not existing.is_dir():
        raise InputError(f"--out: cannot create the cube {path}: {existing} is a file, not a folder; choose another --out")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"--out: cannot create the cube {path}: {existing} is not writable; "
                         "choose an --out in a folder you can write to")


def create(path: Path, config: Config, coords: Coords, chunks: dict[str, int]) -> zarr.Group:
    """A new all-pending cube at ``path`` (checked with :func:`check_new_cube_path`)."""
    if path.exists():
        path.rmdir()
    ds = template(coords, chunks, config.variables)
    ds.attrs = _attrs(config, config.identity, {d.name: d.true_k for d in config.datasets})
    ds.to_zarr(path, mode="w-", compute=False, encoding=_encoding(ds), zarr_format=3, consolidated=False)
    group = zarr.open_group(path, mode="r+")
    # Variable-length strings go through zarr directly: a lazy object array cannot be templated.
    group.create_array("reason", shape=coords.shape, chunks=chunk_shape_of(chunks), dtype=str, fill_value="",
                       dimension_names=DIMS)
    return group


def chunk_shape_of(chunks: dict[str, int]) -> tuple[int, ...]:
    return tuple(chunks[d] for d in DIMS)


def stored_chunk_shape(group: zarr.Group) -> dict[str, int]:
    """The cube's chunk size along each cell dimension (fixed when the cube was created)."""
    return dict(zip(DIMS, array(group, "status").chunks, strict=True))


def stored_coords(group: zarr.Group) -> Coords:
    def labels(dim: str) -> list:
        return np.asarray(array(group, dim)[:]).tolist()

    return Coords(dataset=tuple(map(str, labels("dataset"))), n=tuple(map(int, labels("n"))),
                  model=tuple(map(str, labels("model"))), k=tuple(map(int, labels("k"))),
                  trial=tuple(map(int, labels("trial"))))


def compatibility_problem(stored: dict[str, Any], wanted: dict[str, Any]) -> str | None:
    """The first difference that would change stored cells, or None when the cube can be extended."""
    for key in ("seed", "baseline_draws"):
        if stored[key] != wanted[key]:
            return f"'{key}' is {stored[key]} in the cube but {wanted[key]} in the config"
    for section in ("datasets", "methods"):
        for name, spec in wanted[section].items():
            old = stored[section].get(name)
            if old is not None and old != spec:
                changed = sorted(k for k in set(old) | set(spec) if old.get(k) != spec.get(k))
                return (f"{section[:-1]} {name!r} differs from the one stored in the cube in {changed}: "
                        f"stored {json.dumps({k: old.get(k) for k in changed})}, "
                        f"config {json.dumps({k: spec.get(k) for k in changed})}")
    return None


def _grow(group: zarr.Group, dim: str, labels: tuple, old_size: int) -> None:
    """Append coordinate labels along ``dim`` and resize every array that has that dimension.

    The new region reads as the fill value (pending / NaN / ''); it is written explicitly so that a
    partly used edge chunk cannot carry stale values into it.
    """
    new_size = len(labels)
    coordinate = array(group, dim)
    coordinate.resize((new_size,))
    fresh = np.array(labels[old_size:], dtype=object if dim in ("dataset", "model") else np.int64)
    coordinate[old_size:] = fresh
    for name, stored in group.arrays():
        names = list(getattr(stored.metadata, "dimension_names", None) or ())
        if name in DIMS or dim not in names:
            continue
        axis = names.index(dim)
        shape = list(stored.shape)
        shape[axis] = new_size
        stored.resize(tuple(shape))
        region: list[slice] = [slice(None)] * len(shape)
        region[axis] = slice(old_size, new_size)
        stored[tuple(region)] = stored.fill_value


def open_existing(path: Path, config: Config, *, mode: Literal["r", "r+"] = "r") -> zarr.Group:
    """The cube at ``path``, after checking that ``config`` may extend it (``InputError`` if not)."""
    try:
        group = zarr.open_group(path, mode=mode)
        stored_identity = json.loads(str(group.attrs["ordercube_identity"]))
    except (KeyError, ValueError, TypeError, zarr.errors.BaseZarrError) as error:
        raise InputError(f"--out: {path} is not an ordercube cube ({error}); choose another --out") from None
    problem = compatibility_problem(stored_identity, config.identity)
    if problem:
        raise InputError(f"--out: the cube at {path} was computed with another config: {problem}. "
                         "Old cells would no longer match it; write to a new cube with --out NEW_PATH "
                         "(or restore the old setting to extend this one)")
    return group


def open_for_run(path: Path, config: Config, wanted: Coords) -> tuple[zarr.Group, Coords, list[str]]:
    """Check and extend the existing cube at ``path``; returns it, its coordinates and notes.

    Refuses (``InputError``) a cube whose stored identity disagrees with the config on anything that
    old cells depend on; everything else (new datasets, sample sizes, methods, k, trials) is appended.
    A new cube is made by :func:`create` instead.
    """
    notes: list[str] = []
    group = open_existing(path, config, mode="r+")
    stored_identity = json.loads(str(group.attrs["ordercube_identity"]))
    removed = remove_partial_files(path)
    if removed:
        notes.append(f"removed {removed} temp file(s) left by an interrupted write")
    coords = stored_coords(group)
    merged = merge_coords(coords, wanted)
    for dim in DIMS:
        old_size = len(getattr(coords, dim))
        if len(getattr(merged, dim)) > old_size:
            _grow(group, dim, getattr(merged, dim), old_size)
            notes.append(f"extended {dim} by {list(getattr(merged, dim)[old_size:])}")
    cell_chunks = array(group, "status").chunks
    for name in config.variables:
        if name not in group:
            group.create_array(name, shape=merged.shape, chunks=cell_chunks, dtype="float64", fill_value=np.nan,
                               dimension_names=DIMS)
            notes.append(f"added variable {name}")
    identity = {**stored_identity, "datasets": {**stored_identity["datasets"], **config.identity["datasets"]},
                "methods": {**stored_identity["methods"], **config.identity["methods"]}}
    true_k = {**json.loads(str(group.attrs.get("ordercube_true_k", "{}"))), **{d.name: d.true_k for d in config.datasets}}
    group.attrs.update(_attrs(config, identity, true_k))
    return group, merged, notes


def merge_blocks(blocks: Sequence[tuple[Chunk, BlockResult]]) -> list[tuple[Chunk, BlockResult]]:
    """Pieces of the same storage chunk joined along their trials, so each chunk is written once."""
    by_chunk: dict[tuple[int, int, int, tuple[int, ...]], list[tuple[Chunk, BlockResult]]] = {}
    for chunk, result in blocks:
        by_chunk.setdefault((chunk.dataset, chunk.n, chunk.model, chunk.k), []).append((chunk, result))
    merged = []
    for (dataset, n, model, k), pieces in by_chunk.items():
        if len(pieces) == 1:
            merged.append(pieces[0])
            continue
        results = [result for _, result in pieces]
        merged.append((
            Chunk(dataset, n, model, k, tuple(t for chunk, _ in pieces for t in chunk.trial)),
            BlockResult(values={name: np.concatenate([r.values[name] for r in results], axis=1) for name in results[0].values},
                        status=np.concatenate([r.status for r in results], axis=1),
                        reason=np.concatenate([r.reason for r in results], axis=1),
                        seconds=np.concatenate([r.seconds for r in results], axis=1)),
        ))
    return merged


def write_block(arrays: Mapping[str, zarr.Array], chunk: Chunk, result: BlockResult) -> None:
    """Store one computed block: the values first, then the status that marks them done.

    ``arrays`` are the cube's arrays by name, opened once per run (opening one reads its metadata file).
    """
    selection = (chunk.dataset, chunk.n, chunk.model, list(chunk.k), list(chunk.trial))
    for name, values in result.values.items():
        arrays[name].set_orthogonal_selection(selection, values)  # type: ignore[arg-type]
    arrays["reason"].set_orthogonal_selection(selection, result.reason)  # type: ignore[arg-type]
    arrays["seconds"].set_orthogonal_selection(selection, result.seconds)  # type: ignore[arg-type]
    arrays["status"].set_orthogonal_selection(selection, result.status)  # type: ignore[arg-type]


def open_cube(path: str | Path) -> xr.Dataset:
    """The cube at ``path`` as an ``xarray.Dataset`` (lazily loaded, no Dask needed).

    Dimensions: ``dataset``, ``n``, ``model`` (the config's methods), ``k``, ``trial`` (resamples).
    Coordinates appear in the order they were added; sort with ``cube.sortby('n')`` when it matters.
    """
    path = Path(path)
    if not (path / "zarr.json").exists():
        raise InputError(f"CUBE: {path} is not a cube (no zarr.json); give the --out path of an ordercube run")
    cube = xr.open_zarr(path, consolidated=False, chunks=None, zarr_format=3)
    if "ordercube_plan" not in cube.attrs:
        raise InputError(f"CUBE: {path} is a zarr store but not an ordercube cube")
    return cube
