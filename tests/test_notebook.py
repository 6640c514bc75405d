"""The notebooks: their committed outputs, and the same outputs again from a fresh Jupyter kernel (nbclient).

``notebooks/refresh.py`` writes the committed outputs; the test here executes each notebook the same way
and compares every code cell's outputs with the committed ones, so a change in ordercube that changes
what a reader of the notebook sees fails here until the notebook is refreshed and the change reviewed.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import struct
import time
from base64 import b64decode
from pathlib import Path

import nbformat
import pytest
import zarr
from jupyter_client.manager import start_new_kernel
from nbclient.exceptions import CellExecutionError, CellTimeoutError

import ordercube
from conftest import REPO
from ordercube.pipeline.report.write import status_counts

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
REFRESH = "python notebooks/refresh.py"
CELL_TIMEOUT = 300  # seconds per cell: each notebook runs in about 10 s on a busy 2-core machine


def _refresh():
    spec = importlib.util.spec_from_file_location("notebooks_refresh", REPO / "notebooks" / "refresh.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def code_cells(notebook) -> list[tuple[int, nbformat.NotebookNode]]:
    """(index among all cells, cell) of every code cell."""
    return [(index, cell) for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"]


# What is inherently volatile in an output, and the only thing normalised before the comparison: an
# object's memory address in a repr (``<... at 0x7f3a...>``). The notebooks print no timings, paths or
# progress bars; a PNG's bytes change with the matplotlib and libpng versions, so a figure is compared
# by its presence and its size in pixels.
ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
TIMING = re.compile(r"\b\d+(\.\d+)? ?(s|ms|sec|seconds)\b")


def png_size(encoded: str) -> tuple[int, int]:
    """(width, height) in pixels from a base64 PNG's IHDR chunk."""
    header = b64decode(encoded[:64])
    assert header[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", header[16:24])


def comparable(outputs: list) -> list[str]:
    """Each output as a line of its kind followed by its normalised text (an image: its size in pixels)."""
    lines = []
    for output in outputs:
        kind = output["output_type"]
        if kind == "stream":
            lines.append(f"[{output['name']}]\n{ADDRESS.sub('0x...', output['text'])}")
        elif kind == "error":
            lines.append(f"[error] {output['ename']}: {output['evalue']}")
        else:
            for mime, value in sorted(output.get("data", {}).items()):
                if mime.startswith("image/png"):
                    lines.append(f"[{kind} {mime}] %d x %d pixels" % png_size(value))
                else:
                    text = value if isinstance(value, str) else "".join(value)
                    lines.append(f"[{kind} {mime}]\n{ADDRESS.sub('0x...', text)}")
    return lines


def execute(path: Path, cube: Path) -> nbformat.NotebookNode:
    """``path`` executed by notebooks/refresh.py with its cube at ``cube``; a failing or hanging cell fails the test."""
    try:
        return _refresh().execute(path, timeout=CELL_TIMEOUT, cube=cube)
    except CellTimeoutError as error:
        pytest.fail(f"{path.name}: a cell ran longer than {CELL_TIMEOUT} s:\n{error}")
    except CellExecutionError as error:
        pytest.fail(f"{path.name}: a cell failed:\n{error}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_committed_notebooks_have_the_outputs_of_every_code_cell(path):
    """What a reader sees on the repository's web page: every code cell executed, in order, with outputs,
    no error, and nothing that would change from one run to the next (a temporary path, an address)."""
    notebook = nbformat.read(path, as_version=4)
    cells = code_cells(notebook)
    assert cells, path
    missing = [index for index, cell in cells if not cell.outputs]
    assert not missing, f"{path.name}: code cells {missing} have no outputs; run {REFRESH} {path.name}"
    counts = [cell.execution_count for _, cell in cells]
    assert counts == list(range(1, len(cells) + 1)), f"{path.name}: executed out of order {counts}; run {REFRESH}"
    for index, cell in cells:
        text = "\n".join(comparable(cell.outputs))
        assert "[error]" not in text, f"{path.name}, cell {index}: {text}"
        for volatile in ("/tmp/", "ordercube-notebook-", "it/s]", "%|"):  # a temporary folder, a progress bar
            assert volatile not in text, f"{path.name}, cell {index} prints {volatile!r}: {text}"
        assert not ADDRESS.search(text), f"{path.name}, cell {index} prints a memory address: {text}"
        assert not TIMING.search(text), f"{path.name}, cell {index} prints a timing: {TIMING.search(text)[0]!r}"
    assert sum("image/png" in output.get("data", {}) for _, cell in cells for output in cell.outputs) >= 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_a_fresh_kernel_gives_the_committed_outputs_cell_by_cell(path, tmp_path):
    committed = nbformat.read(path, as_version=4)
    executed = execute(path, tmp_path / "cube.zarr")
    for (index, before), (_, after) in zip(code_cells(committed), code_cells(executed)):
        old, new = comparable(before.outputs), comparable(after.outputs)
        if old != new:
            diff = "\n".join(difflib.unified_diff("\n".join(old).splitlines(), "\n".join(new).splitlines(),
                                                   "committed", "executed now", lineterm=""))
            pytest.fail(f"{path.name}, cell {index}: the outputs changed (if on purpose: {REFRESH} {path.name} "
                        f"and review the diff)\n{diff}")
    # what the outputs say is computed: every cell of the cube is in, none failed
    counts = status_counts(ordercube.open_cube(tmp_path / "cube.zarr"))
    assert counts["ok"] == counts["total"] > 0, counts


def test_quickstart_notebook_chooses_three_for_the_three_gaussians():
    """The committed quickstart says what its last cell checks (an assert in the notebook)."""
    notebook = nbformat.read(REPO / "notebooks" / "01_quickstart.ipynb", as_version=4)
    printed = "".join(output.get("text", "") for _, cell in code_cells(notebook) for output in cell.outputs)
    assert "k̂ = 3 for gaussians3 at n = [100, 300]" in printed
    assert "'ok': 420" in printed  # datasets x n x methods x k x resamples = 3 x 2 x 1 x 7 x 10


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
