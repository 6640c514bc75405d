"""The notebooks run the Python API in a real Jupyter kernel (nbclient): a sweep, k̂ and figures."""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
import zarr
from jupyter_client.manager import start_new_kernel
from nbclient import NotebookClient

import ordercube
from conftest import REPO
from ordercube.pipeline.report.write import status_counts


def execute(name: str, cube: Path, monkeypatch) -> list:
    """Run ``notebooks/<name>`` with its cube at ``cube``; every cell has 300 s, and no cell may fail."""
    monkeypatch.setenv("ORDERCUBE_CUBE", str(cube))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    notebook = nbformat.read(REPO / "notebooks" / name, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    return outputs


def test_quickstart_notebook_sweeps_a_config_dict_and_draws_the_curves(tmp_path, monkeypatch):
    outputs = execute("01_quickstart.ipynb", tmp_path / "cube.zarr", monkeypatch)
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2
    assert any("k̂ = 3 for gaussians3 at n = [100, 300]" in o.get("text", "") for o in outputs)
    total = 3 * 2 * 1 * 7 * 10  # datasets x n x methods x k x resamples
    assert status_counts(ordercube.open_cube(tmp_path / "cube.zarr"))["ok"] == total


def test_your_data_notebook_sweeps_a_dataframe(tmp_path, monkeypatch):
    """Needs in-memory datasets in ordercube.pipeline.config.study.parse_config (branch data-in)."""
    outputs = execute("02_your_data.ipynb", tmp_path / "iris.zarr", monkeypatch)
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 1
    cube = ordercube.open_cube(tmp_path / "iris.zarr")
    assert cube.sizes["dataset"] == 1 and list(cube["n"].values) == [50, 75]
    assert status_counts(cube)["ok"] == 2 * 5 * 20


SWEEP_IN_KERNEL = """
import sys
sys.path.insert(0, {tests!r})
import ordercube
from conftest import small_config
config = small_config(n=[40, 80, 160], resamples=24, execution={{"trials_per_chunk": 2, "task_seconds": 0.01}})
try:
    ordercube.sweep(config, out={out!r}, workers=2)
except KeyboardInterrupt as error:
    print("caught:", error)
    raise
"""


def _reply(kc, msg_id: str, timeout: float) -> tuple[dict, str]:
    """The execute reply to ``msg_id`` and what the cell printed."""
    printed = []
    deadline = time.monotonic() + timeout
    while True:
        message = kc.get_iopub_msg(timeout=max(1.0, deadline - time.monotonic()))
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            break
    while (reply := kc.get_shell_msg(timeout=timeout))["parent_header"].get("msg_id") != msg_id:
        pass  # start_new_kernel's kernel_info reply
    return reply["content"], "".join(printed)


def test_a_jupyter_interrupt_keeps_finished_cells_raises_keyboard_interrupt_and_the_kernel_resumes(tmp_path):
    """The kernel's interrupt is SIGINT to its process group: the sweep's own LocalCluster workers
    ignore it, the sweep stops with KeyboardInterrupt in the cell, and the same cell then completes."""
    out = tmp_path / "cube.zarr"
    km, kc = start_new_kernel(kernel_name="python3", env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        code = SWEEP_IN_KERNEL.format(tests=str(REPO / "tests"), out=str(out))
        msg_id = kc.execute(code)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _computed(out):
            time.sleep(0.05)
        km.interrupt_kernel()
        reply, printed = _reply(kc, msg_id, timeout=120)
        assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt", reply
        assert "every finished cell is in" in printed and "the same call resumes" in printed, printed
        counts = status_counts(ordercube.open_cube(out))
        total = 2 * 3 * 1 * 3 * 24
        assert 0 < counts["ok"] < total and counts["ok"] + counts["pending"] == total, counts
        reply, printed = _reply(kc, kc.execute(code), timeout=240)
        assert reply["status"] == "ok", (reply, printed)
        assert status_counts(ordercube.open_cube(out))["ok"] == total
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _computed(cube: Path) -> int:
    try:
        return int((zarr.open_array(cube / "status", mode="r")[:] == 1).sum())
    except Exception:  # noqa: BLE001 - not created yet, or half-written: read again
        return 0
