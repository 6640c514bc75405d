"""The Python API (``import ordercube``): the CLI's sweep and cube, from a script, a thread, a caller's Client.

Real LocalClusters, a real ``dask scheduler`` + ``dask worker`` on 127.0.0.1, real zarr stores, real scripts.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr
from distributed import Client, LocalCluster

import ordercube
from conftest import REPO, STUBS, cli, cli_in_process, small_config, write_config
from ordercube.pipeline.reduce.select import criterion_scores
from ordercube.pipeline.reduce.select import select_k as reduce_select_k
from ordercube.pipeline.reduce.select import true_k
from ordercube.pipeline.report.write import status_counts
from test_engine import assert_same_cells, cube_bytes
from test_faults import _dask_processes

TOTAL = 2 * 2 * 1 * 3 * 6  # small_config: datasets x n x methods x k x resamples


@pytest.fixture(scope="module")
def cli_cube(tmp_path_factory) -> Path:
    """small_config computed by ``ordercube run`` (the reference every API cube must equal)."""
    folder = tmp_path_factory.mktemp("cli")
    result = cli("run", str(write_config(folder / "small.yaml", **small_config())), "--out", str(folder / "cube.zarr"),
                 "--workers", "2", "--no-progress")
    assert result.returncode == 0, result.stderr
    return folder / "cube.zarr"


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of the caller's (two worker processes), as a notebook user makes one."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as user_client:
        yield user_client


def assert_still_usable(client: Client, workers: int = 2) -> None:
    assert client.status == "running"
    assert len(client.scheduler_info()["workers"]) == workers
    assert client.submit(sum, [1, 2, 39]).result(timeout=30) == 42


def test_import_ordercube_loads_no_heavy_library():
    code = ("import sys, ordercube; heavy = {'xarray', 'zarr', 'distributed', 'dask', 'pandas', 'numpy'};"
            "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def _spans_of_cells(dask_scheduler) -> list[str]:
    """The names of the scheduler's spans that hold a sweep's tasks (their prefix is ``execute_task``)."""
    return [" ".join(s.name) for s in dask_scheduler.extensions["spans"].spans.values()
            if any(tg.prefix.name == "execute_task" for tg in s.traverse_groups())]


def test_sweep_on_a_callers_local_cluster_equals_the_cli_and_leaves_the_cluster_open(tmp_path, cli_cube, client):
    out = tmp_path / "api.zarr"
    cube = ordercube.sweep(small_config(), client=client, out=out)
    assert isinstance(cube, xr.Dataset)
    assert status_counts(cube) == {"total": TOTAL, "ok": TOTAL, "failed": 0, "infeasible": 0, "crashed": 0, "pending": 0,
                                   "skipped": 0}
    assert_same_cells(out, cli_cube)
    assert_still_usable(client)
    assert client.run_on_scheduler(_spans_of_cells) == ["ordercube sweep"], \
        "the sweep's tasks are not held by one span of their own on the caller's scheduler (the dashboard's name for it)"
    chosen = ordercube.select_k(cube)
    expected = reduce_select_k(criterion_scores(ordercube.open_cube(cli_cube)))
    beside = [name for name in chosen.coords if name not in expected.coords]
    xr.testing.assert_identical(chosen.drop_vars(beside), expected)
    assert {f"lange_{field}" for field in ("k_set", "within_noise", "tied", "small_cluster")} <= set(beside)
    assert int(chosen["lange"].sel(dataset="gauss", n=80, model="km")) == 3
    xr.testing.assert_identical(ordercube.select_k(str(out)), chosen)  # a path works too
    before = cube_bytes(out, keep_seconds=True)
    ordercube.sweep(small_config(), client=client, out=out)  # resume: nothing left to compute, nothing rewritten
    assert cube_bytes(out, keep_seconds=True) == before


def test_a_dict_config_reads_relative_paths_from_the_current_folder_like_the_file_from_its_own(tmp_path, client,
                                                                                                  monkeypatch):
    rng = np.random.default_rng(5)
    X = np.vstack([rng.normal(centre, 0.3, size=(60, 2)) for centre in ((0, 0), (4, 0), (0, 4))])
    (tmp_path / "study").mkdir()
    np.savetxt(tmp_path / "study" / "blobs.csv", X, delimiter=",", header="a,b", comments="")
    dataset = {"name": "blobs", "kind": "file", "path": "blobs.csv", "n": [40, 80]}
    config = small_config(datasets=[dataset])
    from_file = ordercube.sweep(write_config(tmp_path / "study" / "c.yaml", **config), client=client,
                                out=tmp_path / "file.zarr")
    monkeypatch.chdir(tmp_path)
    from_dict = ordercube.sweep(small_config(datasets=[{**dataset, "path": "study/blobs.csv"}]), client=client,
                                out="dict.zarr")
    assert_same_cells(tmp_path / "file.zarr", tmp_path / "dict.zarr")
    assert int(ordercube.select_k(from_dict)["lange"].sel(dataset="blobs", n=80, model="km")) == 3
    assert from_file.sizes == from_dict.sizes


def test_sweep_on_a_dask_scheduler_and_workers_started_as_processes(tmp_path, cli_cube):
    with _dask_processes(tmp_path / "cluster") as (_, _, scheduler_file):
        with Client(scheduler_file=str(scheduler_file), timeout="30s") as remote:
            ordercube.sweep(small_config(), client=remote, out=tmp_path / "remote.zarr")
            assert_still_usable(remote)
        ordercube.sweep(small_config(), scheduler_file=str(scheduler_file), out=tmp_path / "by_file.zarr",
                        connect_timeout=30)
    assert_same_cells(tmp_path / "remote.zarr", cli_cube)
    assert_same_cells(tmp_path / "by_file.zarr", cli_cube)


def test_sweep_from_a_thread_that_is_not_the_main_one_on_its_own_local_cluster(tmp_path, cli_cube):
    """Signal handlers cannot be installed off the main thread: the sweep installs none there, and its
    LocalCluster (started with SIGINT blocked in its threads) runs as from the main thread."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["cube"] = ordercube.sweep(small_config(), out=tmp_path / "thread.zarr", workers=1)
        except BaseException as error:  # noqa: B036 - reported to the main thread below
            outcome["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=240)
    assert not thread.is_alive() and "error" not in outcome, outcome
    assert_same_cells(tmp_path / "thread.zarr", cli_cube)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def _computed(cube: Path) -> int:
    """Cells of ``cube`` computed so far (0 before it exists)."""
    try:
        return int((zarr.open_array(cube / "status", mode="r")[:] == 1).sum())
    except Exception:  # noqa: BLE001 - not created yet, or half-written: read again
        return 0


def _interrupt_when_cells_arrive(cube: Path, timeout: float = 120) -> threading.Thread:
    """SIGINT to this process (as Ctrl-C or a Jupyter interrupt) once the first cells are on disk."""
    def watch() -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not _computed(cube):
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_an_interrupt_raises_keyboard_interrupt_keeps_every_finished_cell_and_the_same_call_resumes(tmp_path, client):
    config = small_config(n=[40, 80, 160], resamples=24, execution={"trials_per_chunk": 2, "task_seconds": 0.01})
    total = 2 * 3 * 1 * 3 * 24
    out = tmp_path / "cube.zarr"
    watcher = _interrupt_when_cells_arrive(out)
    with pytest.raises(KeyboardInterrupt, match="every finished cell is in .*cube.zarr; the same call resumes"):
        ordercube.sweep(config, client=client, out=out)
    watcher.join(timeout=10)
    counts = status_counts(ordercube.open_cube(out))
    print(f"interrupted at {counts}")  # with -s
    assert 0 < counts["ok"] < total and counts["ok"] + counts["pending"] == total, counts
    assert_still_usable(client)
    resumed = ordercube.sweep(config, client=client, out=out)
    assert status_counts(resumed)["ok"] == total
    ordercube.sweep(config, client=client, out=tmp_path / "whole.zarr")
    assert_same_cells(out, tmp_path / "whole.zarr")


SCRIPT = """\
import sys
sys.path.insert(0, {tests!r})
import ordercube
from conftest import small_config
{body}
"""
BODY = """cube = ordercube.sweep(small_config(), out={out!r}, workers=2)
print("k_hat", ordercube.select_k(cube)["lange"].sel(dataset="gauss", model="km").values.tolist())"""


def _script(path: Path, body: str) -> subprocess.CompletedProcess:
    path.write_text(SCRIPT.format(tests=str(REPO / "tests"), body=body))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)])})


