"""No ``__main__`` guard needed: the embedded LocalCluster's worker processes never import the main module.

A plain script (and the same script read from standard input) calls ``choose_k`` and ``sweep`` at its top level
with ``workers=2``, which forces the LocalCluster; it runs once, prints once, and its cubes are the bits of the
same calls computed in this process. A worker killed by its cell is restarted by its nanny without importing the
script either. A notebook does the same, and a record registered by the notebook itself is refused in one line.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import subprocess
import sys
import time
from multiprocessing import spawn
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

import ordercube
from conftest import REPO, small_config
from ordercube.pipeline.run.cluster import connect
from ordercube.pipeline.run.nomain import MAIN_KEYS, WORKER_PROCESS_NAME, workers_without_main
from test_engine import assert_same_cells

TIMEOUT = 240  # seconds for one script: about 15-40 s on a busy 2-core machine

SCRIPT = """\
print("top of the script", flush=True)
import os
import sys
sys.path.insert(0, {tests!r})
import numpy as np
import ordercube
from conftest import small_config

out = {out!r}
workers = int(os.environ["WORKERS"])
rng = np.random.default_rng(0)
X = np.concatenate([rng.normal(centre, 0.3, size=(40, 2)) for centre in ((0, 0), (3, 0), (0, 3))])
choice = ordercube.choose_k(X, k=range(2, 6), criteria=["lange"], resamples=4, seed=5, workers=workers,
                            out=out + "/choice.zarr")
