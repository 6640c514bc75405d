"""The stored assignments of items to clusters: the ``assignment`` variable, its coordinates and its checksums.

A method that stores assignments (a config's ``methods[i].assignments``) gives every cell the clusterings of its
trial: for each of the trial's clusterings (its *parts*: the two halves, or the data and its reference sets, as
its scheme's ``part_roles`` say) the cluster 0 .. k-1 of every item of the dataset, -1 where the item was not in
that clustering (or the cell is not ok). Items are a dataset's rows (objects) in the order of its file.

Layout (only in a cube where some method stores them; every other cube is unchanged):

- ``assignment``: int16, dims ``(dataset, n, model, k, trial, part, item)``, fill -1, one chunk per
  ``(dataset, n, model, k)`` and trial chunk of the cells, over all its parts and items;
- coordinates ``part`` (0 .. P-1) and ``item`` (0 .. max N - 1), and ``items`` (dims ``(dataset,)``: each dataset's
  number of items N, -1 for a dataset without fixed items; its items are ``item < items``);
- coordinates ``item_class`` (int64, dims ``(dataset, item)``, fill -1: each item's known class, a code into the
  array's attribute ``classes``, ``{dataset: [name of code 0, ...]}``, -1 where the dataset has no labels) and
  ``item_name`` (string, dims ``(dataset, item)``, fill "": each item's name, its row name in the data file, "" where
  the data has none), so that a report shows the known classes and names of the items without the data; a cube
  made before them has neither (its reports show no class strip);
- the group attribute ``ordercube_part_roles``: JSON ``{model: ["data", "data"] | ["data", "reference", ...]}``, the
  role of each part of the models that store assignments;
- its checksums: every chunk ends in a CRC32C like every chunk of the cube, and the driver records each written
  chunk's CRC in its own manifest ``integrity/assignment_crc`` (the chunk grid of ``assignment``), so that a done
  cell whose assignments were deleted, or replaced by another chunk, counts as lost and is computed again.

Written by the same region writes as the cells' values (:func:`ordercube.pipeline.cube.writes.write_block`: values
and assignments first, then status, then the CRCs) and grown with the cube (:mod:`ordercube.pipeline.cube.growth`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import zarr

from ordercube.pipeline.cube.grid import DIMS, Chunk, Coords
from ordercube.pipeline.cube.integrity import (
    CHECKSUMMED, COMPRESSORS, FORMAT_ATTRIBUTE, Lost, _as_recorded, _suffixes, chunk_grid_any, chunk_grid_shape,
    chunk_key, corrupt_chunks_at, expand_grid, stored_chunks,
)
from ordercube.tasks.trial import Status

if TYPE_CHECKING:  # the config's modules import the registries: not needed to read a cube
    from ordercube.pipeline.config.specs import Config

ASSIGNMENT = "assignment"
PART, ITEM, ITEMS = "part", "item", "items"
ITEM_CLASS, ITEM_NAME = "item_class", "item_name"  # each item's known class (a code) and its name
CLASSES = "classes"  # the attribute of ITEM_CLASS naming each dataset's classes by code
ASSIGNMENT_DIMS = (*DIMS, PART, ITEM)
ROLES_ATTRIBUTE = "ordercube_part_roles"
ASSIGNMENT_MANIFEST = "integrity/assignment_crc"  # uint64 per chunk of `assignment`: 2**32 + CRC32C, 0 = not recorded
FILL = -1


# --- what the cube records ------------------------------------------------------------------------------------------

def stored_roles(group: zarr.Group) -> dict[str, list[str]]:
    """The part roles the cube's attribute records, by model ({} without it)."""
    return {str(model): list(roles) for model, roles in json.loads(str(group.attrs.get(ROLES_ATTRIBUTE, "{}"))).items()}


def roles_attribute(roles: Mapping[str, list[str]]) -> dict[str, str]:
    """The group attribute for ``roles`` ({} when no model stores assignments: the cube's attributes unchanged)."""
    return {ROLES_ATTRIBUTE: json.dumps(dict(roles), sort_keys=True)} if roles else {}


# --- creating and growing ------------------------------------------------------------------------------------------

