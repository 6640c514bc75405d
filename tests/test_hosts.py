"""A sweep across hosts: the scheduler, two workers, the driver and an S3 server each on a host of its own (a network
namespace of this machine, joined to the others by a bridge: deploy/netns/hosts.sh), the cube on S3 the same bits as
a run in one process; and the scheduler killed mid-sweep: the driver says so and exits with the resume command, and
the resumed sweep, on a scheduler started again, gives the same cube.

Root only (namespaces): skipped, saying so, elsewhere. Every process is started with a timeout and stopped (with
the hosts) when the module ends."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import ORDERCUBE, REPO, cli_in_process, small_config, write_config
from linkproxy import LinkProxy
from test_engine import assert_same_cells

pytestmark = pytest.mark.slow

HOSTS_SH = REPO / "deploy" / "netns" / "hosts.sh"
NAMES = ("sched", "w1", "w2", "s3", "drv", "drv2")
BUCKET = "cubes"
SCHEDULER_PORT, S3_PORT, WORKER_PORT = 8786, 5000, 8790
# Each fault is tried this many times at random moments (the faults table's figures come from more: run with
# ORDERCUBE_FAULT_TRIALS=5); one by default, to keep the slow suite within its budget.
TRIALS = int(os.environ.get("ORDERCUBE_FAULT_TRIALS", "1"))


def _why_not() -> str | None:
    if sys.platform != "linux" or os.geteuid() != 0:
        return "network namespaces need root on Linux"
    if shutil.which("ip") is None:
        return "no 'ip' command (iproute2)"
    if shutil.which("moto_server", path=str(Path(sys.executable).parent)) is None:
        return "moto's server is not installed (pip install -e .[test])"
    return None


def _wait_for_port(address: str, port: int, what: str, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{what} exited with {process.returncode} before listening on {address}:{port}")
        try:
            with socket.create_connection((address, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"{what} did not listen on {address}:{port} within {timeout:.0f} s")


class Hosts:
    """The namespaces of one test module: ``address[name]``, ``start(name, command)`` runs a program on a host."""

    def __init__(self, prefix: str, subnet: str, folder: Path) -> None:
        self.prefix, self.folder = prefix, folder
        self.address = {name: f"{subnet}.{i}" for i, name in enumerate(NAMES, start=1)}
        self.bridge = f"{subnet}.254"  # this machine's own namespace, on the bridge every host reaches
        self.processes: list[subprocess.Popen] = []
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("ORDERCUBE_PLUGINS", None)
        self.env = env

    def start(self, host: str, command: list[str], log: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        with open(self.folder / log, "w") as out:  # a pipe nobody reads could fill and block the process
            process = subprocess.Popen(["ip", "netns", "exec", f"{self.prefix}-{host}", *command], env=env or self.env,
                                       cwd=self.folder, stdout=out, stderr=subprocess.STDOUT)
        self.processes.append(process)
        return process

    def scheduler(self) -> subprocess.Popen:
        process = self.start("sched", [sys.executable, "-m", "dask", "scheduler", "--host", self.address["sched"],
                                       "--port", str(SCHEDULER_PORT), "--no-dashboard"], "scheduler.log")
        _wait_for_port(self.address["sched"], SCHEDULER_PORT, "dask scheduler", process)
        return process

    def workers(self, scheduler: str | None = None, contact: dict[str, str] | None = None,
                env: dict[str, str] | None = None) -> list[subprocess.Popen]:
        """A worker on each of w1 and w2, of the scheduler at ``scheduler`` (HOST:PORT; the scheduler's host by
        default), listening on WORKER_PORT, reached at ``contact[host]`` (HOST:PORT) where given."""
        scheduler = scheduler or f"{self.address['sched']}:{SCHEDULER_PORT}"
        contact = contact or {}
        return [self.start(host, [sys.executable, "-m", "dask", "worker", f"tcp://{scheduler}",
                                  "--listen-address", f"tcp://{self.address[host]}:{WORKER_PORT}",
                                  *(["--contact-address", f"tcp://{contact[host]}"] if host in contact else []),
                                  "--nworkers", "1", "--nthreads", "1", "--no-dashboard", "--death-timeout", "60"],
                           f"{host}.log", env=env)
                for host in ("w1", "w2")]

    def stop(self, processes: list[subprocess.Popen], grace: float = 20) -> None:
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=20)


@contextmanager
def made_hosts(folder: Path) -> Iterator[Hosts]:
    prefix = f"oc{os.getpid() % 100_000}"
    subnet = f"10.{200 + os.getpid() % 50}.{os.getpid() // 50 % 250}"
    made = subprocess.run(["bash", str(HOSTS_SH), "start", prefix, subnet, *NAMES], capture_output=True, text=True,
                          timeout=60)
    if made.returncode != 0:
        pytest.skip(f"deploy/netns/hosts.sh could not make the hosts (exit {made.returncode}): {made.stderr.strip()}")
    hosts = Hosts(prefix, subnet, folder)
    assert made.stdout.split() == [part for name in NAMES for part in (f"{prefix}-{name}", hosts.address[name])]
    try:
        yield hosts
    finally:
        hosts.stop(hosts.processes)
        subprocess.run(["bash", str(HOSTS_SH), "stop", prefix], capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def hosts(tmp_path_factory) -> Iterator[Hosts]:
    why = _why_not()
    if why:
        pytest.skip(why)
    with made_hosts(tmp_path_factory.mktemp("hosts")) as made:
        server = made.start("s3", [str(Path(sys.executable).with_name("moto_server")), "-H", made.address["s3"], "-p",
                                   str(S3_PORT)], "s3.log")
        _wait_for_port(made.address["s3"], S3_PORT, "moto_server", server)
        home = made.folder / "aws"
        home.mkdir()
        made.env.update({"AWS_ENDPOINT_URL": f"http://{made.address['s3']}:{S3_PORT}", "AWS_ACCESS_KEY_ID": "testing",
                         "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                         "AWS_CONFIG_FILE": str(home / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(home / "none"),
                         "AWS_EC2_METADATA_DISABLED": "true"})
        import s3fs

        s3fs.S3FileSystem(endpoint_url=made.env["AWS_ENDPOINT_URL"], key="testing", secret="testing").mkdir(BUCKET)
        yield made


@pytest.fixture
def on_s3(hosts, monkeypatch):
    """This process reads the S3 server as the hosts do (for comparing cubes). fsspec keeps one S3 filesystem per
    set of arguments, whatever AWS_ENDPOINT_URL says: cleared before and after, so that neither this module nor
    the next reads another's endpoint (a gone server's: every object then looks absent)."""
    import s3fs

    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION",
                 "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_EC2_METADATA_DISABLED"):
        monkeypatch.setenv(name, hosts.env[name])
    s3fs.S3FileSystem.clear_instance_cache()
    yield hosts
    s3fs.S3FileSystem.clear_instance_cache()


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory) -> tuple[Path, Path]:
    """A sweep of some seconds on two workers (Gap: 20 reference fits per trial's own box) and its cube computed
    in this process, undisturbed: what every interrupted run must end equal to."""
    return _computed_here(tmp_path_factory.mktemp("undisturbed"), resamples=160)


def _computed_here(folder: Path, *, resamples: int) -> tuple[Path, Path]:
    """The Gap and Lange sweep of the fault tests with ``resamples`` trials: its config, and its cube computed in
    this process."""
    method = {"name": "km", "algorithm": "kmeans", "params": {"n_init": 3}, "predictor": "nearest_centroid",
              "criteria": ["lange", "gap"]}
    config = write_config(folder / "c.yaml", **small_config(resamples=resamples, methods=[method],
                                                            execution={"trials_per_chunk": 4, "task_seconds": 0.3}))
    here = cli_in_process("run", str(config), "--out", str(folder / "local.zarr"), "--no-progress", "--workers", "0")
    assert here.returncode == 0, here.stderr
    return config, folder / "local.zarr"


def _driver_command(hosts: Hosts, config: Path, url: str, host: str, extra: tuple[str, ...]) -> list[str]:
    """``ordercube run`` on the driver host ``host`` (under its own host name) against the scheduler's host (unless
    ``extra`` names another scheduler)."""
    scheduler = () if "--scheduler" in extra else ("--scheduler", f"tcp://{hosts.address['sched']}:{SCHEDULER_PORT}")
    return ["bash", str(HOSTS_SH), "run", hosts.prefix, host, ORDERCUBE, "run", str(config), "--out", url, *scheduler,
            "--no-progress", *extra]


def _driver_env(hosts: Hosts, host: str, **extra: str) -> dict[str, str]:
    """The environment of a driver on ``host``: a cache folder of its own (where a run keeps this machine's lock of
    an S3 cube), as on a machine of its own."""
    return {**hosts.env, "XDG_CACHE_HOME": str(hosts.folder / f"cache-{host}"), **extra}


def _fresh_fs(hosts: Hosts) -> Any:
    """The S3 server as this process reads it, listings and instances never cached (the runs write it meanwhile)."""
    import s3fs

    return s3fs.S3FileSystem(endpoint_url=hosts.env["AWS_ENDPOINT_URL"], key="testing", secret="testing",
                             skip_instance_cache=True, use_listings_cache=False)


def _assert_undisturbed(hosts: Hosts, local: Path, url: str) -> None:
    """The cube at ``url`` holds the cells of the undisturbed ``local`` one (every variable but ``seconds``, bit for
    bit), and ``status --verify`` reads every chunk back clean with no cell pending."""
    assert_same_cells(local, url)
    verify = cli_in_process("status", url, "--verify", "--json", env=hosts.env)
    assert verify.returncode == 0 and '"pending": 0' in verify.stdout, verify.stdout + verify.stderr


def _drive(hosts: Hosts, config: Path, url: str, *extra: str, host: str = "drv", timeout: float = 300,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``ordercube run`` on the driver's host against the scheduler's, the cube on the S3 host."""
    try:
        return subprocess.run(_driver_command(hosts, config, url, host, extra), capture_output=True, text=True,
                              env=env or _driver_env(hosts, host), cwd=hosts.folder, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"the driver did not finish within {timeout:.0f} s: {expired.stdout}{expired.stderr}")


