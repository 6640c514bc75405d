"""Region writes of computed blocks into an open cube: values, then status, then the chunks' CRCs.

The implementation of :meth:`ordercube.pipeline.cube.owner.Cube.writer`; other modules go through the Cube.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np
import zarr

from ordercube.pipeline.cube import assignments as stored_assignments
from ordercube.pipeline.cube.layout import array
from ordercube.pipeline.cube.grid import Chunk
from ordercube.pipeline.cube.integrity import MANIFEST, record_chunks
from ordercube.tasks.cell import BlockResult


class BlockWriter:
    """The arrays of a cube open for writing, opened once per run (opening one reads its metadata file), and the
    region writes of computed blocks into them (:func:`write_block`). ``writer[name]`` is the array ``name``."""

    def __init__(self, group: zarr.Group) -> None:
        self.arrays = writable_arrays(group)

    def __getitem__(self, name: str) -> zarr.Array:
        return self.arrays[name]

    def write(self, chunk: Chunk, result: BlockResult) -> None:
        """Store one computed block (see :func:`write_block`)."""
        write_block(self.arrays, chunk, result)

    def write_merged(self, blocks: Iterable[tuple[Chunk, BlockResult]]) -> Iterator[tuple[Chunk, BlockResult]]:
        """Store ``blocks``, pieces of the same storage chunk joined first (:func:`merge_blocks`: at small n the
        writes set the pace); yields each block once it is stored."""
        for chunk, result in merge_blocks(list(blocks)):
            write_block(self.arrays, chunk, result)
            yield chunk, result


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
    positions = _grid_positions(chunk, arrays["status"].chunks) if MANIFEST in arrays else []
    assigned = result.assignments is not None and stored_assignments.ASSIGNMENT in arrays
    checked = assigned and stored_assignments.ASSIGNMENT_MANIFEST in arrays
    for position in positions:
        record_chunks(arrays, recorded, position, forget=True)
    if checked:
        stored_assignments.forget(arrays, chunk)
    for name, values in written:
        if name == "status" and assigned:  # the assignments too are stored before the status marks them done
            stored_assignments.write(arrays, chunk, result.assignments)  # type: ignore[arg-type]
        arrays[name].with_config({"write_empty_chunks": True}).set_orthogonal_selection(selection, values)  # type: ignore[arg-type]
    for position in positions:
        record_chunks(arrays, recorded, position)
    if checked:
        stored_assignments.record(arrays, chunk)


def _grid_positions(chunk: Chunk, chunks: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The chunk-grid positions a block touches (a merged block, see merge_blocks, may span several)."""
    d, n, m, k, t = chunks
    return [(chunk.dataset // d, chunk.n // n, chunk.model // m, k_chunk, t_chunk)
            for k_chunk in sorted({index // k for index in chunk.k}) for t_chunk in sorted({index // t for index in chunk.trial})]