def test_a_script_with_the_usual_main_guard_runs_as_one_without_it(tmp_path):
    """A guard is not needed (tests/test_no_main_guard.py) and does no harm: the cells are the same bits."""
    out = tmp_path / "cube.zarr"
    guarded_body = 'if __name__ == "__main__":\n' + "".join(f"    {line}\n" for line in BODY.format(out=str(out)).splitlines())
    guarded = _script(tmp_path / "guarded.py", guarded_body)
    assert guarded.returncode == 0, guarded.stderr
    assert "Traceback" not in guarded.stderr
    assert "k_hat [3, 3]" in guarded.stdout
    assert status_counts(ordercube.open_cube(out))["ok"] == TOTAL

    # Work this small runs in the script's own process when no workers are asked for.
    here = _script(tmp_path / "small.py", BODY.replace(", workers=2", "").format(out=str(tmp_path / "here.zarr")))
    assert here.returncode == 0 and "Traceback" not in here.stderr, here.stderr
    assert "k_hat [3, 3]" in here.stdout
    assert_same_cells(out, tmp_path / "here.zarr")


STOPPED = """if __name__ == "__main__":
    config = small_config(n=[40, 80, 160], resamples=24, execution={{"trials_per_chunk": 2, "task_seconds": 0.01}})
    try:
        ordercube.sweep(config, out={out!r}, workers=2)
    except KeyboardInterrupt as error:
        print(error)
        sys.exit(130)
"""


