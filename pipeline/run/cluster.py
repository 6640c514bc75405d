"""Where a sweep runs: a Dask client on a running scheduler or on a LocalCluster, and a watch for workers.

Nothing here waits without a bound or without saying so: connecting has a timeout (a server that
accepts the connection but does not speak Dask's protocol included), a scheduler file is read and
checked by us (distributed's own reader waits for it forever), and a sweep with no worker to run on
prints that it waits, restarts the workers a LocalCluster lost, and gives up after a set time.
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import os
import signal
import socket
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from multiprocessing import resource_tracker
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ordercube.pipeline.errors import InputError
from ordercube.pipeline.config.plugins import load_plugins, preload
from ordercube.pipeline.run.nomain import records_from_main, workers_without_main
from ordercube.pipeline.system.shared_store import VARIABLE as SHARED_VARIABLE
from ordercube.pipeline.system.software import skew, software

if TYPE_CHECKING:  # distributed is imported where a cluster is used: a sweep in this process does without it
    from distributed import Client, LocalCluster
    from distributed.deploy.spec import SpecCluster

CONNECT_TIMEOUT = 10.0  # seconds: a scheduler on a busy machine answers in well under one
# A Slurm or Kubernetes worker usually joins within a few minutes of its scheduler; longer than that, the
# user is better told (exit 3 with the command that resumes) than left with a driver that waits all night.
WAIT_FOR_WORKERS = 300.0
#: The longest --connect-timeout / --wait-for-workers accepted (seconds): a week, beyond any batch queue's wait;
#: a larger number (1e308) would wait forever in effect, or overflow the clock arithmetic.
MAX_WAIT_SECONDS = 7 * 24 * 3600.0
SCHEDULER_FILE_EXPECTED = "the JSON file 'dask scheduler --scheduler-file FILE' writes"
TELL_EVERY = 15.0  # seconds between two "waiting for workers" lines
SCHEDULER_FILE_GRACE = 2.0  # a scheduler writes its file non-atomically: a half-written one gets this long
# Dask's usual dashboard port, on the loopback interface only: a dashboard shows the data's shape and the code's
# names, and nothing of a run is to be served to the network unless the user asks (--dashboard-address 0.0.0.0:P).
# This default, when taken (a second run at once), moves to a free port; an address the user gave must be free.
DEFAULT_DASHBOARD = "127.0.0.1:8787"
#: Messages, events and transitions a LocalCluster's scheduler and client keep for debugging (Dask's
#: ``distributed.admin.low-level-log-length``, 1000 by default): what bounds the driver's growth per task.
LOW_LEVEL_LOG_LENGTH = 50


class NoWorkers(Exception):
    """No Dask worker to run on for longer than the configured wait; what arrived is on disk."""


def stderr_line(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def scheduler_address(*, scheduler: str | None, scheduler_file: str | None, timeout: float) -> tuple[str, str]:
    """The option that named the scheduler (for messages) and its address, checked to be a Dask scheduler
    that answers within ``timeout`` (``InputError`` otherwise)."""
    if scheduler_file:
        option = f"--scheduler-file: {scheduler_file} names"
        address = read_scheduler_file(Path(scheduler_file), timeout=timeout)
    else:
        option, address = "--scheduler:", str(scheduler)
    check_is_scheduler(address, option, timeout=timeout)
    return option, address


def parse_dashboard_address(text: str, option: str = "--dashboard-address") -> str | None:
    """``HOST:PORT`` (or ``PORT``, on 127.0.0.1) checked and normalised; ``none`` gives None (no dashboard)."""
    if text.strip().lower() in ("none", "off", "false"):
        return None
    host, colon, port = text.strip().rpartition(":")
    if not colon:
        host = "127.0.0.1"
    fix = (f"give HOST:PORT, e.g. {option} 127.0.0.1:8788 (0 for any free port; 0.0.0.0:PORT to listen on "
           f"every interface), or {option} none for no dashboard")
    if not host:
        raise InputError(f"{option}: {text!r} has no host (Dask would listen on every interface); {fix}")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise InputError(f"{option}: expected a port number 0-65535 in {text!r}; {fix}")
    return f"{host}:{int(port)}"


def check_dashboard_free(address: str | None, option: str = "--dashboard-address", *, strict: bool = False) -> None:
    """``InputError`` if ``address`` cannot be listened on now (the default, which moves to a free port, only
    when ``strict``: the user gave it): checked before the cube changes, the cluster binds it a moment later."""
    if address is None or (address == DEFAULT_DASHBOARD and not strict):
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_server((host, int(port))):
            pass
    except OSError as error:
        why = ("the port is taken (another run's dashboard?)" if error.errno == errno.EADDRINUSE else
               f"{os.strerror(error.errno) if error.errno else error}: is {host} an address of this machine?")
        raise InputError(f"{option}: cannot listen on {address}: {why}; choose another port, "
                         f"{option} {host}:0 for any free one, or {option} none") from None


def dashboard_line(client: Client, wanted: str | None) -> str | None:
    """What to print about the dashboard: its real link (saying so when the default port was taken), or None
    when there is none (turned off, or a scheduler started without one)."""
    try:
        link = client.dashboard_link
    except (KeyError, TypeError):  # a scheduler without a dashboard has no such service
        link = None
    if not link or (client.cluster is not None and wanted is None):  # off: only the HTTP server's health page
        return None
    note = ""
    if client.cluster is not None and wanted == DEFAULT_DASHBOARD and not link.startswith(f"http://{wanted}/"):
        note = f" (port {wanted.rpartition(':')[2]} is taken, by another run?)"
    return f"dask dashboard: {link}{note}"


def _local_dashboard(cluster: LocalCluster, wanted: str) -> None:
    """``InputError`` if a given dashboard address (not the default) was taken between the check and the bind."""
    port = cluster.scheduler.http_server.port
    wanted_port = int(wanted.rpartition(":")[2])
    if wanted != DEFAULT_DASHBOARD and wanted_port and port != wanted_port:
        raise InputError(f"--dashboard-address: port {wanted_port} was taken as the cluster started (another run?); "
                         "choose another port, or --dashboard-address none")


@contextmanager
def connect(*, workers: int | None, scheduler: str | None, scheduler_file: str | None,
            connect_timeout: float = CONNECT_TIMEOUT, dashboard_address: str | None = DEFAULT_DASHBOARD,
            client: Client | None = None) -> Iterator[Client]:
    """A client on an existing scheduler, or on a LocalCluster started for this run (127.0.0.1 only).

    Only that LocalCluster gets a dashboard from us, at ``dashboard_address`` (None: none); a scheduler
    of the user's has its own, or not. A ``client`` given (the Python API's: dask-jobqueue, Kubernetes, a
    LocalCluster of the user's) is used as it is and left open, with its cluster: it belongs to the caller,
    as do its logging and its workers.
    """
    import dask
    from distributed import Client, LocalCluster

    if client is not None:
        check_software(client, option="client")
        yield client
        return
    if scheduler or scheduler_file:
        option, address = scheduler_address(scheduler=scheduler, scheduler_file=scheduler_file, timeout=connect_timeout)
        try:
            client = Client(address=address, timeout=f"{connect_timeout}s")
        except (OSError, TimeoutError, ValueError) as error:  # it stopped between the check and now
            raise InputError(f"{option} {address}: cannot connect to the Dask scheduler there ({error}); "
                             "start it again, or fix the address") from None
        _quiet_client_logs()
        with client:
            check_software(client)
            yield client
        return

    # Dask's nanny sets MALLOC_TRIM_THRESHOLD_, which turns off glibc's adaptive mmap threshold: every
    # temporary array of a kernel is then mapped and unmapped again, and k-means ran 2x slower here.
    settings: dict[str, object] = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
    # A LocalCluster gives a nanny 15 s (lost-worker-timeout) to bring a dead worker back, then closes the
    # nanny for good: on a loaded machine a cell that kills its worker then left the sweep with no worker.
    # The nanny restarts its own worker; give it the time it needs (a value the user set is kept).
    # The in-process scheduler's and nannies' log records (ERROR: "Task ... marked as failed because 2 workers
    # died", "Couldn't gather keys" when a worker dies) are silenced: what happens to a cell is in the cube.
    if dask.config.get("distributed.deploy.lost-worker-timeout") == "15s":
        settings["distributed.deploy.lost-worker-timeout"] = "1h"
    # Every batched stream (client to scheduler, scheduler to each worker and to the client) keeps its last
    # low-level-log-length batches of messages for debugging, each with the pickled task it carried: with
    # Dask's 1000, a LocalCluster's scheduler and client in the driver grew by ~36 KB per task over the first
    # thousand tasks or so (~30 MiB), and the scheduler's event and transition logs are as long. Kept shorter
    # (a value the user set is kept); the dashboard's task stream has its own length and is untouched.
    if dask.config.get("distributed.admin.low-level-log-length") == 1000:
        settings["distributed.admin.low-level-log-length"] = LOW_LEVEL_LOG_LENGTH
    if preload(load_plugins()):
        settings["distributed.worker.preload"] = preload(load_plugins())
    refuse_records_from_main()
    with ExitStack() as stack:
        # A folder the workers share what each would compute alike (Gap's reference sets), removed with the cluster.
        shared = stack.enter_context(tempfile.TemporaryDirectory(prefix="ordercube-shared-"))
        settings[f"distributed.nanny.pre-spawn-environ.{SHARED_VARIABLE}"] = shared
        stack.enter_context(dask.config.set(settings))
        stack.enter_context(workers_without_main())  # entered before the cluster, left after: every start and restart of a worker
        # The default port taken moves the dashboard to a free one (Dask warns in three lines; we print the link
        # we got). The scheduler binds it while LocalCluster() blocks this thread, so the filter is in force.
        with _interrupts_blocked_in_new_threads(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"Port \d+ is already in use", category=UserWarning)
            cluster = stack.enter_context(LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                # off: the scheduler's HTTP server (health, metrics) still listens, on a free port, without bokeh
                dashboard_address=dashboard_address or "127.0.0.1:0",
                scheduler_kwargs={"dashboard": dashboard_address is not None}, silence_logs=logging.CRITICAL))
            if dashboard_address is not None:
                _local_dashboard(cluster, dashboard_address)
            client = stack.enter_context(Client(cluster))
        yield client


def refuse_records_from_main() -> None:
    """``InputError`` when a record is registered by the main script or notebook itself: the LocalCluster's worker
    processes look records up by name and never import ``__main__``, so its cells would all fail there."""
    if found := records_from_main():
        raise InputError(f"{'; '.join(found)}: registered by the main script or notebook, whose code the worker "
                         "processes of the LocalCluster do not import; move it into a module and name that module in "
                         "ORDERCUBE_PLUGINS=module (or install it as a plug-in: see the plug-ins guide), or compute "
                         "in this process with workers=0 (--workers 0)")


@contextmanager
def _interrupts_blocked_in_new_threads() -> Iterator[None]:
    """Ctrl-C in a terminal sends SIGINT to the whole process group (``kill -TERM -PGID``, a batch system's
    stop, SIGTERM): to a LocalCluster's worker processes too, whose KeyboardInterrupt tracebacks (mid-import,
    mid-task) or sudden deaths (the scheduler's "Couldn't gather keys") would bury the driver's one line.

    The cluster's threads are started inside this block with SIGINT and SIGTERM blocked, and the worker
    processes they spawn (now, or when a nanny restarts one) inherit the mask: only the driver hears the
    signal, and it closes the cluster (a nanny stops its worker with a message, then SIGKILL). The main
    thread's block ends with this one: a signal meanwhile arrives then, once the cluster can be closed
    cleanly. multiprocessing's resource tracker unblocks the signals of the thread that starts it: it is
    started first, outside the block."""
    resource_tracker.ensure_running()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _quiet_client_logs() -> None:
    """Losing the scheduler is reported in one line by the CLI (exit 3); the client's own log records of
    the closing connection and its reconnection attempts (tracebacks at INFO and ERROR level, cancelled
    asyncio tasks) would bury it. What goes wrong in a cell is recorded in the cube, not in these logs.
    For the rest of the process (the client's loop thread logs its reconnection attempts late), and for
    every logger below these: Dask's logging config gives some of them (distributed.client) their own level."""
    for name in [*logging.root.manager.loggerDict, "distributed", "asyncio", "tornado"]:
        if name.split(".")[0] in ("distributed", "asyncio", "tornado"):
            logging.getLogger(name).setLevel(logging.CRITICAL)


def read_scheduler_file(path: Path, *, timeout: float) -> str:
    """The address in the file ``dask scheduler --scheduler-file`` writes.

    A file that does not exist yet is waited for up to ``timeout`` seconds (a scheduler started at the
    same moment as the driver writes it within a second or two); one that cannot be used is read again
    for a moment (it may be half-written), then refused with ``InputError``.
    """
    deadline = time.monotonic() + timeout
    bad_since: float | None = None
    while True:
        address, problem = _address_in(path)
        if address:
            return address
        now = time.monotonic()
        if not path.exists() and now >= deadline:
            raise InputError(f"--scheduler-file: {path} does not exist (waited {timeout:g} s for a scheduler to "
                             f"write it); start 'dask scheduler --scheduler-file {path}' first, or fix the path")
        if path.exists():
            bad_since = now if bad_since is None else bad_since
            if now - bad_since >= min(SCHEDULER_FILE_GRACE, timeout):
                raise InputError(f"--scheduler-file: {path} {problem}; expected the JSON file that 'dask scheduler "
                                 "--scheduler-file FILE' writes (with \"address\": \"tcp://HOST:PORT\"): point the "
                                 "option at that file, or give the address with --scheduler")
        time.sleep(0.1)


def _address_in(path: Path) -> tuple[str | None, str]:
    """(the address, '') or (None, what is wrong with the file). The file is read through
    :func:`ordercube.pipeline.files.inputfile.read_input`: a folder, a named pipe (which would wait for a writer) or a device
    (``/dev/zero`` reads forever) is refused at once with ``InputError``."""
    from ordercube.pipeline.files.inputfile import read_input

    if not path.exists():
        return None, "does not exist"
    if path.is_dir():
        return None, "is a directory"
    try:
        text = read_input(path, "--scheduler-file", expected=SCHEDULER_FILE_EXPECTED).data.decode("utf-8")
    except InputError:
        if not path.exists():  # removed between the two looks
            return None, "does not exist"
        raise
    except UnicodeDecodeError as error:
        return None, f"cannot be read ({error})"
    if not text.strip():
        return None, "is empty"
    try:
        content = json.loads(text)
    except ValueError as error:
        return None, f"is not JSON ({error})"
    if not isinstance(content, dict) or "address" not in content:
        return None, "has no \"address\""
    if not isinstance(content["address"], str) or "://" not in content["address"]:
        return None, f"has no scheduler address (its \"address\" is {content['address']!r})"
    return content["address"], ""


def check_is_scheduler(address: str, option: str, *, timeout: float) -> None:
    """``InputError`` unless a Dask scheduler answers at ``address`` within ``timeout`` seconds.

    distributed's own connect waits for the server's handshake without a time limit: a server that
    accepts the connection and says nothing (or an HTTP server) would keep ``Client()`` waiting forever.
    """
    fix = ("check the address ('dask scheduler' prints it: 'Scheduler at: tcp://HOST:PORT', port 8786 by default, "
           "not its dashboard's), start the scheduler, or allow more time with --connect-timeout SECONDS")
    try:
        identity = _run_coroutine(_identity(address, timeout))
    except TypeError as error:  # a tls:// address without the TLS settings of Dask's config
        raise InputError(f"{option} {address}: cannot connect ({error}); a tls:// scheduler needs Dask's TLS "
                         "settings (DASK_DISTRIBUTED__COMM__TLS__CA_FILE, ...__TLS__CLIENT__CERT, ...__TLS__CLIENT__KEY: "
                         "see docs/guide/cluster.md)") from None
    except TimeoutError:
        raise InputError(f"{option} {address}: no answer from a Dask scheduler there within {timeout:g} s "
                         f"(--connect-timeout); {fix}") from None
    except (OSError, ValueError) as error:
        raise InputError(f"{option} {address}: no Dask scheduler answered there ({error}); {fix}") from None
    kind = identity.get("type") if isinstance(identity, dict) else None
    if kind != "Scheduler":
        raise InputError(f"{option} {address}: the server there answered as a {kind or 'non-Dask server'}, "
                         f"not a Dask scheduler; {fix}")


T = TypeVar("T")


def _run_coroutine(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)``, in a thread of its own when this thread runs an event loop already
    (Jupyter's kernel does, and ``asyncio.run`` refuses to start a second one in it)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def _identity(address: str, timeout: float) -> object:
    """What the server at ``address`` says it is; every step bounded by ``timeout`` seconds."""
    from distributed.comm import connect as comm_connect
    from distributed.security import Security

    arguments = Security().get_connection_args("client")
    # connect retries a refused connection until its own timeout, then says why; ours is only a backstop
    # (with the same timeout the two race, and which message the user got was chance).
    comm = await asyncio.wait_for(comm_connect(address, timeout=timeout, **arguments), timeout + 2)
    try:
        await asyncio.wait_for(comm.write({"op": "identity", "reply": True}), timeout)
        return await asyncio.wait_for(comm.read(), timeout)
    finally:
        comm.abort()


def check_software(client: Client, *, option: str = "--scheduler") -> None:
    """``InputError`` if a worker computes with other ``tasks`` code or library versions than the driver."""
    problem = skew(software(), client.run(software))
    if problem:
        raise InputError(f"{option}: version skew: {problem}. Cells computed there would not match this "
                         "config's results elsewhere; install the same ordercube and libraries on the driver and "
                         "every worker (one image or environment for all: see docs/guide/cluster.md)")


class WorkerWatch:
    """Notices a sweep with no worker to run on: says so at most every ``TELL_EVERY`` seconds, restarts
    the workers that the LocalCluster started for this run lost (``owned``), and raises ``NoWorkers``
    after ``patience`` seconds without one. A cluster the caller brought is left to its owner: scaling a
    dask-jobqueue or Kubernetes cluster is a decision (and a cost) that is not ours to take."""

    def __init__(self, client: Client, *, patience: float = WAIT_FOR_WORKERS,
                 notify: Callable[[str], None] = stderr_line, owned: bool = True) -> None:
        self.client, self.patience, self.notify = client, patience, notify
        self.owned = owned and client.cluster is not None
        self._since: float | None = None  # when the workers were first found gone
        self._told = -float("inf")

    @property
    def _where(self) -> str:
        if self.owned:
            return "the local cluster"
        return f"the scheduler at {self.client.scheduler.address if self.client.scheduler else '?'}"

    def check(self) -> int:
        """How many worker threads there are now (when none: waits, tells, restarts workers or raises)."""
        threads = sum(self.client.nthreads().values())
        if threads:
            self.progress()
            return threads
        now = time.monotonic()
        self._since = now if self._since is None else self._since
        waited = now - self._since
        if self.owned:
            _restart_lost_workers(self.client.cluster)
        if waited >= self.patience:
            raise NoWorkers(f"no Dask worker on {self._where} for {waited:.0f} s (--wait-for-workers {self.patience:g})")
        if now - self._told >= TELL_EVERY:
            self._told = now
            doing = ("restarting the workers it lost (a cell may have killed them)" if self.owned
                     else "waiting for workers to join")
            self.notify(f"no Dask worker on {self._where}: {doing}; {waited:.0f} s so far, giving up after "
                        f"{self.patience:g} s (--wait-for-workers)")
        return 0

    def progress(self) -> None:
        """A result arrived, or workers are there: if they were gone, say that they are back."""
        if self._since is not None and (workers := len(self.client.nthreads())):  # a failure also arrives
            self.notify(f"{workers} worker(s) on {self._where} again: the sweep goes on")
            self._since = None

    def wait(self, poll: float = 1.0) -> int:
        """Block until at least one worker is there (see :meth:`check`); returns the worker threads."""
        while not (threads := self.check()):
            try:
                self.client.wait_for_workers(1, timeout=poll)
            except TimeoutError:
                pass
        return threads


def _restart_lost_workers(cluster: SpecCluster) -> None:
    """Start again the workers of a LocalCluster whose nannies were closed (the cluster's spec still lists
    them). Runs on the cluster's event loop, which owns ``cluster.workers``."""
    from distributed.core import Status

    def restart() -> None:
        for name, nanny in list(cluster.workers.items()):
            if nanny.status in (Status.closed, Status.failed):
                del cluster.workers[name]
        cluster.scale(len(cluster.worker_spec))

    if cluster.status == Status.running:
        cluster.loop.add_callback(restart)
