"""The Slurm recipe (deploy/slurm/) end to end on a real single-node Slurm cluster (deploy/slurm/single_node.sh).

Root only: the script installs slurm-wlm and munge when missing and runs munged, slurmctld and slurmd as root.
The workers are dask-jobqueue's SLURMCluster jobs, started by ``deploy/slurm/launch.py`` from the recipe's
``jobqueue.yaml`` (its EDIT lines filled in for this machine), and the sweep is ``ordercube run
--scheduler-file``, as deploy/README.md tells a user. Then a worker job is cancelled (``scancel``) mid-sweep.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from conftest import ORDERCUBE, REPO, STUBS, cli, cli_in_process, write_config
from test_engine import assert_same_cells

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SCRIPT = REPO / "deploy" / "slurm" / "single_node.sh"
JOBS = 2  # two single-process worker jobs: one is cancelled, the sweep finishes on the other
SLEEP = "0.015"  # seconds per fit of the sleepy method: the sweep lasts long enough to be cut (no CPU spent)


def free_port_pair() -> int:
    """A port p with p and p + 1 free on 127.0.0.1 (slurmctld's and slurmd's)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port >= 65534:
            continue
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", port))
                b.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    pytest.fail("no two consecutive free ports on 127.0.0.1")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A single-node Slurm cluster from deploy/slurm/single_node.sh; its daemons stopped and state removed after."""
    if os.geteuid() != 0:
        pytest.skip("a Slurm cluster needs root (munged, slurmctld and slurmd run as root): run the slow suite as root")
    if shutil.which("slurmctld") is None and shutil.which("apt-get") is None:
        pytest.skip("Slurm is not installed and there is no apt-get to install slurm-wlm and munge")
    folder = tmp_path_factory.mktemp("slurm") / "cluster"
    env = {**os.environ, "ORDERCUBE_SLURM_PORT": str(free_port_pair()), "ORDERCUBE_SLURM_TIMEOUT": "90"}
    try:
        started = subprocess.run(["bash", str(SCRIPT), "start", str(folder)], capture_output=True, text=True,
                                 env=env, timeout=600)
        if started.returncode == 3:
            pytest.skip(f"apt-get could not install slurm-wlm and munge: {started.stderr.strip()}")
        if started.returncode == 4:
            pytest.skip(f"the single-node Slurm cluster did not come up: {started.stderr.strip()}")
        assert started.returncode == 0, started.stderr
        assert "idle" in started.stdout, started.stdout
        yield {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}, folder
    finally:
        stopped = subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], capture_output=True, text=True,
                                 env=env, timeout=120)
        assert stopped.returncode == 0, stopped.stderr


def slurm_jobs(env: dict[str, str]) -> dict[str, str]:
    """Slurm's own view of the queue: job id -> state (R, PD, CG, ...)."""
    listed = subprocess.run(["squeue", "-h", "-o", "%A %t %j"], capture_output=True, text=True, env=env, timeout=30)
    assert listed.returncode == 0, listed.stderr
    return {line.split()[0]: line.split()[1] for line in listed.stdout.splitlines() if "ordercube-worker" in line}


def recipe_settings(tmp_path: Path) -> Path:
    """deploy/slurm/jobqueue.yaml with its EDIT lines filled in for this machine, as README tells a user."""
    settings = yaml.safe_load((REPO / "deploy" / "slurm" / "jobqueue.yaml").read_text())
    section = settings["jobqueue"]["ordercube"]
    pythonpath = os.pathsep.join([str(STUBS), str(REPO)])
    section.update({
        "cores": 1, "processes": 1, "memory": "1GiB", "walltime": "00:20:00", "queue": "debug",
        "local-directory": str(tmp_path / "workers"), "log-directory": str(tmp_path / "jobs"),
        # the environment the workers run in: this interpreter, this checkout (and the test's plug-in)
        "job-script-prologue": [f"export PYTHONPATH={pythonpath}", *section["job-script-prologue"][1:]],
        "job-extra-directives": [],  # not --exclusive: both jobs share the one node
        "worker-extra-args": [],     # no --lifetime: the walltime is far away
        "scheduler-options": {"dashboard_address": "127.0.0.1:0", "host": "127.0.0.1"},
    })
    return write_config(tmp_path / "jobqueue.yaml", **settings)


