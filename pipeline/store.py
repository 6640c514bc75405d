"""The cube on disk: a zarr v3 group written by one process, read with xarray.

Layout: per-cell variables over ``(dataset, n, model, k, trial)`` (one float variable per criterion
with the raw value, ``status``, ``reason`` and ``seconds``), the random-labeling baseline over
``(n, k)``, and attributes holding the config, its identity and fingerprint, the plan and the
package versions. Values of a block are written before its status, so a cell counts as done only once
its values are on disk; the cube is the only durable state of a sweep.

Changes of the cube's shape are atomic for its users: a new cube is built in a hidden folder beside
its path and moved into place by one rename; growing one records its old shapes and attributes in the
group's attributes first (one atomic file write) and clears that record last, so an interrupted growth
is rolled back by whoever opens the cube next (:func:`roll_back_growth`). Every chunk is checksummed
and every block writes all of its chunks (see :mod:`pipeline.integrity`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import zarr
from zarr.core.sync import sync

from pipeline.config import Config, fingerprint
from pipeline.cube_attrs import BASELINE, LEGACY_ATTRIBUTES, array_attrs, group_attrs, true_k_labels, variable_attrs
from pipeline.cube_io import consolidate, described, describe_arrays, stored_true_k, write_true_k
from pipeline.errors import InputError
from pipeline.integrity import (
    CHECKSUMMED, COMPRESSORS, FORMAT, FORMAT_ATTRIBUTE, GROWTH, MANIFEST, Lost, check_cube, check_metadata, corrupt_chunks,
    growth_record, corruption_error, create_manifest, grow_manifest, lost_cells, manifest_rows, read_checked, record_chunks,
    stored_chunks,
)
from pipeline.location import Location, location
from pipeline.outputs import enclosing_store
from pipeline.remote import (
    check_new_remote, create_remote, remote_is_cube,
)
from pipeline.software import package_versions
from pipeline.grid import DIMS, Chunk, Coords, merge_coords, plan_of, planned_mask
from tasks.cell import BlockResult, Status

if TYPE_CHECKING:  # xarray (and pandas under it) only where a cube is read as a Dataset
    import xarray as xr

CELL_VARIABLES = ("status", "reason", "seconds")
STATUS_MEANINGS = {int(s): s.name.lower() for s in Status}
CREATING = ".creating-"  # a cube being created: .NAME.creating-PID beside NAME
PACKAGES = ("ordercube", "numpy", "scipy", "scikit-learn", "dask", "distributed", "xarray", "zarr")


def array(group: zarr.Group, name: str) -> zarr.Array:
    """The array ``name`` of the cube (the cube's layout guarantees it is an array, not a group)."""
    node = group[name]
    assert isinstance(node, zarr.Array)  # invariant of the layout written by this module
    return node


def versions() -> dict[str, str]:
    return package_versions(PACKAGES)


# xarray's CF encoding of a NaN fill value, which it writes on float variables: kept so that a cube made
# here reads exactly as one made by ``Dataset.to_zarr`` (tests/test_cube_format.py compares the two).
NAN_FILL_ATTRIBUTE = {"_FillValue": "AAAAAAAA+H8="}


def _write_layout(group: zarr.Group, coords: Coords, chunks: dict[str, int], variables: list[str],
                  true_k: Mapping[str, int]) -> None:
    """Every array of an all-pending cube, described (:mod:`pipeline.cube_attrs`), straight through zarr:
    the layout ``xarray.Dataset.to_zarr`` wrote for the same cube (chunk shapes, fill values, CF attributes,
    ``true_k`` a coordinate on ``dataset``), without building the lazy Dataset (0.7 s of a small run)."""
    cell_chunks = chunk_shape_of(chunks)
    cells: list[tuple[str, Any]] = [*((name, np.float64) for name in variables), ("status", np.int8),
                                    ("seconds", np.float64), ("reason", str)]
    for name, dtype in cells:
        group.create_array(name, shape=coords.shape, chunks=cell_chunks, dtype=dtype, fill_value=_fill(dtype),
                           dimension_names=DIMS, compressors=COMPRESSORS,
                           attributes={**array_attrs(name, DIMS), **(NAN_FILL_ATTRIBUTE if dtype is np.float64 else {})})
    _create_baseline(group, coords)
    labels = {**coords.as_dict(), "true_k": true_k_labels(list(coords.dataset), true_k)}
    for name, values in labels.items():
        text = name in ("dataset", "model")
        # Labels are never -1 (n >= 4, k >= 1, trial >= 0): so no chunk of labels equals the fill value, every
        # one is stored, and a missing one means lost labels (trial [0] with zarr's default fill 0 was not stored).
        stored = group.create_array(name, shape=(len(values),), chunks=(max(len(values), 1),),
                                    dtype=str if text else np.int64, fill_value="" if text else -1,
                                    dimension_names=("dataset",) if name == "true_k" else (name,),
                                    compressors=COMPRESSORS, attributes=variable_attrs(name))
        stored[:] = np.array(values, dtype=object if text else np.int64)


def _create_baseline(group: zarr.Group, coords: Coords) -> None:
    """The random-labelling baseline over ``(n, k)``, all NaN (filled by :func:`pipeline.run.fill_baseline`)."""
    group.create_array(BASELINE, shape=(len(coords.n), len(coords.k)), chunks=(1, max(len(coords.k), 1)),
                       dtype=np.float64, fill_value=np.nan, dimension_names=("n", "k"), compressors=COMPRESSORS,
                       attributes={**variable_attrs(BASELINE), **NAN_FILL_ATTRIBUTE})


def _fill(dtype: Any) -> Any:
    if dtype is str:
        return ""
    return np.nan if np.dtype(dtype).kind == "f" else 0


def _attrs(config: Config, identity: dict[str, Any], true_k: dict[str, int], *, cube_format: int = FORMAT) -> dict[str, Any]:
    """The group's attributes. Cubes of format 3 hold the true k as a coordinate and status codes as CF
    flags; older ones (format 1, which is not upgraded) keep them as JSON attributes, as they were read."""
    legacy = {"ordercube_true_k": json.dumps(true_k), "ordercube_status_codes": json.dumps(STATUS_MEANINGS),
              "ordercube_versions": json.dumps(versions())} if cube_format < FORMAT else {}
    return {
        **group_attrs(config.name, int(identity["seed"]), fingerprint(identity), versions()),
        "ordercube_config": json.dumps(config.raw, default=str),
        "ordercube_identity": json.dumps(identity, sort_keys=True),
        "ordercube_plan": json.dumps(plan_of(config)),
        **legacy,
    }


def _format_attrs() -> dict[str, int]:
    return {FORMAT_ATTRIBUTE: FORMAT}


def remove_partial_files(path: Path) -> int:
    """Delete the temp files a crash can leave behind (zarr writes ``*.partial`` then renames)."""
    leftovers = list(path.rglob("*.partial"))
    for file in leftovers:
        file.unlink(missing_ok=True)
    return len(leftovers)


def is_cube(where: str | Path | Location) -> bool:
    """Is there a cube (its root ``zarr.json``) at ``where``? For a URL, ``InputError`` if it cannot be reached."""
    place = location(where)
    return (place.local() / "zarr.json").exists() if place.is_local else remote_is_cube(place)


def check_new_cube_path(where: str | Path | Location) -> None:
    """``InputError`` unless a new cube can be created at ``where``: absent or an empty folder, writable
    (for a URL: nothing stored under it but the leftovers of an interrupted creation, its bucket there)."""
    place = location(where)
    if not place.is_local:
        check_new_remote(place)
        return
    path = place.local()
    store = enclosing_store(path.parent)
    if store is not None:
        raise InputError(f"--out: {path} is inside the cube {store} (a zarr store), whose files only its own runs "
                         "write; choose an --out outside it")
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise InputError(f"--out: {path} exists and is not an ordercube cube; choose another --out")
    existing = next(folder for folder in (path, *path.absolute().parents) if folder.exists())
    if not existing.is_dir():
        raise InputError(f"--out: cannot create the cube {path}: {existing} is a file, not a folder; choose another --out")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"--out: cannot create the cube {path}: {existing} is not writable; "
                         "choose an --out in a folder you can write to")


