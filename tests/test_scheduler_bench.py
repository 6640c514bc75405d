"""benchmarks/bench_scheduler.py measures what it says: every task of the sweep counted on the scheduler, every
chunk the single writer stores counted as a put, on a real `dask scheduler` + `dask worker` on 127.0.0.1."""

from __future__ import annotations

import importlib.util

import pytest

from conftest import REPO

def bench():
    spec = importlib.util.spec_from_file_location("bench_scheduler", REPO / "benchmarks" / "bench_scheduler.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # starts a scheduler and two workers (~20 s idle)
@pytest.mark.timeout(600)
def test_the_bench_counts_every_planned_task_and_each_chunks_puts(tmp_path):
    from ordercube.inputs import read_config
    from ordercube.pipeline.run.sweep import preview_plan

    scheduler_bench = bench()
    config = read_config(scheduler_bench.cheap_config(16, tmp_path / "planned.zarr"))
    planned = preview_plan(config).tasks(2)
    with scheduler_bench.dask_processes(tmp_path / "cluster", 2, timeout=300) as scheduler_file:
        seen = scheduler_bench.one_sweep(scheduler_file, 16, tmp_path)
    assert seen["tasks"] == len(planned) == 16  # one trial of 4 datasets per task
    variables = 4  # pairwise, reason, seconds, status: each task writes one chunk of each
    assert seen["puts"] >= variables * len(planned)
    assert seen["seconds"] > 0 and seen["cpu"] > 0 and seen["driver_cpu"] > 0
    assert seen["writer_wall"] > 0 and seen["result_bytes"] > 0


def test_payload_sizes_are_those_of_a_pickled_task_and_result():
    task_bytes, result_bytes, cells = bench().payload_bytes()
    assert cells == 2  # k = 2, 3 for one trial
    assert 100 < task_bytes < 10_000 and 100 < result_bytes < 10_000