def test_sigterm_to_a_scripts_process_group_stops_the_sweep_as_ctrl_c_does(tmp_path):
    """A batch system's stop (SIGTERM to the process group): the workers of the sweep's LocalCluster ignore
    it, the sweep raises KeyboardInterrupt with every finished cell kept, and the same script resumes."""
    out = tmp_path / "cube.zarr"
    script = tmp_path / "stopped.py"
    script.write_text(SCRIPT.format(tests=str(REPO / "tests"), body=STOPPED.format(out=str(out))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)])}
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not _computed(out) and process.poll() is None:
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, stderr
    assert "sweep interrupted: every finished cell is in" in stdout and "Traceback" not in stderr, stderr
    total = 2 * 3 * 1 * 3 * 24
    counts = status_counts(ordercube.open_cube(out))
    assert 0 < counts["ok"] < total and counts["ok"] + counts["pending"] == total, counts
    resumed = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240)
    assert resumed.returncode == 0, resumed.stderr
    assert status_counts(ordercube.open_cube(out))["ok"] == total


def test_validate_plans_without_writing_and_report_writes_the_clis_table(tmp_path, cli_cube):
    plan = ordercube.validate(small_config(), out=tmp_path / "new.zarr")
    assert (plan.planned_cells, plan.cells_to_compute) == (TOTAL, TOTAL)
    assert not (tmp_path / "new.zarr").exists()
    assert ordercube.validate(small_config(), out=cli_cube).cells_to_compute == 0

    table = ordercube.report(cli_cube, tmp_path / "api-report")
    result = cli("report", str(cli_cube), "--out", str(tmp_path / "cli-report"))
    assert result.returncode == 0, result.stderr
    api, by_cli = tmp_path / "api-report", tmp_path / "cli-report"
    assert (api / "selection.csv").read_text() == (by_cli / "selection.csv").read_text()
    assert sorted(p.name for p in api.iterdir()) == sorted(p.name for p in by_cli.iterdir())
    assert set(table["criterion"]) == {"lange", "pairwise"} and len(table) == 2 * 2 * 2
    in_memory = ordercube.report(ordercube.open_cube(cli_cube), tmp_path / "from-dataset")
    pd.testing.assert_frame_equal(in_memory, table)


REFUSED = {  # id: (config, options, error, message)
    "config-value": (small_config(resamples=0), {}, ordercube.ConfigError, r"^resamples: .*got 0"),
    "missing-file": ("no/such.yaml", {}, ordercube.ConfigError, r"^config: 'no/such.yaml' does not exist"),
    "folder": (".", {}, ordercube.ConfigError, r"^config: '\.' is a folder; give the path of a YAML config$"),
    "not-a-config": (["a"], {}, ordercube.ConfigError, r"^config: expected the path of a YAML file or a dict, got list"),
    "workers": (small_config(), {"workers": -1}, ordercube.InputError, r"^workers: expected an integer >= 0, got -1"),
    "client": (small_config(), {"client": "tcp://x"}, ordercube.InputError,
               r"^client: expected a distributed.Client, got str"),
    "two-places": (small_config(), {"workers": 2, "scheduler": "tcp://127.0.0.1:1"}, ordercube.InputError,
                   r"^scheduler: given together with workers"),
    "wait": (small_config(), {"wait_for_workers": -1}, ordercube.InputError,
             r"^wait_for_workers: expected a number of seconds > 0, got -1"),
    "option": (small_config(), {"retry": True}, TypeError, r"unexpected keyword argument\(s\) \['retry'\]"),
    "data": (small_config(), {"data": [1]}, ordercube.ConfigError, r"^data: expected a dict"),
    "data-tuple": (small_config(), {"data": {"x": (1, 2, 3)}}, ordercube.ConfigError,
                   r"^data\['x'\]: .*got a tuple of 3 items"),
    "dataset-kind": (small_config(datasets=[{"name": "g", "kind": "nope"}]), {}, ordercube.ConfigError,
                     r"^datasets\[0\]\.kind: unknown dataset 'nope'"),
}