def chunk_shape(cell_chunks: tuple[int, ...], parts: int, items: int) -> tuple[int, ...]:
    """One ``(dataset, n, model, k)`` per chunk, the cells' trial chunk, all parts and items."""
    return (1, 1, 1, 1, cell_chunks[4], max(parts, 1), max(items, 1))


def create_assignments(group: zarr.Group, shape: tuple[int, ...], cell_chunks: tuple[int, ...], parts: int,
                       items: int, dataset_items: list[int]) -> None:
    """The all-pending ``assignment`` variable of a cube of cell shape ``shape``, its coordinates and manifest."""
    from ordercube.pipeline.cube.attrs import array_attrs, variable_attrs

    full = (*shape, parts, items)
    chunks = chunk_shape(cell_chunks, parts, items)
    # overwrite: recreated beside what is left of it when the variable was deleted (its cells were lost)
    group.create_array(ASSIGNMENT, shape=full, chunks=chunks, dtype=np.int16, fill_value=FILL, overwrite=True,
                       dimension_names=ASSIGNMENT_DIMS, compressors=COMPRESSORS,
                       attributes={**array_attrs(ASSIGNMENT, ASSIGNMENT_DIMS),
                                   "coordinates": f"true_k {ITEMS} {ITEM_CLASS} {ITEM_NAME}"})
    for name, values in ((PART, np.arange(parts)), (ITEM, np.arange(items))):
        coordinate = group.create_array(name, shape=(len(values),), chunks=(max(len(values), 1),), dtype=np.int64,
                                        fill_value=FILL, dimension_names=(name,), compressors=COMPRESSORS, overwrite=True,
                                        attributes=variable_attrs(name))
        coordinate[:] = values
    counts = group.create_array(ITEMS, shape=(len(dataset_items),), chunks=(max(len(dataset_items), 1),),
                                dtype=np.int64, fill_value=FILL, dimension_names=("dataset",), compressors=COMPRESSORS,
                                attributes=variable_attrs(ITEMS), overwrite=True)
    counts[:] = np.asarray(dataset_items, dtype=np.int64)
    for name, dtype, fill in ((ITEM_CLASS, np.int64, FILL), (ITEM_NAME, str, "")):
        group.create_array(name, shape=(len(dataset_items), items), chunks=(1, max(items, 1)), dtype=dtype,
                           fill_value=fill, dimension_names=("dataset", ITEM), compressors=COMPRESSORS,
                           attributes={**variable_attrs(name), **({CLASSES: {}} if name == ITEM_CLASS else {})},
                           overwrite=True)
    grid = chunk_grid_shape(full, chunks)
    group.require_group("integrity").create_array(
        ASSIGNMENT_MANIFEST.split("/", 1)[1], shape=grid, chunks=(1, 1, 1, *grid[3:]), dtype="uint64", fill_value=0,
        compressors=COMPRESSORS, dimension_names=ASSIGNMENT_DIMS, overwrite=True)


def dataset_items(config: Config, datasets: tuple[str, ...], known: Mapping[str, int] | None = None) -> list[int]:
    """Each of ``datasets``' number of items: the config's, else ``known`` (the cube's), else -1."""
    given = {d.name: (-1 if d.items is None else d.items) for d in config.datasets}
    return [int(given.get(name, (known or {}).get(name, FILL))) for name in datasets]


def new_layout(group: zarr.Group, config: Config, coords: Coords, cell_chunks: tuple[int, ...]) -> None:
    """The assignments of a new cube, when some method of ``config`` stores them."""
    if not config.stores_assignments:
        return
    from ordercube.pipeline.config.schemes import wanted_size

    parts, items = wanted_size(config)
    create_assignments(group, coords.shape, cell_chunks, parts, items, dataset_items(config, coords.dataset))
    write_item_facts(group, config, coords.dataset)