def create(where: str | Path | Location, config: Config, coords: Coords, chunks: dict[str, int],
           prepare: Callable[[zarr.Group], Any] = lambda group: None) -> zarr.Group:
    """A new all-pending cube at ``where`` (checked with :func:`check_new_cube_path`), the caller holding its lock.

    The cube is built in a hidden folder beside ``path``, handed to ``prepare`` there (which fills the
    baseline), and moved into place by one rename: ``path`` never holds a half-made cube. Folders left by
    an interrupted creation are removed first (the lock says nobody is making them). Object storage has no
    rename: there the cube is built in memory and uploaded, its root ``zarr.json`` last
    (:func:`pipeline.remote.create_remote`).
    """
    place = location(where)
    if not place.is_local:
        return create_remote(place, lambda store: _build(store, config, coords, chunks, prepare))
    path = place.local()
    for leftover in path.parent.glob(f".{path.name}{CREATING}*"):
        shutil.rmtree(leftover, ignore_errors=True)
    aside = path.parent / f".{path.name}{CREATING}{os.getpid()}"
    _build(aside, config, coords, chunks, prepare)
    os.rename(aside, path)  # onto nothing, or onto the empty folder check_new_cube_path allowed
    return zarr.open_group(path, mode="r+", use_consolidated=False)