@pytest.mark.parametrize(("config", "options", "error", "message"), REFUSED.values(), ids=REFUSED.keys())
def test_bad_input_raises_the_error_that_names_the_key_and_writes_nothing(tmp_path, config, options, error, message):
    with pytest.raises(error, match=message):
        ordercube.sweep(config, out=tmp_path / "cube.zarr", **options)
    if not set(options) & {"workers", "client", "scheduler", "wait_for_workers", "retry"}:  # sweep-only options
        with pytest.raises(error, match=message):
            ordercube.validate(config, out=tmp_path / "cube.zarr", **options)
    assert not (tmp_path / "cube.zarr").exists()


def test_checking_a_scheduler_address_works_inside_a_running_event_loop_as_in_jupyter(client):
    """Jupyter's kernel runs an asyncio loop in the thread that runs a cell, where asyncio.run refuses to start."""
    from ordercube.pipeline.run.cluster import check_is_scheduler

    async def in_a_cell() -> None:
        check_is_scheduler(client.scheduler.address, "scheduler:", timeout=10)
        with pytest.raises(ordercube.InputError, match=r"^scheduler: tcp://127.0.0.1:1: no Dask scheduler answered"):
            check_is_scheduler("tcp://127.0.0.1:1", "scheduler:", timeout=5)

    asyncio.run(in_a_cell())


def test_select_k_with_a_bad_rule_names_it(cli_cube):
    with pytest.raises(ordercube.InputError, match=r"^decide: "):
        ordercube.select_k(cli_cube, {"lange": {"threshold": "x"}})