def write_item_facts(group: zarr.Group, config: Config, datasets: tuple[str, ...]) -> None:
    """Store the known class and the name of every item of ``config``'s datasets that have labels or row names
    (``datasets``: the cube's, in its order), in ``item_class`` (its attribute ``classes`` naming them) and
    ``item_name``; nothing in a cube made before these coordinates."""
    if ITEM_CLASS not in group or ITEM_NAME not in group:
        return
    codes, names = group[ITEM_CLASS], group[ITEM_NAME]
    classes = dict(codes.attrs.get(CLASSES, {}))  # type: ignore[union-attr]
    for spec in config.datasets:
        if spec.name not in datasets or spec.items is None:
            continue
        row = datasets.index(spec.name)
        if spec.labels is not None:
            labels = np.asarray(spec.labels, dtype=np.int64)
            codes[row, : labels.size] = labels  # type: ignore[index]
            classes[spec.name] = list(spec.classes) or [str(code) for code in range(int(labels.max()) + 1)]
        if spec.row_names:
            names.with_config({"write_empty_chunks": True})[row, : len(spec.row_names)] = np.asarray(  # type: ignore[union-attr]
                spec.row_names, dtype=object)
    if classes != codes.attrs.get(CLASSES, {}):  # type: ignore[union-attr]
        codes.attrs[CLASSES] = classes  # type: ignore[union-attr]


def assignments_grow(group: zarr.Group, config: Config, merged: Coords, cells_grow: bool) -> bool:
    """Whether extending the cube to ``merged`` for ``config`` changes its assignments: created, grown along a cell
    dimension (``cells_grow``) or ``part`` / ``item``, or a dataset's number of items recorded."""
    if ASSIGNMENT not in group:
        return config.stores_assignments
    if cells_grow:
        return True
    from ordercube.pipeline.config.schemes import wanted_size

    parts, items = wanted_size(config)
    if parts > group[PART].shape[0] or items > group[ITEM].shape[0]:  # type: ignore[union-attr]
        return True
    known = {name: int(value) for name, value in zip(merged.dataset, np.asarray(group[ITEMS][:]))}  # type: ignore[index]
    return dataset_items(config, merged.dataset, known) != [known.get(name, FILL) for name in merged.dataset]


def grow_assignments(group: zarr.Group, config: Config, merged: Coords, grow_along: Any) -> list[str]:
    """Inside a growth (the cube's cell dims already grown to ``merged``): create the assignments if the config
    stores some and the cube has none, grow ``part`` and ``item`` (``grow_along(dim, labels, old_size)``, the
    growth's own resize) to what the config needs, and record each dataset's number of items. Returns notes."""
    notes: list[str] = []
    if ASSIGNMENT not in group:
        if not config.stores_assignments:
            return notes
        new_layout(group, config, merged, tuple(group["status"].chunks))  # type: ignore[union-attr]
        return [f"added variable {ASSIGNMENT}"]
    from ordercube.pipeline.config.schemes import wanted_size

    parts, items = wanted_size(config)
    for dim, size in ((PART, parts), (ITEM, items)):
        old = int(group[dim].shape[0])  # type: ignore[union-attr]
        if size > old:
            grow_along(dim, tuple(range(size)), old)
            notes.append(f"extended {dim} to {size}")
    known = {name: int(value) for name, value in zip(merged.dataset, np.asarray(group[ITEMS][:]))}  # type: ignore[index]
    values = np.asarray(dataset_items(config, merged.dataset, known), dtype=np.int64)
    stored = group[ITEMS]
    if not np.array_equal(np.asarray(stored[:]), values):  # type: ignore[index]
        stored.with_config({"write_empty_chunks": True})[:] = values  # type: ignore[union-attr]
    write_item_facts(group, config, merged.dataset)
    return notes


def grow_manifest(group: zarr.Group) -> None:
    """Fit the assignments' manifest to the grown chunk grid of ``assignment`` (inside a growth)."""
    if ASSIGNMENT_MANIFEST in group and ASSIGNMENT in group:
        stored = group[ASSIGNMENT]
        group[ASSIGNMENT_MANIFEST].resize(chunk_grid_shape(stored.shape, stored.chunks))  # type: ignore[union-attr]


# --- writing ---------------------------------------------------------------------------------------------------------