def _build(store: Any, config: Config, coords: Coords, chunks: dict[str, int],
           prepare: Callable[[zarr.Group], Any]) -> None:
    """Write a new all-pending cube into ``store`` (a folder aside, or a memory store to upload)."""
    group = zarr.create_group(store, zarr_format=3, attributes={**_attrs(config, config.identity, {}), **_format_attrs()})
    _write_layout(group, coords, chunks, config.variables, {d.name: d.true_k for d in config.datasets})
    create_manifest(group, manifest_rows(config.variables))
    prepare(group)
    consolidate(group)


def chunk_shape_of(chunks: dict[str, int]) -> tuple[int, ...]:
    return tuple(chunks[d] for d in DIMS)


def stored_chunk_shape(group: zarr.Group) -> dict[str, int]:
    """The cube's chunk size along each cell dimension (fixed when the cube was created)."""
    return dict(zip(DIMS, array(group, "status").chunks, strict=True))


def stored_coords(group: zarr.Group) -> Coords:
    """The cube's coordinate labels; those from before an interrupted growth while its record is there."""
    old_shapes = (growth_record(group) or {}).get("shapes", {})

    def labels(dim: str) -> list:
        return np.asarray(array(group, dim)[: old_shapes.get(dim, [None])[0]]).tolist()

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
    partly used edge chunk cannot carry stale values into it (chunks left all-fill are not stored).
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
        _clear_edge(stored, axis, old_size, new_size)


