"""Are the cube's cells what ordercube wrote? Checksums, the chunk manifest, lost chunks.

- Every chunk of a cube created by this version ends in a CRC32C of its bytes (zarr v3's ``crc32c``
  codec, after zstd): a changed byte fails the read, and :func:`read_checked` and :func:`corrupt_chunks`
  name the chunk.
- Every block of cells the driver stores writes one chunk per variable of its method (empty or not:
  see :func:`ordercube.pipeline.cube.writes.write_block`), so a cell marked done whose chunk is absent has lost its
  values (a deleted file or folder). :func:`lost_cells` finds them; runs compute them again, readers
  count them as pending, never as silent NaN.
- A checksum is blind to position: a valid chunk copied over another reads fine. So the driver also
  records, after storing a block, the CRC of every chunk it wrote in a manifest at that chunk's grid
  position (``integrity/crc``, variables by row). A chunk whose CRC is not the one recorded for its
  place counts as lost like a missing one. A crash between a block's writes and its manifest entry
  leaves a mismatch too; that costs only recomputing the block (cells are reproducible bit for bit).
- Cubes of format 4 store their cell arrays in shards (zarr v3's ``sharding_indexed`` codec): one stored
  object holds several chunks, each still ending in its CRC32C, and the shard's index ends in its own.
  The manifest then has one entry per stored object (per variable and shard grid position): the CRC32C of
  the object's whole bytes as read back after it was written (:func:`object_crc`), so that a shard copied
  over another, or any byte of it changed, is caught whether or not its index still decodes.

The metadata (``zarr.json`` documents, attributes, shapes) is checked by :mod:`ordercube.pipeline.cube.checks`; both are
run through :class:`ordercube.pipeline.cube.owner.Cube`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any

import google_crc32c
import numpy as np
import zarr
from zarr.codecs import Crc32cCodec, ZstdCodec
from zarr.abc.store import SuffixByteRequest
from zarr.core.buffer import default_buffer_prototype
from zarr.core.sync import sync

from ordercube.pipeline.cube.attrs import BASELINE
from ordercube.pipeline.errors import InputError
from ordercube.pipeline.files.location import Location
from ordercube.tasks.trial import Status  # as tasks.cell has it, without loading every algorithm

DIMS = ("dataset", "n", "model", "k", "trial")
# Cubes of format 2 write every chunk of a stored block and checksum every chunk (format 1 did neither);
# format 3 describes itself (CF attributes, status flags, true_k as a coordinate, consolidated metadata);
# format 4 groups the chunks of its cell arrays into shards, one stored object each, its manifest by object.
FORMAT = 4  # the newest format this version reads and writes
DESCRIBED = 3  # the first format that describes itself (a new unsharded cube, and a format-2 cube upgraded)
SHARDED = 4  # a cube whose cell arrays are sharded
CHECKSUMMED = 2  # the first format that writes and checksums every chunk
FORMAT_ATTRIBUTE = "ordercube_format"
COMPRESSORS = (ZstdCodec(level=0), Crc32cCodec())
ALWAYS_WRITTEN = ("reason", "seconds", "status")
GROWTH = "ordercube_growth"  # the record of a growth in progress (old shapes and attributes): see ordercube.pipeline.cube.growth
MANIFEST = "integrity/crc"  # uint64 per (variable, chunk grid position): 2**32 + CRC32C, 0 = not recorded
RECORDED = np.uint64(1 << 32)


def growth_record(group: zarr.Group) -> dict | None:
    """The record of an unfinished growth (old shapes and attributes), None when there is none."""
    return json.loads(str(group.attrs[GROWTH])) if GROWTH in group.attrs else None


def chunk_key(name: str, index: Iterable[int]) -> str:
    return f"{name}/c/" + "/".join(map(str, index))


def object_shape(stored: zarr.Array) -> tuple[int, ...]:
    """The shape of the region of ``stored`` one stored object holds: its shard, or (unsharded) its chunk."""
    return tuple(stored.shards or stored.chunks)


def is_sharded(stored: zarr.Array) -> bool:
    return stored.shards is not None


def object_crc(data: bytes | None) -> np.uint64:
    """What the manifest records for a stored object of a sharded array: 2**32 + the CRC32C of its bytes
    (0, not recorded, for an absent one)."""
    return np.uint64(0) if data is None else RECORDED | np.uint64(google_crc32c.value(data))


def _objects(store: Any, keys: Sequence[str]) -> list[bytes | None]:
    """The whole bytes of each stored object (one request each, concurrently), None for an absent one."""
    prototype = default_buffer_prototype()

    async def read() -> list:
        return await asyncio.gather(*(store.get(key, prototype=prototype) for key in keys))

    return [None if buffer is None else buffer.to_bytes() for buffer in sync(read())]


def stored_chunks(group: zarr.Group, name: str) -> set[tuple[int, ...]]:
    """Grid indices of the chunks of array ``name`` present in the store."""
    prefix = f"{name}/c/"

    async def keys() -> list[str]:
        return [key async for key in group.store.list_prefix(prefix)]

    found = set()
    for key in sync(keys()):
        parts = key[len(prefix):].split("/")
        if all(part.isdigit() for part in parts):
            found.add(tuple(int(part) for part in parts))
    return found


def chunk_grid_any(mask: np.ndarray, chunks: tuple[int, ...]) -> np.ndarray:
    """For each chunk of a cell array chunked by ``chunks``: does ``mask`` hold a True cell in it?"""
    grid = tuple(-(-size // chunk) for size, chunk in zip(mask.shape, chunks))
    padded = np.zeros(tuple(g * c for g, c in zip(grid, chunks)), dtype=bool)
    padded[tuple(slice(0, size) for size in mask.shape)] = mask
    blocks = padded.reshape([x for g, c in zip(grid, chunks) for x in (g, c)])
    return blocks.any(axis=tuple(range(1, 2 * len(grid), 2)))


def expand_grid(grid_mask: np.ndarray, chunks: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    """The cells of the chunks marked in ``grid_mask`` (the inverse of :func:`chunk_grid_any`'s reduction)."""
    cells = grid_mask
    for axis, chunk in enumerate(chunks):
        cells = np.repeat(cells, chunk, axis=axis)
    return cells[tuple(slice(0, size) for size in shape)]


OUTPUTS = "ordercube_outputs"  # the group's attribute: what each method's criteria write (:func:`outputs_of`)


def outputs_of(methods: Mapping[str, Mapping[str, Any]], recorded: Mapping[str, Any] | None = None
               ) -> dict[str, dict[str, Any]]:
    """Per method of an identity's ``methods``: the cell variables its criteria write (``variables``) and those of
    its criteria divided by the random-labelling baseline (``baseline``, names), from the criteria registry. A method with a
    criterion not loaded here (a plug-in's) keeps its entry in ``recorded`` (the cube's), or has none.

    Stored in the cube's attributes (:data:`OUTPUTS`), so that reading a cube (``ordercube status``, the check
    for lost values) needs neither the registry nor the plug-ins that wrote it."""
    import ordercube.tasks.plugins  # noqa: F401  (its loader answers a miss: a plug-in's criterion is found)
    from ordercube.tasks.criteria import get_criterion

    outputs: dict[str, dict[str, Any]] = {}
    for model, method in methods.items():
        try:
            criteria = [get_criterion(name) for name in method.get("criteria", [])]
        except (KeyError, ValueError):  # a plug-in's criterion that is not loaded here
            if recorded and model in recorded:
                outputs[model] = dict(recorded[model])
            continue
        outputs[model] = {"variables": sorted({variable for criterion in criteria for variable in criterion.variables}),
                          "baseline": [name for name, criterion in zip(method.get("criteria", []), criteria)
                                       if criterion.normalised_by_random_labels]}
    return outputs


def _model_outputs(group: zarr.Group, models: list[str]) -> dict[str, dict[str, Any] | None]:
    """Per model, its outputs as the cube records them (:data:`OUTPUTS`); the registry's for a model the record
    lacks (a cube written before it, or an attribute damaged); None where neither knows (a plug-in's criterion
    not loaded): its chunks are not checked."""
    methods = json.loads(str(group.attrs["ordercube_identity"]))["methods"]
    try:
        recorded = json.loads(str(group.attrs[OUTPUTS]))
        recorded = {model: entry for model, entry in recorded.items() if isinstance(entry, dict)
                    and isinstance(entry.get("variables"), list) and isinstance(entry.get("baseline"), list)}
    except (KeyError, ValueError, AttributeError):
        recorded = {}
    unknown = [model for model in models if model not in recorded]
    if unknown:
        recorded = {**outputs_of({model: methods.get(model, {}) for model in unknown}), **recorded}
    return {model: recorded.get(model) for model in models}


def variables_of_models(outputs: Mapping[str, dict[str, Any] | None]) -> dict[str, np.ndarray]:
    """Per cell variable the cube should hold: which of its models write it (a boolean per model, in the order of
    ``outputs``, :func:`_model_outputs`)."""
    uses: dict[str, np.ndarray] = {name: np.ones(len(outputs), dtype=bool) for name in ALWAYS_WRITTEN}
    for m, written in enumerate(outputs.values()):
        for variable in written["variables"] if written else ():
            uses.setdefault(variable, np.zeros(len(outputs), dtype=bool))[m] = True
    return uses


@dataclass
class Lost:
    """Cells marked done (any status but pending) whose values are gone."""

    cells: np.ndarray
    missing_variables: list[str] = field(default_factory=list)
    missing_chunks: list[str] = field(default_factory=list)
    misplaced_chunks: list[str] = field(default_factory=list)
    unrecorded: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    unvouched: list[str] = field(default_factory=list)  # value chunks whose manifest chunk is gone
    baseline: str = ""  # where the random-labelling baseline that a criterion is divided by is lost

    @property
    def count(self) -> int:
        return int(self.cells.sum())

    def describe(self) -> str:
        where = [f"variable {name} missing" for name in self.missing_variables]
        where += _first(self.missing_chunks, "missing")
        unvouched = set(self.unvouched)
        where += _first([key for key in self.misplaced_chunks if key not in unvouched], "not the chunk recorded at its place")
        where += _first(self.unvouched, f"without a checksum to trust (the manifest's chunk of it is gone: {MANIFEST})")
        where += [self.baseline] if self.baseline else []
        return (f"{self.count} cell(s) marked done have lost their values ({'; '.join(where)}): "
                "they count as pending")

    @property
    def remedy(self) -> str:
        """What ``ordercube run`` does about it (for a lost baseline alone: computes the baseline, not the cells)."""
        only_baseline = not (self.missing_variables or self.missing_chunks or self.misplaced_chunks)
        return ("'ordercube run' computes the baseline again (not the cells)" if self.baseline and only_baseline
                else "'ordercube run' computes them again")


def _first(keys: list[str], what: str, shown: int = 3) -> list[str]:
    if not keys:
        return []
    more = f" and {len(keys) - shown} more" if len(keys) > shown else ""
    return [f"{', '.join(keys[:shown])}{more} {what}"]


def lost_cells(group: zarr.Group, status: np.ndarray, models: list[str], *, baseline: bool = True) -> Lost:
    """The cells whose status says done but whose value chunks (or whole variables) are absent; with
    ``baseline``, also the ok cells of a criterion divided by the random-labelling baseline
    (:func:`lost_baseline`) where that baseline is lost.

    Cubes of format 1 wrote no chunk that held only fill values, so for them only missing variables
    are detected.
    """
    done = status != 0
    lost = np.zeros(status.shape, dtype=bool)
    result = Lost(cells=lost)
    if not done.any():
        return result
    outputs = _model_outputs(group, models)  # read once, for the baseline and the variables
    if baseline:
        cells, result.baseline = lost_baseline(group, status, models, outputs)
        lost |= cells
    every_chunk = int(group.attrs.get(FORMAT_ATTRIBUTE, 1)) >= CHECKSUMMED
    present_arrays = {name for name, _ in group.arrays()}
    manifest_chunks: set[tuple[int, ...]] | None = None
    for name, used in variables_of_models(outputs).items():
        expected = done & used[None, None, :, None, None]
        if not expected.any():
            continue
        if name not in present_arrays:
            result.missing_variables.append(name)
            lost |= expected
            continue
        if not every_chunk:
            continue
        chunks = object_shape(group[name])  # type: ignore[arg-type]
        grid = chunk_grid_any(expected, chunks)
        absent = grid.copy()
        for index in stored_chunks(group, name):
            if len(index) == grid.ndim and all(i < s for i, s in zip(index, grid.shape)):
                absent[index] = False
        same_grid = chunks == object_shape(group["status"])  # type: ignore[arg-type]
        if same_grid and manifest_chunks is None and MANIFEST in group:  # listed once, for every variable
            manifest_chunks = stored_chunks(group, MANIFEST)
        misplaced = misplaced_chunks(group, name, grid & ~absent, result.unrecorded, result.unvouched,
                                     manifest_chunks) if same_grid else np.zeros_like(grid)
        if absent.any() or misplaced.any():
            result.missing_chunks += [chunk_key(name, index) for index in zip(*np.nonzero(absent))]
            result.misplaced_chunks += [chunk_key(name, index) for index in zip(*np.nonzero(misplaced))]
            lost |= expected & expand_grid(absent | misplaced, chunks, status.shape)
    return result


def lost_baseline(group: zarr.Group, status: np.ndarray, models: list[str],
                  outputs: Mapping[str, dict[str, Any] | None] | None = None) -> tuple[np.ndarray, str]:
    """The ok cells of the models with a criterion divided by the random-labelling baseline (Lange et al.
    2004, eq. 5: ``lange`` / ``lange_random`` at the same n and k) where that baseline is lost (its array
    deleted, or its chunk: NaN where a value was stored), and a description of the loss ("" when none).
    The baseline is written before any cell, so an ok cell always had it."""
    outputs = _model_outputs(group, models) if outputs is None else outputs
    uses = np.array([bool(outputs[model] and outputs[model]["baseline"]) for model in models], dtype=bool)
    normalised = list(dict.fromkeys(name for model in models for name in (outputs[model] or {}).get("baseline", [])))
    cells = (status == Status.OK) & uses[None, None, :, None, None]
    if not cells.any():
        return np.zeros(status.shape, dtype=bool), ""
    if BASELINE in group:
        stored = read_checked(group, BASELINE, _store_name(group.store))[: status.shape[1], : status.shape[3]]
        cells &= np.isnan(stored)[None, :, None, :, None]
    if not cells.any():
        return cells, ""
    n_labels = np.asarray(group["n"][: status.shape[1]])  # type: ignore[index]
    at = sorted(int(n) for n in n_labels[cells.any(axis=(0, 2, 3, 4))])
    gone = "is missing" if BASELINE not in group else f"is lost at n = {', '.join(map(str, at))}"
    return cells, f"the random-labelling baseline {BASELINE} that {', '.join(normalised)} is divided by {gone}"


def _chunk_indices(stored: zarr.Array) -> Iterator[tuple[int, ...]]:
    """Every grid position of the stored objects of ``stored`` (its shards, or its chunks)."""
    grid = tuple(-(-size // chunk) for size, chunk in zip(stored.shape, object_shape(stored)))
    return iter(product(*(range(g) for g in grid)))


def corrupt_chunks(group: zarr.Group, names: Iterable[str] | None = None) -> list[str]:
    """Every chunk of the named arrays (all by default) that cannot be read back: a failed checksum,
    a truncated or garbled file. Reads the whole cube (``ordercube status --verify``)."""
    bad = []
    every = [*group.arrays(), *([(MANIFEST, group[MANIFEST])] if MANIFEST in group else [])]
    for name, stored in every:
        if names is not None and name not in names:
            continue
        present = stored_chunks(group, name)
        bad += corrupt_chunks_at(group, name, (index for index in _chunk_indices(stored) if index in present))
    return bad


def corruption_error(path: Path | str | Location, bad: list[str]) -> InputError:
    listed = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
    return InputError(f"CUBE: {path}: {len(bad)} chunk(s) fail their checksum or cannot be decoded: {listed}. The files "
                      "were changed after ordercube wrote them; delete those chunk files (their cells become pending and "
                      "the next 'ordercube run' computes them again) or restore the cube from a copy")


def read_checked(group: zarr.Group, name: str, path: Path | Location) -> np.ndarray:
    """The whole array ``name``; ``InputError`` naming the damaged chunks when a read fails."""
    try:
        return np.asarray(group[name][:])  # type: ignore[index]
    except Exception:  # noqa: BLE001 - find out which chunk it was
        bad = corrupt_chunks(group, [name])
        if not bad:
            raise
        raise corruption_error(path, bad) from None


def chunk_grid_shape(shape: Sequence[int], chunks: Sequence[int]) -> tuple[int, ...]:
    return tuple(-(-size // chunk) for size, chunk in zip(shape, chunks))


def manifest_rows(variables: Sequence[str]) -> list[str]:
    """The arrays whose chunks the manifest records: all cell arrays but the wall-clock ``seconds``, so
    that the manifest, like the rest of the cube, is the same bit for bit in every run of a config."""
    return [*variables, "reason", "status"]


#: Manifest entries per stored object of a format-4 manifest (its chunks hold whole datasets' shard grids up to this).
MANIFEST_ENTRIES = 1 << 16


def object_grid(status: zarr.Array) -> tuple[int, ...]:
    """The grid of stored objects of the cell arrays (shards or chunks), the manifest's shape after its rows."""
    return chunk_grid_shape(status.shape, object_shape(status))


def create_manifest(group: zarr.Group, variables: Sequence[str]) -> None:
    """An empty manifest for the cell ``variables`` of a new cube (see the module docstring): one entry per
    variable and stored object. Unsharded (format 3), one manifest chunk per (dataset, n, model); sharded
    (format 4), one per block of whole datasets of up to ``MANIFEST_ENTRIES`` entries, so that it adds
    ``ceil(datasets / datasets per manifest chunk)`` objects to the cube."""
    status = group["status"]
    grid = object_grid(status)  # type: ignore[arg-type]
    if is_sharded(status):  # type: ignore[arg-type]
        per_dataset = len(variables) * int(np.prod(grid[1:]))
        chunks = (len(variables), max(1, min(grid[0], MANIFEST_ENTRIES // max(per_dataset, 1))), *grid[1:])
    else:
        chunks = (len(variables), 1, 1, 1, *grid[3:])
    manifest = group.require_group("integrity").create_array(
        "crc", shape=(len(variables), *grid), chunks=chunks, dtype="uint64",
        fill_value=0, compressors=COMPRESSORS, dimension_names=("variable", "dataset", "n", "model", "k", "trial"))
    manifest.attrs["variables"] = list(variables)


def grow_manifest(group: zarr.Group, variables: Sequence[str]) -> None:
    """Fit the manifest to the cube's grown chunk grid and add rows for new ``variables`` (inside a growth)."""
    if MANIFEST not in group:
        return
    manifest = group[MANIFEST]
    known = list(manifest.attrs["variables"])  # type: ignore[arg-type]
    known += [name for name in variables if name not in known]
    manifest.resize((len(known), *object_grid(group["status"])))  # type: ignore[arg-type]
    manifest.attrs["variables"] = known


def _suffixes(store: Any, keys: Sequence[str]) -> list[bytes | None]:
    """The last 4 bytes (the CRC32C the codec appended) of each stored chunk, None for an absent one."""
    prototype = default_buffer_prototype()

    async def read() -> list:
        return await asyncio.gather(*(store.get(key, prototype=prototype, byte_range=SuffixByteRequest(4)) for key in keys))

    return [None if buffer is None else buffer.to_bytes() for buffer in sync(read())]


def _as_recorded(suffix: bytes | None) -> np.uint64:
    return np.uint64(0) if suffix is None else RECORDED | np.uint64(int.from_bytes(suffix, "little"))


def record_objects(arrays: Mapping[str, zarr.Array], entries: Sequence[tuple[str, tuple[int, ...]]], *,
                   forget: bool = False) -> None:
    """Record in ``arrays[MANIFEST]`` the CRCs of the stored objects (chunks, or shards) of the (variable, grid
    position) ``entries``, as stored now: the objects read concurrently, the manifest written once (entries of
    variables it has no row for are left out). With ``forget``, mark them not recorded (before they are
    rewritten: a crash in between then leaves entries that accept the object, which the next run records, not
    a mismatch that discards done cells)."""
    manifest = arrays[MANIFEST]
    rows = list(manifest.attrs["variables"])  # type: ignore[arg-type]
    entries = [(name, position) for name, position in entries if name in rows]
    if not entries:
        return
    keys = [chunk_key(arrays[name].path, position) for name, position in entries]
    if forget:  # stored, zeros too: a manifest chunk missing under done cells then means it was lost, never a crash
        manifest = manifest.with_config({"write_empty_chunks": True})
        values = np.zeros(len(entries), dtype=np.uint64)
    elif is_sharded(arrays[entries[0][0]]):
        values = np.array([object_crc(data) for data in _objects(manifest.store, keys)], dtype=np.uint64)
    else:
        values = np.array([_as_recorded(s) for s in _suffixes(manifest.store, keys)], dtype=np.uint64)
    at = np.array([(rows.index(name), *position) for name, position in entries], dtype=np.int64)
    manifest.set_coordinate_selection(tuple(at.T), values)


def record_unrecorded(group: zarr.Group, unrecorded: Sequence[tuple[str, tuple[int, ...]]]) -> None:
    """Record the CRCs of done cells' chunks whose manifest entries a crash left unrecorded."""
    arrays = {name: group[name] for name, _ in unrecorded} | {MANIFEST: group[MANIFEST]}
    record_objects(arrays, unrecorded)  # type: ignore[arg-type]


def misplaced_chunks(group: zarr.Group, name: str, expected: np.ndarray,
                     unrecorded: list[tuple[str, tuple[int, ...]]] | None = None,
                     unvouched: list[str] | None = None, manifest_chunks: set[tuple[int, ...]] | None = None
                     ) -> np.ndarray:
    """Of the chunks marked in ``expected`` (a chunk-grid mask), those whose CRC is not the one the
    manifest recorded at their place (copied from elsewhere, rewritten by someone else). Chunks whose
    entry is not recorded (a crash mid-write) are accepted and appended to ``unrecorded``; chunks whose entry's
    manifest chunk is gone (deleted: a write forgets an entry by storing it, so a crash never leaves that) are
    not vouched for by anything: marked too, and their keys appended to ``unvouched``. ``manifest_chunks``: the
    manifest's chunks in the store, when the caller listed them already (:func:`stored_chunks`)."""
    misplaced = np.zeros(expected.shape, dtype=bool)
    if MANIFEST not in group:
        return misplaced
    manifest = group[MANIFEST]
    rows = list(manifest.attrs["variables"])  # type: ignore[arg-type]
    if name not in rows:
        return misplaced
    try:
        recorded = np.asarray(manifest[rows.index(name)])  # type: ignore[index]
    except ValueError:  # the manifest's own checksum failed
        raise corruption_error(_store_name(group.store), corrupt_chunks(group, [MANIFEST])) from None
    present = stored_chunks(group, MANIFEST) if manifest_chunks is None else manifest_chunks
    row, shape = rows.index(name), manifest.chunks  # type: ignore[union-attr]
    positions = list(zip(*np.nonzero(expected)))
    for position in positions:
        if tuple(i // c for i, c in zip((row, *position), shape)) not in present:
            misplaced[position] = True
            if unvouched is not None:
                unvouched.append(chunk_key(name, position))
    positions = [position for position in positions if not misplaced[position]]
    keys = [chunk_key(name, position) for position in positions]
    if is_sharded(group[name]):  # type: ignore[arg-type]
        actual = [None if data is None else object_crc(data) for data in _objects(group.store, keys)]
    else:
        actual = [None if suffix is None else _as_recorded(suffix) for suffix in _suffixes(group.store, keys)]
    for position, crc in zip(positions, actual):
        inside = all(i < s for i, s in zip(position, recorded.shape))
        if crc is None:
            continue
        if not inside or recorded[position] == 0:
            if unrecorded is not None and inside:
                unrecorded.append((name, tuple(int(i) for i in position)))
        elif recorded[position] != crc:
            misplaced[position] = True
    undecodable = corrupt_chunks_at(group, name, zip(*np.nonzero(misplaced)))
    if undecodable:  # a run would read it to rewrite part of it, a report to show it: damage, not a loss
        raise corruption_error(_store_name(group.store), undecodable)
    return misplaced


def corrupt_chunks_at(group: zarr.Group, name: str, positions: Iterable[tuple[int, ...]]) -> list[str]:
    """Of the chunks of array ``name`` at grid ``positions``, those that cannot be decoded (as :func:`corrupt_chunks`)."""
    stored, bad = group[name], []
    shape = object_shape(stored)  # type: ignore[arg-type]
    for position in positions:
        index = tuple(int(i) for i in position)
        try:  # the region one stored object holds (a chunk, or a shard: all its chunks and its index)
            stored[tuple(slice(i * size, (i + 1) * size) for i, size in zip(index, shape))]  # type: ignore[index]
        except Exception as error:  # any decoding failure of the stored bytes is damage  # noqa: BLE001
            bad.append(f"{chunk_key(name, index)} ({str(error).split('.')[0]})")
    return bad


def _store_name(store: Any) -> Path | str:
    """The folder, or the URL, of a zarr store (for messages)."""
    if getattr(store, "root", None) is not None:
        return Path(str(store.root))
    protocol = getattr(getattr(store, "fs", None), "protocol", "")
    protocol = protocol[0] if isinstance(protocol, (tuple, list)) else protocol
    return f"{protocol}://{getattr(store, 'path', '')}" if protocol else str(store)