@pytest.fixture(scope="module")
def small_cube(tmp_path_factory) -> Path:
    """small_config computed in this process (no cluster): the cube every opener of select_k must agree on."""
    folder = tmp_path_factory.mktemp("opened")
    result = cli_in_process("run", str(write_config(folder / "small.yaml", **small_config())), "--out",
                            str(folder / "cube.zarr"), "--workers", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    return folder / "cube.zarr"


def test_select_k_is_the_same_from_a_path_open_cube_and_xarrays_open_zarr(small_cube):
    expected = reduce_select_k(criterion_scores(ordercube.open_cube(small_cube).load()))
    assert set(expected.data_vars) == {"lange", "pairwise"} and int(expected["lange"].min()) >= 2
    for given in (small_cube, str(small_cube), ordercube.open_cube(small_cube), xr.open_zarr(small_cube),
                  criterion_scores(ordercube.open_cube(small_cube))):
        chosen = ordercube.select_k(given)
        beside = [name for name in chosen.coords if name not in expected.coords]
        xr.testing.assert_identical(chosen.drop_vars(beside), expected)
    re_decided = ordercube.select_k(xr.open_zarr(small_cube), {"pairwise": {"ties": "smallest"}})
    assert set(re_decided.data_vars) == {"lange", "pairwise"}
    # beside each k̂: its k's within noise (k̂ among them), the flags; no stored clusterings: no cluster sizes known
    for name in ("lange", "pairwise"):
        for k_hat, words, flagged in zip(re_decided[name].values.ravel(), re_decided[f"{name}_k_set"].values.ravel(),
                                         re_decided[f"{name}_within_noise"].values.ravel()):
            assert str(k_hat) in words.split() and flagged == (len(words.split()) > 1)
        assert (re_decided[f"{name}_smallest_cluster"] == -1).all() and not re_decided[f"{name}_small_cluster"].any()
    with pytest.raises(ordercube.InputError, match=r"^cube_or_scores: expected a cube .* got DataFrame"):
        ordercube.select_k(pd.DataFrame())


def test_select_k_of_a_cube_that_lost_its_baseline_refuses_or_counts_its_cells_pending(small_cube, tmp_path):
    """A deleted random-labelling baseline never leaves lange silently without a k̂: xarray's own opener
    (which reads the deleted array as fill values) is refused naming it; open_cube counts the cells pending."""
    import shutil

    from ordercube.pipeline.cube.owner import LostValuesWarning

    damaged = tmp_path / "cube.zarr"
    shutil.copytree(small_cube, damaged)
    shutil.rmtree(damaged / "lange_random")
    with pytest.raises(ordercube.InputError, match=r"^cube_or_scores: lange is divided by .*'lange_random'"):
        ordercube.select_k(xr.open_zarr(damaged))
    with pytest.warns(LostValuesWarning, match="lange_random"):
        chosen = ordercube.select_k(ordercube.open_cube(damaged))
    assert (chosen["lange"].values == -1).all()  # no value to choose from, said by the warning


@pytest.mark.timeout(120)
def test_select_k_of_xarrays_open_zarr_in_a_fresh_process(small_cube):
    """The opener of docs/explanation/cube.md in a process that has never opened the cube (its true_k is a Dask array there)."""
    script = ("import sys, xarray as xr, ordercube\n"
              "chosen = ordercube.select_k(xr.open_zarr(sys.argv[1]))\n"
              "print(chosen['lange'].values.ravel().tolist(), chosen['true_k'].values.tolist())\n")
    result = subprocess.run([sys.executable, "-c", script, str(small_cube)], capture_output=True, text=True, timeout=100,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    expected = reduce_select_k(criterion_scores(ordercube.open_cube(small_cube).load()))
    assert result.stdout.strip() == f"{expected['lange'].values.ravel().tolist()} [3, 3]"


# ---- in-memory datasets: config entries {"name", "data", "labels"} (ordercube.pipeline.config.study.parse_config)


def _blobs(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = np.array([(0.0, 0.0), (5.0, 0.0), (0.0, 5.0)])
    labels = np.repeat(np.arange(3), 70)
    return centres[labels] + rng.normal(0.0, 0.4, size=(labels.size, 2)), labels


def test_sweep_on_in_memory_arrays_and_dataframes(tmp_path, client):
    X, y = _blobs()
    frame = pd.DataFrame(X, columns=["a", "b"]).assign(species=np.array(["s", "v", "g"])[y])
    config = small_config(n=[40, 80], datasets=[{"name": "named", "n": [60]}])
    data = {"array": X, "pair": (X, y), "frame": (frame, {"column": "species"}), "named": (X, list(y))}
    cube = ordercube.sweep(config, data=data, client=client, out=tmp_path / "memory.zarr")
    assert list(cube["dataset"].values) == ["named", "array", "pair", "frame"]
    assert true_k(criterion_scores(cube)).values.tolist() == [3, -1, 3, 3]
    chosen = ordercube.select_k(cube)["lange"].sel(model="km")
    assert int(chosen.sel(dataset="pair", n=80)) == 3 and int(chosen.sel(dataset="named", n=60)) == 3

    # The same numbers from a CSV file give the same cells: in memory is only another way in.
    np.savetxt(tmp_path / "blobs.csv", X, delimiter=",", header="a,b", comments="")
    from_file = small_config(n=[40, 80], datasets=[{"name": "pair", "kind": "file", "path": str(tmp_path / "blobs.csv")}])
    ordercube.sweep(from_file, client=client, out=tmp_path / "file.zarr")
    ordercube.sweep(small_config(n=[40, 80], datasets=[]), data={"pair": X}, client=client, out=tmp_path / "array.zarr")
    assert_same_cells(tmp_path / "file.zarr", tmp_path / "array.zarr")


def test_the_readme_api_example_runs(tmp_path):
    """The notebook example of docs/guide/python-api.md, as a user pastes it (in-memory datasets too)."""
    section = (REPO / "docs" / "guide" / "python-api.md").read_text()
    example = next(block for block in section.split("```python")[1:] if "ordercube.sweep(config, data=" in block).split("```")[0]
    result = subprocess.run([sys.executable, "-c", example], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    assert status_counts(ordercube.open_cube(tmp_path / "results" / "iris.zarr"))["ok"] == 2 * 5 * 20
    assert (tmp_path / "results" / "iris-report" / "selection.csv").is_file()