def _clear_edge(stored: zarr.Array, axis: int, old_size: int, new_size: int) -> None:
    """Fill values beyond ``old_size`` along ``axis`` in the edge chunks that also hold cells before it.

    So that no stale value shows when the array grows, and none stays behind when it shrinks back.
    Chunks wholly beyond ``old_size`` hold nothing (resizing down deletes them). The chunk is written
    even when it then holds only fill values, as write_block does: an edge chunk of done cells with
    empty reasons must not vanish, or its cells would read as lost.
    """
    chunk = stored.chunks[axis]
    edge_end = min(new_size, -(-old_size // chunk) * chunk)
    if edge_end > old_size:
        region: list[slice] = [slice(None)] * len(stored.shape)
        region[axis] = slice(old_size, edge_end)
        stored.with_config({"write_empty_chunks": True})[tuple(region)] = stored.fill_value


def _begin_growth(group: zarr.Group) -> None:
    """Record the shapes and attributes to return to if the growth that follows is interrupted."""
    record: dict[str, Any] = {"shapes": {name: list(stored.shape) for name, stored in group.arrays()},
                              "attrs": dict(group.attrs)}
    if MANIFEST in group:
        manifest = array(group, MANIFEST)
        record["manifest"] = {"shape": list(manifest.shape), "variables": manifest.attrs["variables"]}
    group.attrs[GROWTH] = json.dumps(record)


def roll_back_growth(group: zarr.Group) -> bool:
    """Undo a growth that was interrupted (its record is still in the attributes); True if there was one.

    Idempotent, so an interrupted roll-back is finished by the next one: arrays created by the growth
    are deleted, grown arrays are refilled beyond their old shape and shrunk back to it (chunks outside
    it are deleted), and the old attributes, which lack the record, are written back last.
    """
    record = growth_record(group)
    if record is None:
        return False
    old_shapes = record["shapes"]

    async def children() -> list[str]:
        return [key async for key in group.store.list_dir(group.path)]

    for child in sync(children()):
        if child not in ("zarr.json", "integrity") and child not in old_shapes:  # created by the growth, whole or not
            sync(group.store.delete_dir(child))
    if "manifest" in record:
        manifest = array(group, MANIFEST)
        manifest.resize(tuple(record["manifest"]["shape"]))
        manifest.attrs["variables"] = record["manifest"]["variables"]
    for name, stored in group.arrays():
        old = tuple(old_shapes[name])
        if stored.shape != old:
            for axis, (size, old_size) in enumerate(zip(stored.shape, old)):
                if size > old_size:
                    _clear_edge(stored, axis, old_size, size)
            stored.resize(old)
    group.attrs.put(record["attrs"])
    consolidate(group)
    return True


def open_existing(where: str | Path | Location, config: Config, *, mode: Literal["r", "r+"] = "r") -> zarr.Group:
    """The cube at ``where``, after checking that ``config`` may extend it (``InputError`` if not)."""
    path = location(where)
    check_metadata(path)
    try:
        group = zarr.open_group(path.store(read_only=mode == "r"), mode=mode, use_consolidated=False)
        stored_identity = json.loads(str(group.attrs["ordercube_identity"]))
    except (KeyError, ValueError, TypeError, zarr.errors.BaseZarrError) as error:
        raise InputError(f"--out: {path} is not an ordercube cube ({error}); choose another --out") from None
    check_cube(group, path)
    problem = compatibility_problem(stored_identity, config.identity)
    if problem:
        raise InputError(f"--out: the cube at {path} was computed with another config: {problem}. "
                         "Old cells would no longer match it; write to a new cube with --out NEW_PATH "
                         "(or restore the old setting to extend this one)")
    return group


def open_for_run(where: str | Path | Location, config: Config, wanted: Coords) -> tuple[zarr.Group, Coords, list[str]]:
    """Check and extend the existing cube at ``path`` (the caller holds its lock); returns it, its
    coordinates and notes.

    Refuses (``InputError``) a cube whose stored identity disagrees with the config on anything that
    old cells depend on; everything else (new datasets, sample sizes, methods, k, trials) is appended,
    as one growth that is rolled back if interrupted. A new cube is made by :func:`create` instead.
    """
    notes: list[str] = []
    path = location(where)
    group = open_existing(path, config, mode="r+")
    removed = remove_partial_files(path.local()) if path.is_local else 0  # an object is stored whole or not at all
    if removed:
        notes.append(f"removed {removed} temp file(s) left by an interrupted write")
    if roll_back_growth(group):
        notes.append("rolled back the growth an earlier run left unfinished")
    stored_identity = json.loads(str(group.attrs["ordercube_identity"]))
    coords = stored_coords(group)
    merged = merge_coords(coords, wanted)
    if BASELINE not in group:  # deleted: recreated empty, and filled by run.fill_baseline from its own streams
        _create_baseline(group, coords)
        notes.append(f"the random-labelling baseline {BASELINE} was missing: recreated (its cells are kept)")
    missing = [name for name in config.variables if name not in group]
    growing = [dim for dim in DIMS if len(getattr(merged, dim)) > len(getattr(coords, dim))]
    true_k = {**stored_true_k(group, coords), **{d.name: d.true_k for d in config.datasets}}
    upgrading = int(group.attrs.get(FORMAT_ATTRIBUTE, 1)) == CHECKSUMMED  # format 2 -> 3, inside the growth journal
    if growing or missing or upgrading:
        _begin_growth(group)
        consolidate(group)  # plain xarray readers see the cube as it was until the growth ends
    for dim in growing:
        old_size = len(getattr(coords, dim))
        _grow(group, dim, getattr(merged, dim), old_size)
        notes.append(f"extended {dim} by {list(getattr(merged, dim)[old_size:])}")
    cell_chunks = array(group, "status").chunks
    for name in missing:
        group.create_array(name, shape=merged.shape, chunks=cell_chunks, dtype="float64", fill_value=np.nan,
                           dimension_names=DIMS, compressors=COMPRESSORS, attributes=array_attrs(name, DIMS))
        notes.append(f"added variable {name}")
    if growing or missing:
        grow_manifest(group, manifest_rows(config.variables))
    identity = {**stored_identity, "datasets": {**stored_identity["datasets"], **config.identity["datasets"]},
                "methods": {**stored_identity["methods"], **config.identity["methods"]}}
    if upgrading:
        describe_arrays(group)
        notes.append(f"upgraded the cube from format {CHECKSUMMED} to {FORMAT} (attributes, true_k coordinate)")
    cube_format = FORMAT if upgrading else int(group.attrs.get(FORMAT_ATTRIBUTE, 1))
    if cube_format >= FORMAT:
        write_true_k(group, merged.dataset, true_k)
    dropped = {GROWTH, *(LEGACY_ATTRIBUTES if cube_format >= FORMAT else ())}
    kept = {key: value for key, value in group.attrs.items() if key not in dropped}
    # One write, which also clears the growth record; then the consolidated metadata of the new shapes.
    group.attrs.put({**kept, **_attrs(config, identity, true_k, cube_format=cube_format), FORMAT_ATTRIBUTE: cube_format})
    consolidate(group)
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


def writable_arrays(group: zarr.Group) -> dict[str, zarr.Array]:
    """The cube's arrays by name for :func:`write_block`, with its chunk manifest (``MANIFEST``) if it has one."""
    arrays = dict(group.arrays())
    if MANIFEST in group:
        arrays[MANIFEST] = array(group, MANIFEST)
    return arrays


def write_block(arrays: Mapping[str, zarr.Array], chunk: Chunk, result: BlockResult) -> None:
    """Store one computed block: the values first, then the status that marks them done, then the
    CRCs of the chunks written in the manifest (see :mod:`pipeline.integrity`).

    ``arrays`` come from :func:`writable_arrays`, opened once per run (opening one reads its metadata file).
    Every chunk the block touches is stored, even when it holds only fill values (all-NaN values of
    failed cells, empty reasons), so that a missing chunk always means lost values.
    """
    selection = (chunk.dataset, chunk.n, chunk.model, list(chunk.k), list(chunk.trial))
    written = [*result.values.items(), ("reason", result.reason), ("seconds", result.seconds), ("status", result.status)]
    recorded = [name for name, _ in written if arrays[name].chunks == arrays["status"].chunks]  # format 1 may differ
    positions = _grid_positions(chunk, arrays["status"].chunks) if MANIFEST in arrays else []
    for position in positions:
        record_chunks(arrays, recorded, position, forget=True)
    for name, values in written:
        arrays[name].with_config({"write_empty_chunks": True}).set_orthogonal_selection(selection, values)  # type: ignore[arg-type]
    for position in positions:
        record_chunks(arrays, recorded, position)


def _grid_positions(chunk: Chunk, chunks: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The chunk-grid positions a block touches (a merged block, see merge_blocks, may span several)."""
    d, n, m, k, t = chunks
    return [(chunk.dataset // d, chunk.n // n, chunk.model // m, k_chunk, t_chunk)
            for k_chunk in sorted({index // k for index in chunk.k}) for t_chunk in sorted({index // t for index in chunk.trial})]


class LostValuesWarning(UserWarning):
    """Cells marked done in a cube have lost their values; they are read as pending."""


def open_cube(path: str | Path | Location, *, storage_options: dict[str, Any] | None = None) -> xr.Dataset:
    """The cube at ``path`` as an ``xarray.Dataset`` (lazily loaded, no Dask needed).

    Dimensions: ``dataset``, ``n``, ``model`` (the config's methods), ``k``, ``trial`` (resamples).
    Coordinates appear in the order they were added; sort with ``cube.sortby('n')`` when it matters.
    Cells marked done whose values were lost (deleted chunks or variables) are returned as pending,
    with a :class:`LostValuesWarning`; a damaged chunk or metadata file is an ``InputError`` naming it.
    A growth interrupted by a crash is invisible: the shapes from before it are read.

    ``path`` may be a URL (``s3://bucket/cube.zarr``, ``memory://...``; see :mod:`pipeline.location`),
    with fsspec ``storage_options`` for its backend (e.g. ``{"endpoint_url": ...}``).
    """
    import xarray as xr

    path = location(path, key="CUBE", storage_options=storage_options)
    group = _open_checked(path)
    record = growth_record(group)
    if record is not None:  # a crash mid-growth: read the cube as it was before (the next run rolls it back)
        cube = _before_growth(group, record)
    else:
        cube = xr.open_zarr(path.store(read_only=True), consolidated=False, chunks=None, zarr_format=3)
    status = read_checked(group, "status", path)[tuple(slice(0, size) for size in cube["status"].shape)]
    lost = lost_cells(group, status, [str(m) for m in cube["model"].values])
    cube = described(cube)
    for name in lost.missing_variables:
        cube[name] = xr.full_like(cube["seconds"], np.nan).assign_attrs(variable_attrs(name))
    if BASELINE not in cube:  # deleted: every value divided by it reads as NaN, its cells as lost (lost_baseline)
        cube[BASELINE] = xr.DataArray(np.full((cube.sizes["n"], cube.sizes["k"]), np.nan), dims=("n", "k"),
                                      attrs=variable_attrs(BASELINE))
    if lost.count:
        warnings.warn(f"{path}: {lost.describe()}; {lost.remedy}", LostValuesWarning, stacklevel=2)
        cube["status"] = xr.DataArray(np.where(lost.cells, np.int8(0), status), dims=DIMS, attrs=cube["status"].attrs)
    return cube


def _open_checked(path: Location) -> zarr.Group:
    """The cube at ``path`` for reading, its metadata checked (``InputError`` naming what is wrong)."""
    if not is_cube(path):
        raise InputError(f"CUBE: {path} is not a cube (no zarr.json); give the --out path of an ordercube run")
    check_metadata(path)
    group = zarr.open_group(path.store(read_only=True), mode="r", use_consolidated=False)
    if "ordercube_plan" not in group.attrs:
        raise InputError(f"CUBE: {path} is a zarr store but not an ordercube cube")
    check_cube(group, path)
    return group


def count_cells(where: str | Path | Location) -> dict[str, int]:
    """Planned cells of the cube at ``where`` by status (``total, ok, failed, infeasible, crashed, pending``),
    read as :func:`open_cube` reads them (lost values count as pending, with a :class:`LostValuesWarning`;
    an interrupted growth as the cube before it), from the ``status`` array alone: no xarray."""
    path = location(where, key="CUBE")
    group = _open_checked(path)
    status, lost = status_for_planning(group, path)
    if lost.count:
        warnings.warn(f"{path}: {lost.describe()}; {lost.remedy}", LostValuesWarning, stacklevel=2)
    return count_planned(status, planned_mask(json.loads(str(group.attrs["ordercube_plan"])), stored_coords(group)))


def count_planned(status: np.ndarray, planned: np.ndarray) -> dict[str, int]:
    """The ``planned`` cells of ``status`` counted by status code."""
    chosen = status[planned]
    counts = {s.name.lower(): int((chosen == s).sum()) for s in Status}
    return {"total": int(planned.sum()), "ok": counts["ok"], "failed": counts["failed"],
            "infeasible": counts["infeasible"], "crashed": counts["crashed"], "pending": counts["pending"],
            "skipped": counts["skipped"]}


def _before_growth(group: zarr.Group, record: Mapping[str, Any]) -> xr.Dataset:
    """The cube as it was before the growth whose ``record`` is in its attributes, read into memory
    (its arrays may have mixed sizes, which xarray cannot open)."""
    import xarray as xr

    shapes = record["shapes"]
    coords = {dim: np.asarray(array(group, dim)[: shapes[dim][0]]) for dim in DIMS}
    variables = {}
    for name, stored in group.arrays():
        if name in DIMS or name not in shapes:
            continue
        dims = tuple(getattr(stored.metadata, "dimension_names", None) or ())
        values = np.asarray(stored[tuple(slice(0, size) for size in shapes[name])])
        # as xarray decodes them: its encoding attributes (coordinates, _FillValue) are not the variable's
        attrs = {key: value for key, value in stored.attrs.items() if key != "coordinates" and not key.startswith("_")}
        variables[name] = xr.Variable(dims, values, attrs=attrs)
    return xr.Dataset(variables, coords=coords, attrs=dict(record["attrs"]))


def load_cube(path: str | Path | Location, *, storage_options: dict[str, Any] | None = None) -> xr.Dataset:
    """:func:`open_cube`, read into memory; ``InputError`` naming the damaged chunks when a read fails."""
    place = location(path, key="CUBE", storage_options=storage_options)
    cube = open_cube(place)
    try:
        return cube.load()
    except ValueError:
        bad = corrupt_chunks(zarr.open_group(place.store(read_only=True), mode="r", use_consolidated=False))
        if not bad:
            raise
        # zarr's other reads of that batch are abandoned mid-flight: asyncio would report each one at exit.
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        raise corruption_error(place, bad) from None


def lost_in(group: zarr.Group, status: np.ndarray, *, baseline: bool = True) -> Lost:
    """The done cells of an open cube whose values are gone (see :func:`pipeline.integrity.lost_cells`)."""
    return lost_cells(group, status, list(stored_coords(group).model), baseline=baseline)


def status_for_planning(group: zarr.Group, path: Path | Location, *, baseline: bool = True) -> tuple[np.ndarray, Lost]:
    """The cube's status as ``status``, ``run`` and ``validate`` count it: read with its checksums checked (the
    shape from before an unfinished growth), cells whose values were lost made pending again (without
    ``baseline``: not those whose only loss is the random-labelling baseline, which ``run`` computes again
    before it plans)."""
    shape = stored_coords(group).shape
    status = read_checked(group, "status", path)[tuple(slice(0, size) for size in shape)]
    lost = lost_in(group, status, baseline=baseline)
    status[lost.cells] = Status.PENDING
    return status, lost


def verify_cube(where: str | Path | Location) -> str:
    """Read back every chunk of the cube at ``where``; a one-line summary, or ``InputError`` naming damage."""
    path = location(where, key="CUBE")
    group = _open_checked(path)  # its metadata, shapes and labels first, as every command checks them
    bad = corrupt_chunks(group)
    if bad:
        raise corruption_error(path, bad)
    names = [name for name, _ in group.arrays()] + ([MANIFEST] if MANIFEST in group else [])
    chunks = sum(len(stored_chunks(group, name)) for name in names)
    return f"verified: {chunks} chunks of {len(names)} arrays read back and match their checksums"
