"""Region writes of computed blocks into an open cube: values, then status, then the chunks' CRCs.

In a sharded cube (format 4) one stored object holds many chunks, and zarr updates a shard by reading it,
replacing the chunks written and storing it whole again; in an unsharded one, a chunk that several tasks fill
is read, decoded and stored again by each of them (three times per chunk on the quickstart at 200 resamples:
writes were 8% of the compute). So :class:`BlockWriter` keeps the blocks of a stored object (a shard, or in a
cube of format 3 a chunk) in memory (:meth:`BlockWriter.hold`, the executors' path) and writes the object once
its planned cells are all in (the sweep's tasks come in the order shards are laid out:
:func:`ordercube.pipeline.cube.layout.shard_shape`), every ``FLUSH_SECONDS`` whatever is held, before anything
reads the cube back through a writer or the :class:`ordercube.pipeline.cube.owner.Cube` or writes a block at
once (:meth:`BlockWriter.write`, the adaptive rounds' skipped cells: so writes land in the order they were
made), and when the run lets go of the cube's lock (finished, interrupted or failed:
:mod:`ordercube.pipeline.cube.lock`). An object is written values first and status last, each variable as one
write of its whole region (its cells not held are read first and written back unchanged), so a crash at any
point leaves every cell either done with its values or pending; what was held and not written is computed
again by the next run, bit for bit.

The implementation of :meth:`ordercube.pipeline.cube.owner.Cube.writer`; other modules go through the Cube.
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np
import zarr
from zarr.core.sync import sync

from ordercube.pipeline.system import interrupts
from ordercube.pipeline.cube import assignments as stored_assignments
from ordercube.pipeline.cube.layout import array, stored_coords
from ordercube.pipeline.cube.grid import Chunk, planned_mask
from ordercube.pipeline.cube.integrity import MANIFEST, object_shape, record_objects
from ordercube.tasks.trial import BlockResult, Status

#: The longest a computed block waits in memory before it is written (a kill -9 loses at most this much work, which
#: the next run computes again); ``ORDERCUBE_FLUSH_SECONDS`` sets another for the runs of a process (0: every batch
#: of results written as it comes, so a chunk filled by several batches is written once per batch, as its tests of
#: partial writes need).
FLUSH_SECONDS = 10.0
_OPEN: weakref.WeakSet[BlockWriter] = weakref.WeakSet()


def flush_open_writers() -> None:
    """Write every block the open writers of this process hold (called when a cube's lock is let go)."""
    for writer in list(_OPEN):
        writer.flush()


Position = tuple[int, ...]


def flush_seconds() -> float:
    """How long held blocks may wait before they are written: ``ORDERCUBE_FLUSH_SECONDS``, else
    :data:`FLUSH_SECONDS` (0: at once; exit 2 on a value that is not a number >= 0)."""
    from ordercube.pipeline.system.environment import positive_number

    return float(positive_number("ORDERCUBE_FLUSH_SECONDS", FLUSH_SECONDS, integer=False, example=10, unit="seconds",
                                 zero=True))


class BlockWriter:
    """The arrays of a cube open for writing, opened once per run (opening one reads its metadata file), and the
    region writes of computed blocks into them (:func:`write_block`). ``writer[name]`` is the array ``name``,
    once every block held has been written. Blocks are held and written by stored object (see the module
    docstring); a cube of format 1 or 2 (no manifest) has its blocks written as they come."""

    def __init__(self, group: zarr.Group) -> None:
        self.arrays = writable_arrays(group)
        self.group = group
        status = self.arrays["status"]
        # Blocks are held by stored object (a shard, or a chunk of an unsharded cube with a manifest: format 3 on),
        # so that each object is written once its planned cells are in, not once per task that touches it.
        self.shard = object_shape(status) if status.shards is not None or MANIFEST in self.arrays else None
        self.held: dict[Position, list[tuple[Chunk, BlockResult]]] = {}
        self.remaining: dict[Position, int] | None = None
        self.complete: list[Position] = []  # held objects whose planned cells are all in, written next
        self.flushed_at = time.monotonic()
        self.flush_seconds = flush_seconds()
        self.objects_written = 0  # shard writes of all variables (for the benchmarks' request counts)
        if self.shard is not None:
            _OPEN.add(self)

    def __getitem__(self, name: str) -> zarr.Array:
        flush_open_writers()  # whichever writer of the run holds them (the executor's, the adaptive rounds')
        return self.arrays[name]

    def write(self, chunk: Chunk, result: BlockResult) -> None:
        """Store one block now (see :func:`write_block`), after every block the run's writers hold, so that the
        writes land in the order they were made (the adaptive rounds rewrite cells as skipped this way)."""
        if self.shard is None:
            with interrupts.deferred():  # a signal lets the write finish; the executor stops after
                write_block(self.arrays, chunk, result)
            return
        flush_open_writers()
        with interrupts.deferred():  # a signal lets the write finish; the executor stops after
            write_objects(self.arrays, [(_shard_of(piece[0], self.shard), [piece])
                                        for piece in _by_shard(chunk, result, self.shard)], self.shard)

    def hold(self, chunk: Chunk, result: BlockResult) -> None:
        """Store one computed block (see :func:`write_block`): hold it until its stored object is written."""
        self._hold(chunk, result)
        self._write_complete()

    def write_merged(self, blocks: Iterable[tuple[Chunk, BlockResult]]) -> Iterator[tuple[Chunk, BlockResult]]:
        """Store ``blocks``, pieces of the same storage chunk joined first (:func:`merge_blocks`: at small n the
        writes set the pace); yields each block once it is stored (held for its stored object, in a cube with a
        manifest). The objects the blocks complete are written together once the last block is yielded."""
        for chunk, result in merge_blocks(list(blocks)):
            self._hold(chunk, result)
            yield chunk, result
        self._write_complete()

    def flush(self) -> None:
        """Write every stored object holding blocks (all in one :func:`write_objects`)."""
        self._write(list(self.held))
        self.flushed_at = time.monotonic()

    def _hold(self, chunk: Chunk, result: BlockResult) -> None:
        if self.shard is None:
            with interrupts.deferred():  # a signal lets the write finish; the executor stops after
                write_block(self.arrays, chunk, result)
            return
        for piece in _by_shard(chunk, result, self.shard):
            position = _shard_of(piece[0], self.shard)
            self.held.setdefault(position, []).append(piece)
            remaining = self._remaining()
            remaining[position] = remaining.get(position, 0) - piece[0].cells
            if remaining[position] <= 0:
                self.complete.append(position)

    def _write_complete(self) -> None:
        """Write the objects whose planned cells are all in, or everything held once ``flush_seconds`` passed."""
        if time.monotonic() - self.flushed_at >= self.flush_seconds:
            self.flush()
        else:
            self._write(self.complete)
        self.complete = []

    def _write(self, positions: Sequence[Position]) -> None:
        batch = [(position, self.held.pop(position)) for position in dict.fromkeys(positions) if position in self.held]
        if batch:
            with interrupts.deferred():  # a signal lets the write finish; the executor stops after
                write_objects(self.arrays, batch, self.shard)  # type: ignore[arg-type]
            self.objects_written += len(batch)

    def _remaining(self) -> dict[Position, int]:
        """Per shard, its planned cells still pending when the writer was opened (counted down as blocks come)."""
        if self.remaining is None:
            coords = stored_coords(self.group)
            shape = coords.shape
            status = np.asarray(self.arrays["status"][tuple(slice(0, size) for size in shape)])
            todo = planned_mask(json.loads(str(self.group.attrs["ordercube_plan"])), coords) & (status == Status.PENDING)
            assert self.shard is not None
            counts = _per_object(todo, self.shard)
            self.remaining = {tuple(int(i) for i in at): int(counts[at]) for at in zip(*np.nonzero(counts))}
        return self.remaining


def _per_object(mask: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """How many True cells of ``mask`` each stored object of ``shape`` holds (its grid's shape)."""
    grid = tuple(-(-size // part) for size, part in zip(mask.shape, shape))
    padded = np.zeros(tuple(g * c for g, c in zip(grid, shape)), dtype=bool)
    padded[tuple(slice(0, size) for size in mask.shape)] = mask
    return padded.reshape([x for g, c in zip(grid, shape) for x in (g, c)]).sum(axis=tuple(range(1, 2 * len(grid), 2)))


def _shard_of(chunk: Chunk, shard: tuple[int, ...]) -> Position:
    return (chunk.dataset // shard[0], chunk.n // shard[1], chunk.model // shard[2], chunk.k[0] // shard[3],
            chunk.trial[0] // shard[4])


def _by_shard(chunk: Chunk, result: BlockResult, shard: tuple[int, ...]) -> list[tuple[Chunk, BlockResult]]:
    """``chunk`` and its ``result`` cut along its trials where they cross from one shard into the next (a block
    lies in one storage chunk's k, and merged blocks may join several chunks' trials)."""
    owner = [t // shard[4] for t in chunk.trial]
    if len(set(owner)) == 1:
        return [(chunk, result)]
    pieces = []
    for part in sorted(set(owner)):
        at = [j for j, o in enumerate(owner) if o == part]
        pieces.append((Chunk(chunk.dataset, chunk.n, chunk.model, chunk.k, tuple(chunk.trial[j] for j in at)),
                       BlockResult(values={name: v[:, at] for name, v in result.values.items()},
                                   status=result.status[:, at], reason=result.reason[:, at],
                                   seconds=result.seconds[:, at],
                                   assignments=None if result.assignments is None else result.assignments[:, at])))
    return pieces


def write_objects(arrays: Mapping[str, zarr.Array], batch: Sequence[tuple[Position, Sequence[tuple[Chunk, BlockResult]]]],
                  shard: tuple[int, ...]) -> None:
    """Store the blocks of several stored objects (a shard, or an unsharded cube's chunk): ``batch`` holds
    each object's grid position and its pieces. Each variable of an object is one write of the smallest box of
    the object holding its pieces (cells of the box not in the pieces read first and written back as they
    were). In the order :func:`write_block` keeps: the objects' manifest entries (and their assignments')
    forgotten, then every object's values and reasons, then assignments, then every object's status, then the
    manifest entries recorded. The writes of one step go to distinct objects, so they are made concurrently:
    one round trip to the store's event loop per step, not one per object and variable."""
    writes = [(position, _object_writes(arrays, position, pieces, shard)) for position, pieces in batch]
    # record_objects keeps the variables the manifest has rows for (not the wall-clock seconds)
    recorded = [(name, position) for position, planned in writes for name in planned] if MANIFEST in arrays else []
    # an object's pieces joined: their assignments are one write (and one manifest update) per object, not per task
    assigned = [(chunk, result) for _, pieces in batch
                for chunk, result in merge_blocks([(chunk, result) for chunk, result in pieces
                                                   if result.assignments is not None])
                if stored_assignments.ASSIGNMENT in arrays]
    checked = stored_assignments.ASSIGNMENT_MANIFEST in arrays
    if recorded:
        record_objects(arrays, recorded, forget=True)
    if checked:
        for chunk, _ in assigned:
            stored_assignments.forget(arrays, chunk)
    _store_all([write for _, planned in writes for name, write in planned.items() if name != "status"])
    for chunk, result in assigned:  # the assignments too are stored before the status marks them done
        stored_assignments.write(arrays, chunk, result.assignments)  # type: ignore[arg-type]
    _store_all([planned["status"] for _, planned in writes if "status" in planned])
    if recorded:
        record_objects(arrays, recorded)
    if checked:
        for chunk, _ in assigned:
            stored_assignments.record(arrays, chunk)


Write = tuple[zarr.Array, tuple[slice, ...], np.ndarray]
#: Object writes in flight at once (a flush may hold thousands: the open files and connections stay bounded).
CONCURRENT_WRITES = 64


def _object_writes(arrays: Mapping[str, zarr.Array], position: Position, pieces: Sequence[tuple[Chunk, BlockResult]],
                   shard: tuple[int, ...]) -> dict[str, Write]:
    """By variable, the write of the stored object at ``position`` that stores ``pieces``: the array, the box
    and its values (the box's cells not in the pieces as stored now)."""
    status = arrays["status"]
    origin = [p * s for p, s in zip(position, shard)]
    region = tuple(slice(o, min(o + s, size)) for o, s, size in zip(origin, shard, status.shape))
    names = [*dict.fromkeys(name for _, result in pieces for name in result.values), "reason", "seconds", "status"]
    planned: dict[str, Write] = {}
    for name in names:
        given = [(chunk, _field(result, name)) for chunk, result in pieces if _field(result, name) is not None]
        if not given:
            continue
        # The smallest box of the shard holding the pieces: zarr decodes and encodes only its chunks (and reads
        # none when the box is the whole shard).
        low = [min(min(axis) for axis in (_local(chunk, origin)[a] for chunk, _ in given)) for a in range(5)]
        high = [max(max(axis) for axis in (_local(chunk, origin)[a] for chunk, _ in given)) + 1 for a in range(5)]
        box = tuple(slice(r.start + lo, r.start + hi) for r, lo, hi in zip(region, low, high))
        covered = np.zeros(tuple(hi - lo for lo, hi in zip(low, high)), dtype=bool)
        for chunk, _ in given:
            covered[np.ix_(*_local(chunk, [o + lo for o, lo in zip(origin, low)]))] = True
        stored = arrays[name]
        values = (np.full(covered.shape, stored.fill_value, dtype=object if name == "reason" else stored.dtype)
                  if covered.all() else np.asarray(stored[box]))
        for chunk, block in given:
            at = np.ix_(*_local(chunk, [o + lo for o, lo in zip(origin, low)]))
            values[at] = np.asarray(block).reshape(values[at].shape)
        planned[name] = (stored.with_config({"write_empty_chunks": True}), box, values)
    return planned


def _store_all(planned: Sequence[Write]) -> None:
    """Make the writes ``planned`` (each to its own stored objects) concurrently, in one call of the store's loop."""
    if not planned:
        return

    async def store() -> None:
        slots = asyncio.Semaphore(CONCURRENT_WRITES)

        async def one(stored: zarr.Array, box: tuple[slice, ...], values: np.ndarray) -> None:
            async with slots:
                await stored.async_array.setitem(box, values)

        await asyncio.gather(*(one(*write) for write in planned))

    sync(store())


def _field(result: BlockResult, name: str) -> np.ndarray | None:
    return {"status": result.status, "reason": result.reason, "seconds": result.seconds}.get(name, result.values.get(name))


def _local(chunk: Chunk, origin: Sequence[int]) -> list[list[int]]:
    """The indices of ``chunk``'s cells within the region of a shard starting at ``origin``."""
    return [[chunk.dataset - origin[0]], [chunk.n - origin[1]], [chunk.model - origin[2]],
            [k - origin[3] for k in chunk.k], [t - origin[4] for t in chunk.trial]]


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
                        seconds=np.concatenate([r.seconds for r in results], axis=1),
                        assignments=_joined_assignments(results)),
        ))
    return merged


def _joined_assignments(results: Sequence[BlockResult]) -> np.ndarray | None:
    """The pieces' assignments joined along their trials (pieces without them: -1)."""
    given = [r.assignments for r in results if r.assignments is not None]
    if not given:
        return None
    parts, items = given[0].shape[2:]
    return np.concatenate([r.assignments if r.assignments is not None
                           else np.full((*r.status.shape, parts, items), -1, dtype=np.int16) for r in results], axis=1)


def writable_arrays(group: zarr.Group) -> dict[str, zarr.Array]:
    """The cube's arrays by name for :func:`write_block` (see :class:`BlockWriter`), with its chunk manifests
    (``MANIFEST``, and the assignments' when the cube stores them) if it has them."""
    arrays = dict(group.arrays())
    for manifest in (MANIFEST, stored_assignments.ASSIGNMENT_MANIFEST):
        if manifest in group:
            arrays[manifest] = array(group, manifest)
    return arrays


def write_block(arrays: Mapping[str, zarr.Array], chunk: Chunk, result: BlockResult) -> None:
    """Store one computed block: the values first, then the status that marks them done, then the
    CRCs of the chunks written in the manifest (see :mod:`ordercube.pipeline.cube.integrity`).

    ``arrays`` come from :func:`writable_arrays`, opened once per run by :class:`BlockWriter`.
    Every chunk the block touches is stored, even when it holds only fill values (all-NaN values of
    failed cells, empty reasons), so that a missing chunk always means lost values. A block's assignments
    (``result.assignments``, a method that stores them) are written with its values, before its status, and
    their chunks' CRCs recorded in the assignments' manifest (:mod:`ordercube.pipeline.cube.assignments`).
    """
    selection = (chunk.dataset, chunk.n, chunk.model, list(chunk.k), list(chunk.trial))
    written = [*result.values.items(), ("reason", result.reason), ("seconds", result.seconds), ("status", result.status)]
    recorded = [name for name, _ in written if arrays[name].chunks == arrays["status"].chunks]  # format 1 may differ
    positions = _grid_positions(chunk, object_shape(arrays["status"])) if MANIFEST in arrays else []
    assigned = result.assignments is not None and stored_assignments.ASSIGNMENT in arrays
    checked = assigned and stored_assignments.ASSIGNMENT_MANIFEST in arrays
    if positions:
        record_objects(arrays, [(name, position) for position in positions for name in recorded], forget=True)
    if checked:
        stored_assignments.forget(arrays, chunk)
    for name, values in written:
        if name == "status" and assigned:  # the assignments too are stored before the status marks them done
            stored_assignments.write(arrays, chunk, result.assignments)  # type: ignore[arg-type]
        stored = arrays[name].with_config({"write_empty_chunks": True})
        if stored.shards is not None and _contiguous(chunk.k) and _contiguous(chunk.trial):
            # zarr's partial update of a shard takes a region (an orthogonal selection of lists fails there)
            stored[(*selection[:3], slice(chunk.k[0], chunk.k[-1] + 1), slice(chunk.trial[0], chunk.trial[-1] + 1))] = values
        else:
            stored.set_orthogonal_selection(selection, values)  # type: ignore[arg-type]
    if positions:
        record_objects(arrays, [(name, position) for position in positions for name in recorded])
    if checked:
        stored_assignments.record(arrays, chunk)


def _contiguous(indices: Sequence[int]) -> bool:
    return list(indices) == list(range(indices[0], indices[0] + len(indices)))


def _grid_positions(chunk: Chunk, chunks: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The positions in the grid of stored objects (``chunks``: the chunk, or shard, shape) a block touches (a
    merged block, see merge_blocks, may span several)."""
    d, n, m, k, t = chunks
    return [(chunk.dataset // d, chunk.n // n, chunk.model // m, k_chunk, t_chunk)
            for k_chunk in sorted({index // k for index in chunk.k}) for t_chunk in sorted({index // t for index in chunk.trial})]