def _under_way(hosts: Hosts, config: Path, url: str, delay: float, *, host: str = "drv",
               env: dict[str, str] | None = None, locked: bool = False) -> subprocess.Popen:
    """``ordercube run`` started on the driver's host, returned once its first values are on S3 (with ``locked``:
    once it holds the cube's lock object) and ``delay`` more seconds have passed (the moment a fault is injected),
    the run still going."""
    driver = subprocess.Popen(_driver_command(hosts, config, url, host, ()), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env or _driver_env(hosts, host), cwd=hosts.folder)
    fs = _fresh_fs(hosts)
    key = url.removeprefix("s3://")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and driver.poll() is None:
        if locked and fs.exists(f"{key}.lock"):
            break
        if not locked and fs.exists(f"{key}/zarr.json") and len(fs.find(f"{key}/status")) > 1:
            break
        time.sleep(0.2)
    time.sleep(delay)
    if driver.poll() is not None:
        pytest.fail(f"the sweep ended before the fault ({delay:.1f} s after its first values): make it longer")
    if not fs.exists(f"{key}.lock" if locked else f"{key}/zarr.json"):
        driver.kill()
        pytest.fail(f"no {'lock' if locked else 'values'} of {url} on S3 within 120 s of the driver's start")
    return driver


def test_a_sweep_across_five_hosts_gives_the_bits_of_one_process(on_s3, tmp_path):
    hosts = on_s3
    scheduler = hosts.scheduler()
    workers = hosts.workers()
    try:
        config = write_config(tmp_path / "c.yaml", **small_config())
        url = f"s3://{BUCKET}/across.zarr"
        remote = _drive(hosts, config, url)
        assert remote.returncode == 0, remote.stdout + remote.stderr
        assert f"-> {url}" in remote.stdout
        local = tmp_path / "local.zarr"
        here = cli_in_process("run", str(config), "--out", str(local), "--no-progress", "--workers", "0")
        assert here.returncode == 0, here.stderr
        assert_same_cells(local, url)  # every variable but the wall-clock seconds, bit for bit
        # the tasks really ran on both worker hosts: each worker's log names its own address
        for host in ("w1", "w2"):
            assert f"tcp://{hosts.address[host]}:" in (hosts.folder / f"{host}.log").read_text()
    finally:
        hosts.stop([*workers, scheduler])


