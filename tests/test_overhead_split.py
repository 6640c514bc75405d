"""The engine's own account of where a run's time went (Summary's split, the run command's overhead line),
in this process and on a real LocalCluster, checked against the cube it wrote."""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys

import numpy as np
import pytest
import zarr
from distributed.protocol import deserialize, serialize

from conftest import cli_in_process, small_config, write_config
from ordercube.pipeline.cli_print import overhead_line
from ordercube.pipeline.config.study import load_config
from ordercube.pipeline.cube.grid import config_coords, default_chunks
from ordercube.pipeline.run import estimate
from ordercube.pipeline.run.execute import Summary, synthetic_sources
from ordercube.pipeline.run.graph import Computed, execute_task
from ordercube.pipeline.run.sweep import make_plan, run_sweep


def _kernel_seconds(out) -> float:
    return float(np.nansum(zarr.open_group(str(out), mode="r")["seconds"][...]))


def _check_split(summary: Summary, out) -> None:
    # the kernels' seconds are the cube's own, cell by cell: only the order of the sum differs
    assert summary.kernel_seconds == pytest.approx(_kernel_seconds(out), rel=1e-9, abs=1e-12)
    assert summary.kernel_seconds > 0
    assert summary.tasks >= 1
    assert summary.bookkeeping_seconds >= 0
    assert summary.write_seconds > 0  # every result was stored by the driver
    assert summary.driver_seconds > 0  # it planned and created the cube
    parts = summary.bookkeeping_seconds + summary.write_seconds + summary.driver_seconds
    assert summary.overhead_seconds == pytest.approx(parts)
    assert summary.overhead_share == pytest.approx(parts / summary.kernel_seconds)
    assert summary.write_seconds <= summary.seconds  # the writes happened inside the executor's wall


def test_in_process_run_splits_its_time(tmp_path, monkeypatch):
    # no pilot: its pieces (as many as its seconds allow, so fewer on a busy machine) would leave the executor a
    # plan of fewer cells, split into other tasks than the plan's
    monkeypatch.setattr(estimate, "PILOT_MIN_WORK", float("inf"))
    config = load_config(write_config(tmp_path / "c.yaml", **small_config()), out=str(tmp_path / "c.zarr"))
    summary = run_sweep(config, workers=0, show_progress=False, echo=lambda line: None)
    assert summary.computed == 2 * 2 * 3 * 6
    plan = make_plan(config, config_coords(config), default_chunks(config),
                     np.zeros(config_coords(config).shape, dtype=np.int8))
    assert summary.tasks == len(plan.tasks(workers=1)) or summary.tasks == len(plan.tasks(workers=2))
    _check_split(summary, tmp_path / "c.zarr")


@pytest.mark.timeout(300)
def test_cluster_run_splits_its_time(tmp_path):
    config = load_config(write_config(tmp_path / "c.yaml", **small_config()), out=str(tmp_path / "c.zarr"))
    summary = run_sweep(config, workers=1, show_progress=False, echo=lambda line: None, dashboard_address=None)
    assert summary.computed == 2 * 2 * 3 * 6
    _check_split(summary, tmp_path / "c.zarr")


def test_a_task_carries_its_wall_and_cpu_through_dask_serialisation(tmp_path):
    config = load_config(write_config(tmp_path / "c.yaml", **small_config()), out=str(tmp_path / "c.zarr"))
    coords = config_coords(config)
    plan = make_plan(config, coords, default_chunks(config), np.zeros(coords.shape, dtype=np.int8))
    task = plan.tasks(workers=1)[0]
    computed = execute_task(task, synthetic_sources(config).get(task.dataset), None)
    assert isinstance(computed, Computed)
    assert len(computed) == len(task.blocks)
    kernel = sum(float(result.seconds.sum()) for _, result in computed)
    assert computed.kernel == pytest.approx(kernel)
    assert computed.wall >= kernel > 0  # the task's wall holds its cells' kernels
    assert computed.cpu > 0
    for copy in (pickle.loads(pickle.dumps(computed)), deserialize(*serialize(computed))):
        assert type(copy) is Computed
        assert (copy.wall, copy.cpu) == (computed.wall, computed.cpu)
        assert [chunk for chunk, _ in copy] == [chunk for chunk, _ in computed]


def test_overhead_line_states_the_split_per_cell():
    summary = Summary(computed=2000, failed=0, infeasible=0, seconds=3.0, tasks=8, kernel_seconds=4.0,
                      bookkeeping_seconds=0.1, write_seconds=0.3, driver_seconds=0.2)
    line = overhead_line(summary)
    assert float(re.search(r"overhead: (\S+) ms per cell", line).group(1)) == pytest.approx(1000 * 0.6 / 2000)
    for name, seconds in (("bookkeeping", 0.1), ("writes", 0.3), ("driver", 0.2)):
        assert float(re.search(rf"{name} ([\d.]+)", line).group(1)) == pytest.approx(1000 * seconds / 2000)
    assert f"{100 * 0.6 / 4.0:.1f}% of compute" in line
    assert "8 tasks" in line


def test_run_command_prints_the_overhead_line(tmp_path):
    config = write_config(tmp_path / "c.yaml", **small_config())
    done = cli_in_process("run", str(config), "--out", str(tmp_path / "c.zarr"), "--workers", "0", "--no-progress")
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("engine overhead:"))
    kernel = float(re.search(r"\((\d+\.\d) s in kernels", line).group(1))
    assert kernel == pytest.approx(_kernel_seconds(tmp_path / "c.zarr"), abs=0.051)


ALLOCATE = """
import resource, numpy as np
from ordercube.pipeline.system.memory import keep_freed_memory

def faults():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(200):
        np.ones(131072).sum()  # 1 MiB, allocated and freed as a kernel's temporaries are
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

print(faults(), keep_freed_memory(), faults())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_worker_started_with_dasks_trim_threshold_reuses_freed_arrays():
    # the environment `dask worker` gives its processes (distributed.nanny.pre-spawn-environ)
    done = subprocess.run([sys.executable, "-c", ALLOCATE], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"})
    assert done.returncode == 0, done.stderr
    before, set_, after = done.stdout.split()
    assert set_ == "True"
    assert int(before) > 200 * 100  # each 1 MiB array mapped and faulted in afresh
    assert int(after) < int(before) / 10, (before, after)
