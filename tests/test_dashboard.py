"""The local cluster's Dask dashboard: a fixed default address on 127.0.0.1, the printed link fetched during a
real run, a free port when the default is taken (two runs at once), a given address that is taken refused."""

from __future__ import annotations

import errno
import os
import re
import signal
import socket
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import psutil
import pytest

from conftest import cli_in_process, small_config, write_config
from test_waits import PLUGINS, Run, _env, _one_error_line

LINK = r"^dask dashboard: (http://127\.0\.0\.1:(\d+)/status)"


@contextmanager
def port_taken(port: int) -> Iterator[None]:
    """``port`` on 127.0.0.1 held for the block (if something else holds it already, it is just as taken)."""
    try:
        server = socket.create_server(("127.0.0.1", port))
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        yield
        return
    with server:
        yield


def lasting_sweep(tmp_path):
    """40 cells of a method that sleeps 0.2 s per fit: about 16 s on one worker, longer than the checks take."""
    config = small_config(n=[40], k=[2, 3], resamples=20, execution={"trials_per_chunk": 2, "task_seconds": 0.01})
    config["datasets"] = [{"name": "gauss", "kind": "lange_gaussians3"}]
    config["methods"] = [{"name": "sleepy", "algorithm": "stub_sleepy", "predictor": "nearest_centroid",
                          "criteria": ["lange"]}]
    return write_config(tmp_path / "c.yaml", **config)


def listening_addresses(pid: int) -> set[str]:
    """The IP addresses the run's processes (driver, scheduler in it, workers) listen on."""
    processes = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    addresses = set()
    for process in processes:
        try:
            addresses |= {c.laddr.ip for c in process.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN}
        except psutil.NoSuchProcess:
            pass
    return addresses


def stop(run: Run) -> None:
    os.killpg(run.process.pid, signal.SIGINT)
    assert run.finish(timeout=90) == 130, (run.stdout, run.stderr)


def test_the_printed_link_serves_the_dask_dashboard_during_the_run_even_when_the_default_port_is_taken(tmp_path):
    """Port 8787 held by another program: the run says so, prints the port it got instead, and that page is
    Dask's dashboard, fetched while the sweep runs; nothing listens beyond 127.0.0.1; no Dask warning lines."""
    with port_taken(8787):
        run = Run(str(lasting_sweep(tmp_path)), "--out", str(tmp_path / "c.zarr"), "--workers", "1",
                  env=_env(**PLUGINS, ORDERCUBE_STUB_SLEEP="0.2"))
        line = run.wait_for_line(LINK, timeout=120)
        link, port = re.match(LINK, line).groups()
        assert int(port) != 8787 and line.endswith("(port 8787 is taken, by another run?)"), line
        with urllib.request.urlopen(link, timeout=20) as page:
            status, body = page.status, page.read().decode()
        assert run.process.poll() is None, "the run ended before its dashboard was fetched"
        addresses = listening_addresses(run.process.pid)
        stop(run)
    assert status == 200 and "<title>Dask Diagnostic UI</title>" in body and "bokeh.min.js" in body, body[:500]
    assert addresses == {"127.0.0.1"}, addresses
    assert not [text for text in run.stderr if "already in use" in text or "Hosting the HTTP" in text], run.stderr


def test_a_given_address_serves_there(tmp_path):
    """--dashboard-address HOST:PORT with a free port: the link is that port, and its page answers. The sweep
    is small enough to run in the driver, but a dashboard was asked for, so a LocalCluster serves one."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # free once the probe closes; the run binds it a moment later
    run = Run(str(lasting_sweep(tmp_path)), "--out", str(tmp_path / "c.zarr"),
              "--dashboard-address", f"127.0.0.1:{port}", env=_env(**PLUGINS, ORDERCUBE_STUB_SLEEP="0.2"))
    run.wait_for_line(r"^starting a local Dask cluster for the dashboard asked for \(--dashboard-address\)$",
                      timeout=120)
    line = run.wait_for_line(LINK, timeout=120)
    assert line == f"dask dashboard: http://127.0.0.1:{port}/status", line
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=20) as page:
        assert page.read() == b"ok"
    stop(run)


def test_no_dashboard_prints_no_link_and_the_run_completes(tmp_path):
    config = small_config(n=[40], k=[2, 3], resamples=2)
    run = Run(str(write_config(tmp_path / "c.yaml", **config)), "--out", str(tmp_path / "c.zarr"), "--workers", "1",
              "--no-dashboard", env=_env())
    assert run.finish(timeout=180) == 0, (run.stdout, run.stderr)
    assert not [line for line in run.stdout if line.startswith("dask dashboard")], run.stdout
    progress = [line for line in run.stdout if not line.startswith("data ")]  # one 'data NAME: ...' line per dataset
    assert progress[0].startswith("estimated ") and progress[1].startswith("computing ") \
        and progress[2].startswith("done: "), run.stdout
    assert run.stderr == [], run.stderr


def test_a_given_address_that_is_taken_exits_2_before_the_cube_exists(tmp_path):
    config = write_config(tmp_path / "c.yaml", **small_config())
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        result = cli_in_process("run", str(config), "--out", str(tmp_path / "c.zarr"),
                                "--dashboard-address", f"127.0.0.1:{port}")
    assert result.returncode == 2, result
    assert _one_error_line(result.stderr.splitlines()) == (
        f"error: --dashboard-address: cannot listen on 127.0.0.1:{port}: the port is taken (another run's dashboard?); "
        "choose another port, --dashboard-address 127.0.0.1:0 for any free one, or --dashboard-address none")
    assert not (tmp_path / "c.zarr").exists()


@pytest.mark.parametrize(("given", "problem"), [
    (":8787", "':8787' has no host (Dask would listen on every interface)"),
    ("127.0.0.1:http", "expected a port number 0-65535 in '127.0.0.1:http'"),
    ("70000", "expected a port number 0-65535 in '70000'"),
])
def test_a_malformed_address_exits_2_naming_it(tmp_path, given, problem):
    config = write_config(tmp_path / "c.yaml", **small_config())
    result = cli_in_process("run", str(config), "--out", str(tmp_path / "c.zarr"), "--dashboard-address", given)
    assert result.returncode == 2, result
    line = _one_error_line(result.stderr.splitlines())
    assert line.startswith(f"error: --dashboard-address: {problem}; give HOST:PORT"), line
    assert not (tmp_path / "c.zarr").exists()


def test_the_dashboard_of_a_running_scheduler_is_not_ours_to_set(tmp_path):
    config = write_config(tmp_path / "c.yaml", **small_config())
    result = cli_in_process("run", str(config), "--scheduler", "tcp://127.0.0.1:1", "--no-dashboard")
    assert result.returncode == 2, result
    assert _one_error_line(result.stderr.splitlines()).startswith(
        "error: --no-dashboard: only the local cluster's dashboard is set here, not a running scheduler's")