@pytest.mark.parametrize("trial", range(TRIALS))
def test_the_scheduler_killed_mid_sweep_stops_the_driver_with_the_resume_command_and_loses_no_cell(on_s3, undisturbed,
                                                                                                  trial):
    """SIGKILL to the scheduler's host process at a random moment once the sweep is under way (its first values
    written, then 0-3 s): the driver exits 3 within 30 s with the command that resumes; on a scheduler started again
    at the same address, that command finishes the sweep and the cube equals an undisturbed run's (every variable
    but ``seconds``), ``status --verify`` clean."""
    import random

    hosts = on_s3
    delay = random.uniform(0.0, 3.0)  # not chosen: printed, so that a failure says when it struck
    config, local = undisturbed
    url = f"s3://{BUCKET}/killed{trial}.zarr"
    scheduler = hosts.scheduler()
    workers = hosts.workers()
    driver = _under_way(hosts, config, url, delay)
    try:
        scheduler.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        try:
            out, err = driver.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            driver.kill()
            pytest.fail("the driver did not stop within 180 s of the scheduler's death")
        detected = time.monotonic() - killed
        assert driver.returncode == 3, f"killed {delay:.1f} s after the first values: {out}{err}"
        assert detected < 30, f"the driver took {detected:.1f} s to stop"
        resume = re.search(r"ordercube run .*", err + out)
        assert resume and "--scheduler" in resume.group(0), err
        print(f"scheduler killed {delay:.1f} s after the first values; the driver stopped {detected:.1f} s later")
    finally:
        hosts.stop([*workers, scheduler], grace=3)  # workers of a dead scheduler: waiting for it, not for a stop
    scheduler = hosts.scheduler()  # the same address, as a cluster manager restarts it
    workers = hosts.workers()
    try:
        started = time.monotonic()
        again = _drive(hosts, config, url)
        print(f"resumed in {time.monotonic() - started:.1f} s: {again.stdout[-300:]}")
        assert again.returncode == 0, again.stdout + again.stderr
        assert "computing" in again.stdout
        _assert_undisturbed(hosts, local, url)
    finally:
        hosts.stop([*workers, scheduler])


