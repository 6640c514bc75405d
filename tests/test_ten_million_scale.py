"""The driver at scale: the plan is streamed, so its memory per cell stays a few bytes whatever the grid's size.

Small grids of the code paths a 10^7-cell sweep takes (benchmarks/bench_ten_million.py runs the large one): the
chunks to compute against a straightforward implementation, the streamed tasks against the list, and the traced
memory of planning and handing out every task at 10^4 and 10^5 cells.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import small_config, write_config
from ordercube.pipeline.config.study import load_config
from ordercube.pipeline.cube.grid import Chunk, chunks_to_compute, config_coords, default_chunks, group_into_tasks
from ordercube.pipeline.run.rounds import FixedFeed
from ordercube.pipeline.run.sweep import make_plan


def reference_chunks(mask: np.ndarray, todo: np.ndarray, chunks: dict[str, int]) -> list[Chunk]:
    """Chunk by chunk with plain loops: the k values and trials of each chunk that hold a wanted cell."""
    kc, tc = chunks["k"], chunks["trial"]
    D, N, M, K, T = mask.shape
    out = []
    for d in range(D):
        for i in range(N):
            for m in range(M):
                for k0 in range(0, K, kc):
                    for t0 in range(0, T, tc):
                        block = (mask & todo)[d, i, m, k0:k0 + kc, t0:t0 + tc]
                        ks = tuple(k0 + j for j in range(block.shape[0]) if block[j].any())
                        trials = tuple(t0 + j for j in range(block.shape[1]) if block[:, j].any())
                        if ks:
                            out.append(Chunk(d, i, m, ks, trials))
    return out


@settings(max_examples=60, deadline=None)
@given(shape=st.tuples(*(st.integers(1, n) for n in (2, 2, 2, 7, 13))), kc=st.integers(1, 4), tc=st.integers(1, 6),
       seed=st.integers(0, 2**32 - 1), density=st.sampled_from([0.05, 0.5, 1.0]))
def test_chunks_to_compute_are_the_blocks_of_wanted_cells(shape, kc, tc, seed, density):
    rng = np.random.default_rng(seed)
    mask, todo = rng.random(shape) < density, rng.random(shape) < 0.7
    chunks = {"k": kc, "trial": tc}
    expected = reference_chunks(mask, todo, chunks)
    assert list(chunks_to_compute(mask, todo, chunks)) == expected
    assert list(chunks_to_compute(mask & todo, None, chunks)) == expected
    # every wanted cell is in exactly one block, and a block holds nothing outside its chunk
    covered = np.zeros(shape, dtype=int)
    for chunk in expected:
        assert len({k // kc for k in chunk.k}) == 1 and len({t // tc for t in chunk.trial}) == 1
        covered[chunk.dataset, chunk.n, chunk.model, np.ix_(chunk.k, chunk.trial)[0], np.ix_(chunk.k, chunk.trial)[1]] += 1
    assert covered.max(initial=0) <= 1
    assert ((covered == 1) | ~(mask & todo)).all()


def _plan(tmp_path, resamples: int, **execution):
    config = load_config(write_config(tmp_path / f"c{resamples}.yaml", **small_config(
        resamples=resamples, execution={"trials_per_chunk": 50, "task_seconds": 0.05, **execution})))
    coords = config_coords(config)
    status = np.zeros(coords.shape, dtype=np.int8)
    status[..., : resamples // 3] = 1  # a resumed run: the first third is done
    return make_plan(config, coords, default_chunks(config), status)


@pytest.mark.parametrize("workers", [0, 1, 2])
def test_streamed_tasks_are_the_listed_ones(tmp_path, workers):
    plan = _plan(tmp_path, 300)
    listed = group_into_tasks(plan.chunks, plan.coords, costs=plan.cell_costs,
                              task_seconds=plan.config.execution.task_seconds, workers=workers)
    streamed = list(plan.iter_tasks(workers))
    assert [[chunk for chunk, _ in task.blocks] for task in streamed] == listed
    assert plan.task_count(workers) == len(listed) > 1
    feed = FixedFeed(plan.iter_tasks(workers), total=plan.cells_to_compute, count=plan.task_count(workers),
                     datasets=plan.datasets)
    eager = FixedFeed(plan.tasks(workers))
    assert (feed.total, feed.tasks, feed.datasets) == (eager.total, eager.tasks, eager.datasets)
    assert feed.total == sum(chunk.cells for chunk in plan.chunks) == int(plan.wanted.sum())
    taken = [task for batch in iter(lambda: feed.take(3), []) for task in batch]
    assert taken == streamed


def _traced_peak(tmp_path, resamples: int) -> int:
    """Peak traced bytes of planning a run of ``resamples`` trials and handing out all its tasks, as a run does."""
    config = load_config(write_config(tmp_path / f"m{resamples}.yaml", **small_config(
        resamples=resamples, k=list(range(2, 10)), execution={"trials_per_chunk": 20, "task_seconds": 0.05})))
    tracemalloc.start()
    try:
        coords = config_coords(config)
        plan = make_plan(config, coords, default_chunks(config), np.zeros(coords.shape, dtype=np.int8))
        feed = FixedFeed(plan.iter_tasks(2), total=plan.cells_to_compute, count=plan.task_count(2),
                         datasets=plan.datasets)
        while feed.take(8):
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_driver_memory_per_cell_is_a_few_bytes(tmp_path):
    """From 10^4 to 10^5 cells the plan's peak grows by the cube's own per-cell arrays (status, the planned and wanted
    masks: a byte each, a few of them at once) and its trial labels, not by Python objects per chunk or task (the
    whole grid's chunks and tasks built up front: ~11 bytes per cell at 10^7 cells of 10 k)."""
    small, large = 313, 3125  # 2 datasets x 2 n x 1 method x 8 k x trials: 10^4 and 10^5 cells
    per_cell = (_traced_peak(tmp_path, large) - _traced_peak(tmp_path, small)) / (32 * (large - small))
    assert per_cell < 8, f"{per_cell:.1f} bytes per cell"


def reference_missing(cube):
    """The missing cells counted with a loop over cells: the first reason of each (dataset, n, method, k, status)."""
    import pandas as pd

    from ordercube.tasks.cell import Status

    status, reasons = cube["status"].values, cube["reason"].values
    rows: dict = {}
    for index in zip(*np.nonzero((status != Status.OK) & (status != Status.SKIPPED))):
        at = {dim: cube[dim].values[i] for dim, i in zip(cube["status"].dims, index)}
        key = (str(at["dataset"]), int(at["n"]), str(at["model"]), int(at["k"]), Status(int(status[index])).name.lower())
        rows.setdefault(key, {"cells": 0, "reason": str(reasons[index] or "")})["cells"] += 1
    table = pd.DataFrame([{"dataset": d, "n": n, "method": m, "k": k, "status": s, **row}
                          for (d, n, m, k, s), row in rows.items()])
    return table.sort_values(["dataset", "n", "method", "k", "status"], ignore_index=True)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), trials=st.integers(1, 9))
def test_missing_cells_counts_every_group_with_its_first_reason(seed, trials):
    import json

    import pandas as pd
    import xarray as xr

    from ordercube.pipeline.report.write import missing_cells

    rng = np.random.default_rng(seed)
    coords = {"dataset": ["b", "a"], "n": [80, 40, 60], "model": ["m2", "m1"], "k": [3, 2], "trial": list(range(trials))}
    shape = tuple(len(v) for v in coords.values())
    status = rng.choice(np.array([0, 1, 1, 1, 2, 3, 4, 5], dtype=np.int8), size=shape)
    reason = rng.choice(np.array(["", "x failed", "too big", "gone"], dtype=object), size=shape)
    plan = {"datasets": {"a": {"n": [40, 60, 80]}, "b": {"n": [40, 60, 80]}}, "methods": {"m1": [], "m2": []},
            "k": [2, 3], "resamples": trials}
    cube = xr.Dataset({"status": (tuple(coords), status), "reason": (tuple(coords), reason)}, coords=coords,
                      attrs={"ordercube_plan": json.dumps(plan)})
    expected = reference_missing(cube)
    got = missing_cells(cube)
    if expected.empty:
        assert got.empty
    else:
        pd.testing.assert_frame_equal(got, expected)