class Launcher:
    """``python deploy/slurm/launch.py --jobs 2``: the recipe's scheduler, its two Slurm jobs' workers joined."""

    def __init__(self, tmp_path: Path, env: dict[str, str], log: str = "launch.log"):
        self.scheduler_file = tmp_path / "scheduler.json"
        self.scheduler_file.unlink(missing_ok=True)
        self.env = {**env, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)]),
                    "ORDERCUBE_PLUGINS": "ordercube_test_stubs", "ORDERCUBE_STUB_SLEEP": SLEEP}
        self.log = (tmp_path / log).open("w")
        self.process = subprocess.Popen(
            [sys.executable, str(REPO / "deploy" / "slurm" / "launch.py"), "--config", str(recipe_settings(tmp_path)),
             "--jobs", str(JOBS), "--scheduler-file", str(self.scheduler_file)],
            env=self.env, cwd=tmp_path, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def workers(self, timeout: float = 180) -> dict[str, str]:
        """Each worker's Slurm job id (its SLURM_JOB_ID), once all JOBS workers have joined the scheduler."""
        from distributed import Client

        deadline = time.monotonic() + timeout
        while not self.scheduler_file.exists():
            assert self.process.poll() is None, Path(self.log.name).read_text()
            assert time.monotonic() < deadline, "launch.py wrote no scheduler file"
            time.sleep(0.2)
        with Client(scheduler_file=str(self.scheduler_file), timeout="30s") as client:
            client.wait_for_workers(JOBS, timeout=max(1.0, deadline - time.monotonic()))
            return client.run(lambda: os.environ.get("SLURM_JOB_ID", "not in a Slurm job"))

    def stop(self, how: signal.Signals = signal.SIGINT) -> None:
        """Ctrl-C (or ``how``): launch.py cancels its jobs and exits."""
        if self.process.poll() is None:
            self.process.send_signal(how)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        self.log.close()


@pytest.fixture
def launcher(slurm, tmp_path):
    env, _ = slurm
    started = [Launcher(tmp_path, env)]  # a test may start another (append it)
    try:
        yield started
    finally:
        for each in started:
            each.stop()
        leftover = slurm_jobs(env)
        if leftover:  # cancel them anyway, then say so
            subprocess.run(["scancel", *leftover], env=env, timeout=30)
        assert not leftover or all(state == "CG" for state in leftover.values()), \
            f"launch.py left Slurm jobs behind: {leftover}"


def sweep_config(tmp_path: Path) -> Path:
    """configs/quickstart.yaml shrunk to 480 cells (3 datasets x n 100, 300 x k 2..5 x 10 trials x 2 methods),
    plus a method whose fits sleep (tests/stubs): the sweep lasts long enough to cancel a job in it."""
    config = yaml.safe_load((REPO / "configs" / "quickstart.yaml").read_text())
    config.update(n=[100, 300], k={"from": 2, "to": 5}, resamples=10, execution={"task_seconds": 0.2})
    config["methods"].append({"name": "sleepy", "algorithm": "stub_sleepy", "predictor": "nearest_centroid",
                              "criteria": ["lange"]})
    return write_config(tmp_path / "sweep.yaml", **config)


@pytest.fixture(scope="module")
def local_reference(tmp_path_factory) -> Path:
    """The same sweep in this process, no cluster, no sleep: the cube every Slurm run must equal."""
    folder = tmp_path_factory.mktemp("local")
    out = folder / "local.zarr"
    done = cli_in_process("run", str(sweep_config(folder)), "--out", str(out), "--no-progress", "--workers", "0",
                          env={"ORDERCUBE_PLUGINS": "ordercube_test_stubs", "ORDERCUBE_STUB_SLEEP": "0"})
    assert done.returncode == 0, done.stderr
    return out


def verify_clean(cube: Path) -> None:
    verified = cli("status", str(cube), "--verify", "--json", env={"ORDERCUBE_PLUGINS": "ordercube_test_stubs"})
    assert verified.returncode == 0, verified.stderr
    counts = json.loads(verified.stdout)
    assert counts["pending"] == 0 and counts["ok"] == 480, counts


def test_a_sweep_through_slurm_jobs_equals_a_local_run(slurm, launcher, local_reference, tmp_path):
    env, folder = slurm
    launcher = launcher[0]
    workers = launcher.workers()
    job_ids = set(workers.values())
    assert len(job_ids) == JOBS and all(job.isdigit() for job in job_ids), workers
    assert {slurm_jobs(env)[job] for job in job_ids} == {"R"}, "the workers' jobs are not running in Slurm's queue"
    config = sweep_config(tmp_path)
    run = cli("run", str(config), "--scheduler-file", str(launcher.scheduler_file), "--out", str(tmp_path / "s.zarr"),
              "--wait-for-workers", "120", "--no-progress", env={**launcher.env, "ORDERCUBE_STUB_SLEEP": "0"})
    assert run.returncode == 0, run.stderr
    assert "computing 480 of 480 planned cells" in run.stdout and "(0 failed, 0 crashed" in run.stdout, run.stdout
    assert_same_cells(tmp_path / "s.zarr", local_reference)
    verify_clean(tmp_path / "s.zarr")
    launcher.stop(signal.SIGTERM)  # as `kill` does: launch.py cancels both jobs, and Slurm records it
    assert launcher.process.returncode == 0, Path(launcher.log.name).read_text()
    deadline = time.monotonic() + 60
    while set(slurm_jobs(env)) & job_ids and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not set(slurm_jobs(env)) & job_ids, "the launcher's jobs outlived it"
    ended = {line.split()[0]: line for line in (folder / "log" / "jobs.txt").read_text().splitlines()}
    for job in job_ids:
        assert "Name=ordercube-worker" in ended[f"JobId={job}"] and "JobState=CANCELLED" in ended[f"JobId={job}"]


class Driver:
    """``ordercube run`` in a subprocess, its output read as it comes: ``computing`` is set once the sweep's
    tasks (after the pilot) are going out."""

    def __init__(self, args: list[str], env: dict[str, str]):
        self.lines: list[str] = []
        self.computing = threading.Event()
        self.process = subprocess.Popen([ORDERCUBE, *args], env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("computing "):
                self.computing.set()

    def wait(self, timeout: float) -> int:
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
            pytest.fail(f"the driver did not finish in {timeout} s after a job was cancelled:\n{self.output}")
        self.reader.join(timeout=30)
        return code

    @property
    def output(self) -> str:
        return "".join(self.lines)


def gone_after(scheduler_file: Path, address: str, timeout: float = 60) -> float:
    """Seconds until the scheduler no longer lists the worker at ``address`` (polled every 0.1 s)."""
    from distributed import Client

    start = time.monotonic()
    with Client(scheduler_file=str(scheduler_file), timeout="30s") as client:
        while time.monotonic() - start < timeout:
            if address not in client.scheduler_info(n_workers=-1)["workers"]:
                return time.monotonic() - start
            time.sleep(0.1)
    pytest.fail(f"the worker at {address} was still on the scheduler {timeout} s after its job was cancelled")


@pytest.mark.parametrize("trial", [1, 2])
def test_a_worker_job_cancelled_mid_sweep_loses_no_cell(slurm, launcher, local_reference, tmp_path, trial):
    env, folder = slurm
    launcher = launcher[0]
    workers = launcher.workers()
    config = sweep_config(tmp_path)
    cube = tmp_path / "cut.zarr"
    args = ["run", str(config), "--scheduler-file", str(launcher.scheduler_file), "--out", str(cube),
            "--wait-for-workers", "120", "--no-progress"]
    driver = Driver(args, launcher.env)
    assert driver.computing.wait(timeout=180), driver.output
    moment = random.uniform(0.3, 3.0)  # a moment the test does not choose, inside the sweep
    time.sleep(moment)
    address, victim = random.choice(sorted(workers.items()))
    assert driver.process.poll() is None, f"the sweep ended before {moment:.2f} s: nothing was cut\n{driver.output}"
    cancelled = subprocess.run(["scancel", victim], capture_output=True, text=True, env=env, timeout=30)
    assert cancelled.returncode == 0, cancelled.stderr
    detected = gone_after(launcher.scheduler_file, address)
    assert driver.process.poll() is None, "the sweep ended before the cancelled worker left: nothing was cut"
    code = driver.wait(timeout=300)
    print(f"trial {trial}: job {victim} cancelled {moment:.2f} s into the sweep; its worker off the scheduler "
          f"{detected:.2f} s after scancel; driver exit {code}\n{driver.output}")
    # The sweep finishes on the other job: Dask reruns the cancelled worker's tasks there; nothing failed.
    assert code == 0, driver.output
    assert "(0 failed, 0 crashed" in driver.output, driver.output
    ended = {line.split()[0]: line for line in (folder / "log" / "jobs.txt").read_text().splitlines()}
    assert "JobState=CANCELLED" in ended[f"JobId={victim}"], "Slurm did not record the cancel"
    survivor = (set(workers.values()) - {victim}).pop()
    assert slurm_jobs(env).get(survivor) == "R", "the other job should still be running"
    verify_clean(cube)  # every cell there: the same command again would compute nothing
    assert_same_cells(cube, local_reference)


def test_every_worker_job_cancelled_mid_sweep_stops_with_the_command_that_resumes(slurm, launcher, local_reference,
                                                                                 tmp_path):
    env, folder = slurm
    workers = launcher[0].workers()
    config = sweep_config(tmp_path)
    cube = tmp_path / "cut.zarr"
    args = ["run", str(config), "--scheduler-file", str(launcher[0].scheduler_file), "--out", str(cube),
            "--wait-for-workers", "5", "--no-progress"]
    driver = Driver(args, launcher[0].env)
    assert driver.computing.wait(timeout=180), driver.output
    moment = random.uniform(0.3, 3.0)
    time.sleep(moment)
    assert driver.process.poll() is None, f"the sweep ended before {moment:.2f} s: nothing was cut\n{driver.output}"
    cancelled = subprocess.run(["scancel", *sorted(set(workers.values()))], capture_output=True, text=True, env=env,
                               timeout=30)
    assert cancelled.returncode == 0, cancelled.stderr
    start = time.monotonic()
    code = driver.wait(timeout=120)
    stopped = time.monotonic() - start
    print(f"both jobs cancelled {moment:.2f} s into the sweep; the driver exit {code} {stopped:.1f} s after scancel\n"
          f"{driver.output}")
    # No worker for --wait-for-workers seconds: exit 3, what is kept, and the command that resumes.
    assert code == 3, driver.output
    assert "no Dask worker on the scheduler" in driver.output and "Traceback" not in driver.output, driver.output
    resume = driver.output.split("then resume with:\n", 1)[1].strip()
    assert resume.startswith("ordercube run ") and str(cube) in resume, driver.output
    assert 5 <= stopped < 60, f"stopped {stopped:.1f} s after the cancel, with --wait-for-workers 5"
    partial = json.loads(cli("status", str(cube), "--verify", "--json").stdout)
    assert partial["pending"] > 0 and partial["ok"] + partial["pending"] == 480, partial  # nothing failed
    launcher[0].stop()
    launcher.append(Launcher(tmp_path, env, log="launch-again.log"))  # new jobs, the same scheduler file
    launcher[1].workers()
    resumed = cli(*args, env=launcher[1].env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"computing {partial['pending']} of 480 planned cells" in resumed.stdout, resumed.stdout
    verify_clean(cube)
    assert_same_cells(cube, local_reference)