@pytest.mark.parametrize("trial", range(TRIALS))
def test_a_worker_host_cut_off_for_30_s_returns_and_the_sweep_finishes_with_the_undisturbed_cube(on_s3, undisturbed,
                                                                                                 trial):
    """The link of worker host w1 taken down (its bridge port) at a random moment once the sweep is under way, up
    again 30 s later: nothing hangs, the tasks it held finish on its return (or elsewhere), the run ends 0 and the
    cube equals an undisturbed run's, ``status --verify`` clean."""
    import random

    hosts = on_s3
    config, local = undisturbed
    url = f"s3://{BUCKET}/cut{trial}.zarr"
    delay = random.uniform(0.0, 2.0)
    port = f"{hosts.prefix}b{NAMES.index('w1') + 1}"  # w1's end of its veth pair on the bridge
    scheduler = hosts.scheduler()
    workers = hosts.workers()
    driver = _under_way(hosts, config, url, delay)
    try:
        subprocess.run(["ip", "link", "set", port, "down"], check=True, timeout=30)
        cut = time.monotonic()
        try:
            time.sleep(30)
        finally:
            subprocess.run(["ip", "link", "set", port, "up"], check=True, timeout=30)
        try:
            out, err = driver.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            driver.kill()
            pytest.fail("the sweep did not finish within 300 s of w1's return")
        print(f"w1 cut off {delay:.1f} s after the first values for 30 s; the run ended {time.monotonic() - cut:.1f} s "
              f"after the cut with exit {driver.returncode}")
        assert driver.returncode == 0, out + err
        _assert_undisturbed(hosts, local, url)
    finally:
        subprocess.run(["ip", "link", "set", port, "up"], timeout=30)
        hosts.stop([*workers, scheduler], grace=5)


LEASE = 5  # seconds: the lease the killed driver states (ORDERCUBE_LOCK_LEASE_SECONDS), its heartbeat every 1.25 s


@pytest.fixture(scope="module")
def long_undisturbed(tmp_path_factory) -> tuple[Path, Path]:
    """:func:`undisturbed`'s sweep with 2.5 times the resamples: long enough across two workers (about 20 s) for a
    holder to be tried alive after its lease."""
    return _computed_here(tmp_path_factory.mktemp("long"), resamples=400)