def block_region(chunk: Chunk, stored: zarr.Array) -> tuple[int, int, int, list[int], list[int], list[int], list[int]]:
    """The chunk-grid region of ``assignment`` a block covers (over all its parts and items), as an orthogonal
    selection of its manifest: dataset, n, model, then the lists of k, trial-chunk, part-chunk and item-chunk
    indices."""
    grid = chunk_grid_shape(stored.shape, stored.chunks)
    trial_chunk = stored.chunks[4]
    return (chunk.dataset, chunk.n, chunk.model, list(chunk.k), sorted({index // trial_chunk for index in chunk.trial}),
            list(range(grid[5])), list(range(grid[6])))


def _positions(region: tuple[Any, ...]) -> list[tuple[int, ...]]:
    d, n, m, ks, ts, ps, items = region
    return [(d, n, m, k, t, p, i) for k in ks for t in ts for p in ps for i in items]


def forget(arrays: Mapping[str, zarr.Array], chunk: Chunk) -> None:
    """Mark the block's assignment chunks not recorded before they are rewritten (a crash in between then leaves
    entries that accept the chunk, which the next run records)."""
    region = block_region(chunk, arrays[ASSIGNMENT])
    shape = tuple(len(axis) for axis in region[3:])
    # stored, zeros too: a manifest chunk missing under ok cells then means it was lost, never a crash
    arrays[ASSIGNMENT_MANIFEST].with_config({"write_empty_chunks": True}).set_orthogonal_selection(  # type: ignore[union-attr]
        region, np.zeros(shape, dtype=np.uint64))  # type: ignore[arg-type]


def write(arrays: Mapping[str, zarr.Array], chunk: Chunk, assignments: np.ndarray) -> None:
    """Store a block's assignments (shape (k, trials, parts, items)), padded with -1 to every part and item of the
    cube, so that every chunk of its region is written (a missing chunk then always means lost values)."""
    stored = arrays[ASSIGNMENT]
    parts, items = stored.shape[5], stored.shape[6]
    padded = np.full((*assignments.shape[:2], parts, items), FILL, dtype=np.int16)
    padded[:, :, : assignments.shape[2], : assignments.shape[3]] = assignments
    selection = (chunk.dataset, chunk.n, chunk.model, list(chunk.k), list(chunk.trial), slice(None), slice(None))
    stored.with_config({"write_empty_chunks": True}).set_orthogonal_selection(selection, padded)  # type: ignore[arg-type]


def record(arrays: Mapping[str, zarr.Array], chunk: Chunk) -> None:
    """Record in the assignments' manifest the CRCs of the block's assignment chunks, as stored now."""
    manifest, stored = arrays[ASSIGNMENT_MANIFEST], arrays[ASSIGNMENT]
    region = block_region(chunk, stored)
    suffixes = _suffixes(manifest.store, [chunk_key(stored.path, position) for position in _positions(region)])
    values = np.array([_as_recorded(suffix) for suffix in suffixes], dtype=np.uint64)
    manifest.set_orthogonal_selection(region, values.reshape([len(axis) for axis in region[3:]]))  # type: ignore[arg-type]


# --- integrity -------------------------------------------------------------------------------------------------------

def storing_models(group: zarr.Group, models: list[str]) -> np.ndarray:
    """Which of ``models`` store assignments (a boolean per model), by the cube's identity."""
    methods = json.loads(str(group.attrs["ordercube_identity"]))["methods"]
    return np.array([bool(methods.get(model, {}).get("assignments", False)) for model in models], dtype=bool)


def lost_assignments(group: zarr.Group, status: np.ndarray, models: list[str]) -> tuple[np.ndarray, list[str], list[str],
                                                                                        list[tuple[int, ...]]]:
    """The ok cells of models that store assignments whose assignment chunks are absent or not the ones recorded
    at their place (or whose manifest chunk is gone); the keys of those chunks (absent, misplaced) and the positions
    whose manifest entry a crash left unrecorded (accepted; the next run records them). Cells not ok hold no assignments worth keeping (-1)."""
    empty = np.zeros(status.shape, dtype=bool)
    uses = storing_models(group, models)
    expected = (status == Status.OK) & uses[None, None, :, None, None]
    if not expected.any():
        return empty, [], [], []
    if ASSIGNMENT not in group:
        return expected, [], [], []
    stored = group[ASSIGNMENT]
    cell_chunks = (1, 1, 1, 1, stored.chunks[4])  # type: ignore[union-attr]
    cells_grid = chunk_grid_any(expected, cell_chunks)
    grid = chunk_grid_shape(stored.shape, stored.chunks)  # type: ignore[union-attr]
    present = stored_chunks(group, ASSIGNMENT)
    manifest = np.asarray(group[ASSIGNMENT_MANIFEST][:]) if ASSIGNMENT_MANIFEST in group else None  # type: ignore[index]
    # an entry whose manifest chunk is gone (deleted) vouches for nothing: its chunk is not trusted
    vouching = stored_chunks(group, ASSIGNMENT_MANIFEST) if manifest is not None else set()
    entry_chunks = group[ASSIGNMENT_MANIFEST].chunks if manifest is not None else ()  # type: ignore[union-attr]
    positions = [tuple(int(i) for i in index) for index in zip(*np.nonzero(cells_grid))]
    wanted = [(*position, p, i) for position in positions for p in range(grid[5]) for i in range(grid[6])]
    suffixes = _suffixes(group.store, [chunk_key(ASSIGNMENT, position) for position in wanted])
    bad_cells = np.zeros(cells_grid.shape, dtype=bool)
    absent, misplaced, unrecorded = [], [], []
    for position, suffix in zip(wanted, suffixes):
        if position not in present or suffix is None:
            absent.append(chunk_key(ASSIGNMENT, position))
            bad_cells[position[:5]] = True
            continue
        inside = manifest is not None and all(i < s for i, s in zip(position, manifest.shape))
        if inside and tuple(i // c for i, c in zip(position, entry_chunks)) not in vouching:
            misplaced.append(chunk_key(ASSIGNMENT, position))
            bad_cells[position[:5]] = True
        elif not inside or manifest[position] == 0:
            unrecorded.append(position)
        elif manifest[position] != _as_recorded(suffix):
            misplaced.append(chunk_key(ASSIGNMENT, position))
            bad_cells[position[:5]] = True
    undecodable = corrupt_chunks_at(group, ASSIGNMENT, [tuple(map(int, key.split("/c/")[1].split("/"))) for key in misplaced])
    if undecodable:
        from ordercube.pipeline.cube.integrity import _store_name, corruption_error

        raise corruption_error(_store_name(group.store), undecodable)
    return expected & expand_grid(bad_cells, cell_chunks, status.shape), absent, misplaced, unrecorded


def add_lost(group: zarr.Group, status: np.ndarray, models: list[str], lost: Lost) -> Lost:
    """``lost`` (:func:`ordercube.pipeline.cube.integrity.lost_cells` of the cells' variables) with the ok cells whose
    assignments are lost (:func:`lost_assignments`), in cubes of format 2 on."""
    if int(group.attrs.get(FORMAT_ATTRIBUTE, 1)) < CHECKSUMMED or not (status != 0).any():
        return lost
    cells, absent, misplaced, unrecorded = lost_assignments(group, status, models)
    if cells.any() and ASSIGNMENT not in group:
        lost.missing_variables.append(ASSIGNMENT)
    lost.missing_chunks += absent
    lost.misplaced_chunks += misplaced
    lost.unrecorded += [(ASSIGNMENT, position) for position in unrecorded]
    lost.cells |= cells
    return lost


def record_unrecorded(group: zarr.Group, unrecorded: list[tuple[str, tuple[int, ...]]]) -> list[tuple[str, tuple[int, ...]]]:
    """Record the CRCs of done cells' assignment chunks whose manifest entries a crash left unrecorded (those of
    ``unrecorded`` named :data:`ASSIGNMENT`); returns the others."""
    positions = [position for name, position in unrecorded if name == ASSIGNMENT]
    others = [(name, position) for name, position in unrecorded if name != ASSIGNMENT]
    if not positions or ASSIGNMENT_MANIFEST not in group:
        return others
    manifest = group[ASSIGNMENT_MANIFEST]
    suffixes = _suffixes(group.store, [chunk_key(ASSIGNMENT, position) for position in positions])
    for position, suffix in zip(positions, suffixes):
        manifest[position] = _as_recorded(suffix)  # type: ignore[index]
    return others