print("choice k_hat", choice.k_hat)
cube = ordercube.sweep(small_config(), out=out + "/sweep.zarr", workers=workers)
print("sweep k_hat", ordercube.select_k(cube)["lange"].sel(dataset="gauss", model="km").values.tolist())
"""


def X() -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.concatenate([rng.normal(centre, 0.3, size=(40, 2)) for centre in ((0, 0), (3, 0), (0, 3))])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The script run as a file and, at the same time, fed on standard input."""
    folder = tmp_path_factory.mktemp("scripts")
    env = {**os.environ, "PYTHONPATH": str(REPO), "WORKERS": "2"}
    started = {}
    for how in ("file", "stdin"):
        out = folder / how
        out.mkdir()
        script = out / "plain.py"
        script.write_text(SCRIPT.format(tests=str(REPO / "tests"), out=str(out)))
        command = [sys.executable, str(script)] if how == "file" else [sys.executable, "-"]
        started[how] = (out, script, subprocess.Popen(
            command, stdin=subprocess.PIPE if how == "stdin" else subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, cwd=out, env=env))
    done = {}
    try:
        for how, (out, script, process) in started.items():
            try:
                stdout, stderr = process.communicate(script.read_text() if how == "stdin" else None, timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                pytest.fail(f"the script run from its {how} did not finish within {TIMEOUT} s")
            done[how] = (out, process.returncode, stdout, stderr)
    finally:
        for _, _, process in started.values():
            if process.poll() is None:
                process.kill()
                process.wait(timeout=30)
    return done


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_a_script_without_a_guard_runs_once_on_two_workers_from_a_file_or_stdin(runs, how):
    out, code, stdout, stderr = runs[how]
    assert code == 0, stderr
    assert "Traceback" not in stderr and "failed to start" not in stderr, stderr
    # printed once: no worker process ran the script's top level (it would sweep again)
    assert stdout.count("top of the script") == 1, stdout
    assert stdout.count("choice k_hat 3") == 1, stdout
    assert stdout.count("sweep k_hat [3, 3]") == 1, stdout


def test_the_scripts_cubes_on_two_workers_are_the_bits_computed_in_this_process(runs, tmp_path):
    choice = ordercube.choose_k(X(), k=range(2, 6), criteria=["lange"], resamples=4, seed=5, workers=0,
                                out=tmp_path / "choice.zarr")
    assert choice.k_hat == 3
    ordercube.sweep(small_config(), out=tmp_path / "sweep.zarr", workers=0)
    for how in ("file", "stdin"):
        out = runs[how][0]
        assert runs[how][1] == 0, runs[how][3]
        assert_same_cells(out / "choice.zarr", tmp_path / "choice.zarr")  # every variable but the seconds
        assert_same_cells(out / "sweep.zarr", tmp_path / "sweep.zarr")


@pytest.fixture
def main_script(tmp_path, monkeypatch):
    """This process's main module made a script that marks a file when it runs (under pytest-xdist it has none)."""
    mark = tmp_path / "ran"
    script = tmp_path / "main_script.py"
    script.write_text(f"open({str(mark)!r}, 'a').write('ran\\n')\n")
    monkeypatch.setattr(sys.modules["__main__"], "__file__", str(script), raising=False)
    monkeypatch.setattr(sys.modules["__main__"], "__spec__", None, raising=False)
    return mark


def test_only_the_dask_worker_processes_of_our_cluster_are_spawned_without_the_main_module(main_script):
    before = spawn.get_preparation_data(WORKER_PROCESS_NAME)
    with workers_without_main():
        worker = spawn.get_preparation_data(WORKER_PROCESS_NAME)
        other = spawn.get_preparation_data("a process of the user's")
    after = spawn.get_preparation_data(WORKER_PROCESS_NAME)
    assert before["init_main_from_path"].endswith("main_script.py")
    assert set(worker) == set(before) - set(MAIN_KEYS)
    assert set(other) == set(before) == set(after)


def test_a_worker_the_nanny_restarts_does_not_import_the_main_script_either(main_script):
    """The worker of our LocalCluster is killed; its nanny starts another. Neither ran the main script, which a
    process spawned the usual way (checked first, so that the mark means something) does."""
    process = multiprocessing.get_context("spawn").Process(target=print, args=("spawned",))
    process.start()
    process.join(timeout=TIMEOUT)
    assert process.exitcode == 0 and main_script.read_text() == "ran\n", "a spawned process did not run the main script"
    main_script.unlink()
    with connect(workers=1, scheduler=None, scheduler_file=None, dashboard_address=None) as client:
        first = _pids(client)
        assert first, "the LocalCluster started without its worker"
        with contextlib.suppress(Exception):  # the worker dies before it answers
            client.run(os._exit, 1)
        deadline = time.monotonic() + TIMEOUT
        while not (_pids(client) and _pids(client).isdisjoint(first)):
            if time.monotonic() > deadline:
                pytest.fail(f"the nanny did not restart its worker within {TIMEOUT} s")
            time.sleep(0.2)
        # the worker's main module: the interpreter's own (python -c), not a script run again as __mp_main__
        main = client.run(eval, "getattr(__import__('sys').modules['__main__'], '__file__', None)")  # a builtin: by name
    assert list(main.values()) == [None], main
    assert not main_script.exists(), "a worker process ran the main script"


def _pids(client) -> set[int]:
    """The process ids of the client's workers now (none while the only one is dead)."""
    try:
        return set(client.run(os.getpid).values())
    except Exception:  # noqa: BLE001 - a worker that died as it was asked
        return set()


NOTEBOOK_CELLS = [
    f"import sys\nsys.path.insert(0, {str(REPO / 'tests')!r})\nimport numpy as np\nimport ordercube\n"
    "from conftest import small_config",
    "rng = np.random.default_rng(0)\n"
    "X = np.concatenate([rng.normal(centre, 0.3, size=(40, 2)) for centre in ((0, 0), (3, 0), (0, 3))])\n"
    "choice = ordercube.choose_k(X, k=range(2, 6), criteria=['lange'], resamples=4, seed=5, workers=2, "
    "out='choice.zarr')\nprint('choice k_hat', choice.k_hat)",
    # a record of the notebook's own: the workers cannot import it, so it is refused before a cluster starts
    "from ordercube.plugin import Clusterer, register_algorithm\n"
    "def in_turn(X, k, rng):\n    return np.arange(len(X)) % k\n"
    "register_algorithm(Clusterer('in_turn', in_turn))\n"
    "try:\n    ordercube.sweep(small_config(), out='refused.zarr', workers=2)\n"
    "except ordercube.InputError as error:\n    print('refused:', error)",
]


def test_a_notebook_chooses_k_on_two_workers_and_refuses_a_record_of_its_own(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in NOTEBOOK_CELLS])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    NotebookClient(notebook, timeout=TIMEOUT, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)  # a failing or hanging cell raises
    printed = ["".join(output.get("text", "") for output in cell.outputs) for cell in notebook.cells]
    assert "choice k_hat 3" in printed[1], printed[1]
    assert printed[2].startswith("refused: algorithm 'in_turn' (in_turn is defined in __main__): registered by the main "
                                 "script or notebook"), printed[2]
    assert "ORDERCUBE_PLUGINS=module" in printed[2] and "workers=0" in printed[2], printed[2]
    assert not (tmp_path / "refused.zarr").exists()
    choice = ordercube.choose_k(X(), k=range(2, 6), criteria=["lange"], resamples=4, seed=5, workers=0,
                                out=tmp_path / "here.zarr")
    assert_same_cells(tmp_path / "choice.zarr", tmp_path / "here.zarr")
    assert choice.k_hat == 3