@pytest.mark.parametrize("trial", range(TRIALS))
def test_the_driver_host_killed_the_sweep_is_taken_over_from_another_host_only_once_the_lease_has_run_out(
        on_s3, long_undisturbed, trial):
    """The driver on host drv (its own host name and cache folder), the cube's lock object on S3 naming it. While it
    lives, ``--break-lock`` naming it from host drv2 is refused after more than its lease (its heartbeat is fresh).
    Then every process of host drv is SIGKILLed at a random moment, and drv2 tries again and again: each refusal
    states a heartbeat younger than the lease drv stated, and the run that takes the lock over one older; it
    finishes the sweep, the cube equal to an undisturbed run's and ``status --verify`` clean."""
    import random

    hosts = on_s3
    config, local = long_undisturbed
    url = f"s3://{BUCKET}/taken-over{trial}.zarr"
    fs = _fresh_fs(hosts)
    scheduler = hosts.scheduler()
    workers = hosts.workers()
    driver = _under_way(hosts, config, url, 0.0, env=_driver_env(hosts, "drv", ORDERCUBE_LOCK_LEASE_SECONDS=str(LEASE)),
                        locked=True)
    try:
        holder = json.loads(fs.cat(f"{url.removeprefix('s3://')}.lock"))
        assert (holder["host"], holder["lease"]) == ("drv", LEASE), holder
        name = f"drv:{holder['pid']}"
        time.sleep(LEASE + 1)  # longer than the lease, the holder alive: its heartbeat keeps the lock its own
        alive = _drive(hosts, config, url, "--break-lock", name, host="drv2")
        assert driver.poll() is None, ("the sweep ended before its holder was tried alive: make it longer: "
                                       + driver.communicate()[0][-800:])
        assert alive.returncode == 2 and f"under the {LEASE} s lease it stated: it is running" in alive.stderr, \
            alive.stderr
        time.sleep(random.uniform(0.0, 2.0))  # not chosen: the kill's moment against the heartbeat's
        subprocess.run(["bash", "-c", f"ip netns pids {hosts.prefix}-drv | xargs -r kill -9"], check=True, timeout=30)
        killed = time.monotonic()
        driver.wait(timeout=30)
        plain = _drive(hosts, config, url, host="drv2")
        assert plain.returncode == 2 and f"run again with --break-lock {name}" in plain.stderr, plain.stderr
        refusals: list[float] = []
        while True:
            tried = _drive(hosts, config, url, "--break-lock", name, host="drv2")
            if tried.returncode == 0:
                break
            refused = re.search(r"wrote its heartbeat (\d+) s ago, under the (\d+) s lease it stated", tried.stderr)
            assert tried.returncode == 2 and refused, tried.stdout + tried.stderr
            refusals.append(float(refused.group(1)))
            assert refusals[-1] < LEASE and time.monotonic() - killed < 60, refusals
            time.sleep(1.0)
        taken = re.search(r"its last heartbeat (\d+) s old, its lease (\d+) s\) and is taken over", tried.stdout)
        print(f"drv killed; its lock refused {len(refusals)} times at heartbeat ages {refusals} s, taken over "
              f"{time.monotonic() - killed:.1f} s after the kill: {tried.stdout[-300:]}")
        assert taken and float(taken.group(1)) >= LEASE - 0.5 and int(taken.group(2)) == LEASE, tried.stdout
        assert f"(pid {holder['pid']} on host drv" in tried.stdout and "computing" in tried.stdout
        assert not fs.exists(f"{url.removeprefix('s3://')}.lock")  # released at the end
        _assert_undisturbed(hosts, local, url)
    finally:
        if driver.poll() is None:
            driver.kill()
        hosts.stop([*workers, scheduler], grace=5)


def test_a_sweep_over_slow_lossy_links_gives_the_bits_of_one_process(on_s3, tmp_path):
    """Every connection to the scheduler, to each worker and to the S3 server passes a link that delays each chunk
    50 ms each way and drops 5% of the connections made through it, and its first (five times the 1% asked, as a
    link carries few: a proxy on this machine's end of the bridge, as this kernel has no netem; the workers are
    reached at their proxies through ``--contact-address``). The sweep finishes (or, where distributed does not
    make a reset connection again, stops with exit 3 and the command that resumes, which finishes it), the cube is
    the bits of one process, ``status --verify`` clean; its wall time is printed."""
    hosts = on_s3
    config, local = write_config(tmp_path / "c.yaml", **small_config()), tmp_path / "local.zarr"
    here = cli_in_process("run", str(config), "--out", str(local), "--no-progress", "--workers", "0")
    assert here.returncode == 0, here.stderr
    url = f"s3://{BUCKET}/slow-links.zarr"
    scheduler = hosts.scheduler()
    with ExitStack() as stack:
        links = {name: stack.enter_context(LinkProxy(hosts.bridge, (hosts.address[name], port), delay=0.05, drop=0.05,
                                                     seed=i, drop_first=1))
                 for i, (name, port) in enumerate((("sched", SCHEDULER_PORT), ("w1", WORKER_PORT),
                                                   ("w2", WORKER_PORT), ("s3", S3_PORT)))}
        env = {**hosts.env, "AWS_ENDPOINT_URL": f"http://{links['s3'].address}"}
        workers = hosts.workers(scheduler=links["sched"].address,
                                contact={host: links[host].address for host in ("w1", "w2")}, env=env)
        stack.callback(hosts.stop, [*workers, scheduler], grace=5)  # before the links close (callbacks run last first)
        started = time.monotonic()
        driving = ("--scheduler", f"tcp://{links['sched'].address}")
        driver_env = _driver_env(hosts, "drv", AWS_ENDPOINT_URL=env["AWS_ENDPOINT_URL"])
        slow = _drive(hosts, config, url, *driving, env=driver_env)
        if slow.returncode == 3:  # a reset connection distributed does not make again (the scheduler sending the
            # data to a worker): said, resumed, finished
            print(f"the sweep stopped on a reset connection: {slow.stderr.strip()[-400:]}")
            assert "lost a connection to the Dask cluster" in slow.stderr and "resume with" in slow.stderr, slow.stderr
            slow = _drive(hosts, config, url, *driving, env=driver_env)
        slow_seconds = time.monotonic() - started
        counts = {name: dict(link.counts) for name, link in links.items()}
        print(f"slow, lossy links: {slow_seconds:.1f} s; connections "
              f"(made, dropped): " + ", ".join(f"{name} {c['connections']}, {c['dropped']}" for name, c in counts.items()))
        assert slow.returncode == 0, slow.stdout + slow.stderr
        # the scheduler's and the store's links each dropped connections that were made again; a worker's link
        # carries only what others open to it (a worker's own traffic goes out through the scheduler's link)
        assert all(counts[name]["connections"] > 1 and counts[name]["dropped"] > 0 for name in ("sched", "s3")), counts
        _assert_undisturbed(hosts, local, url)


def test_a_plugin_installed_on_the_worker_hosts_after_their_workers_started_runs_there(on_s3, tmp_path):
    """The workers of w1 and w2 start with an empty folder on their path (their environment before the plug-in is
    installed); the driver has the demo plug-in (tests/plugins/ordercube_demo). Its family's sweep fails on the
    workers, every cell recorded with a reason naming the plug-ins loaded and the fix. The plug-in is then
    installed in the workers' folder, without a restart: the same config, run again, finds it (each worker
    rescans the installed entry points on its next miss), every cell ok and the cube on S3 the bits of one
    process."""
    from test_plugins import _config, install_demo

    hosts = on_s3
    site, driver_site = tmp_path / "site", install_demo(tmp_path / "driver-site")
    site.mkdir()
    env = {**hosts.env, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    driver_env = {**_driver_env(hosts, "drv"), "PYTHONPATH": os.pathsep.join([str(driver_site), str(REPO)])}
    scheduler = hosts.scheduler()
    workers = hosts.workers(env=env)
    try:
        for host in ("w1", "w2"):  # both started and registered before the install
            _wait_for_log(hosts.folder / f"{host}.log", "Registered to", workers)
        config = _config(tmp_path)
        before = _drive(hosts, config, f"s3://{BUCKET}/before-plugin.zarr", "--wait-for-workers", "30", env=driver_env)
        assert before.returncode == 1 and "24 failed" in before.stdout, before.stdout + before.stderr
        from ordercube import open_cube

        reasons = {str(reason) for reason in open_cube(f"s3://{BUCKET}/before-plugin.zarr")["reason"].values.ravel()}
        assert len(reasons) == 1, reasons  # every cell: the worker's miss, naming what to do
        assert "unknown dataset 'piecewise_constant'" in str(reasons) or "unknown algorithm 'dp_segments'" in str(reasons)
        assert "restart the workers" in str(reasons) and "ORDERCUBE_PLUGINS" in str(reasons), reasons
        install_demo(site)
        url = f"s3://{BUCKET}/late-plugin.zarr"
        after = _drive(hosts, config, url, env=driver_env)
        assert after.returncode == 0 and "0 failed" in after.stdout, after.stdout + after.stderr
        local = tmp_path / "local.zarr"
        here = subprocess.run([ORDERCUBE, "run", str(config), "--out", str(local), "--no-progress", "--workers", "0"],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert here.returncode == 0, here.stderr
        assert_same_cells(local, url)
    finally:
        hosts.stop([*workers, scheduler])


def _wait_for_log(path: Path, text: str, processes: list[subprocess.Popen], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text():
            return
        if any(process.poll() is not None for process in processes):
            pytest.fail(f"a worker exited before '{text}' in {path.name}: {path.read_text()[-500:]}")
        time.sleep(0.2)
    pytest.fail(f"no '{text}' in {path.name} within {timeout:.0f} s")
