"""The object store failing some of its requests, through a fault-injecting proxy in front of a real local S3 server
(moto): answered 503 SlowDown or 500 InternalError at random, the run's writes are retried and the cube is the
undisturbed one; failing every write from a random moment on, the run stops with the command that resumes, no cell
is marked done without its values, and the resumed run (the store healed) gives the undisturbed cube."""

from __future__ import annotations

import logging
import random
import re
import subprocess
import threading
import time

import pytest

from conftest import ORDERCUBE, cli_in_process, small_config, write_config
from faultproxy import FaultProxy
from test_engine import assert_same_cells

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

pytestmark = pytest.mark.slow
# Every moto server of one process shares one backend: a bucket of another test module's is there too.
BUCKET = "store-faults"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A moto S3 server on 127.0.0.1 with the bucket ``cubes``, a proxy in front of it, and the environment a user
    would set for the proxy's address."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    home = tmp_path_factory.mktemp("home")
    with FaultProxy("127.0.0.1", port) as proxy:
        env = {"AWS_ENDPOINT_URL": proxy.url, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": str(home / "none"),
               "AWS_SHARED_CREDENTIALS_FILE": str(home / "none"), "AWS_EC2_METADATA_DISABLED": "true",
               "NO_PROXY": "127.0.0.1,localhost", "XDG_CACHE_HOME": str(home / "cache")}
        import s3fs

        fs = s3fs.S3FileSystem(endpoint_url=f"http://{host}:{port}", key="testing", secret="testing")
        if not fs.exists(BUCKET):
            fs.mkdir(BUCKET)
        yield proxy, env
    server.stop()


@pytest.fixture
def reader(store, monkeypatch):
    """This process reads the store as the runs do (for comparing cubes)."""
    import s3fs

    proxy, env = store
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    s3fs.S3FileSystem.clear_instance_cache()  # fsspec keeps one per arguments: another module's, at its endpoint
    proxy.heal()
    yield proxy, env
    s3fs.S3FileSystem.clear_instance_cache()  # and the next module must not read this one's


@pytest.fixture(scope="module")
def undisturbed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("undisturbed")
    config = write_config(folder / "c.yaml", **small_config(resamples=12))
    here = cli_in_process("run", str(config), "--out", str(folder / "local.zarr"), "--no-progress", "--workers", "0")
    assert here.returncode == 0, here.stderr
    return config, folder / "local.zarr"


def _run(config, url, env, timeout=300) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([ORDERCUBE, "run", str(config), "--out", url, "--no-progress", "--workers", "0"],
                              capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        pytest.fail(f"the run did not finish within {timeout} s: {expired.stdout}{expired.stderr}")


def test_a_share_of_requests_failing_is_retried_and_the_cube_is_the_undisturbed_one(reader, undisturbed):
    """One request in ten answered 503 SlowDown or 500 InternalError (drawn at random each time)."""
    proxy, env = reader
    config, local = undisturbed
    seed = random.randrange(10**6)  # printed: a failure names the draws that made it
    url = f"s3://{BUCKET}/flaky.zarr"
    before = dict(proxy.counts)
    proxy.fail(share=0.1, status=(503, 500), seed=seed)
    try:
        done = _run(config, url, env)
    finally:
        proxy.heal()
    failed = proxy.counts["failed"] - before["failed"]
    print(f"503 or 500: {failed} of {failed + proxy.counts['forwarded'] - before['forwarded']} requests failed "
          f"(seed {seed})")
    assert done.returncode == 0, f"seed {seed}: {done.stdout}{done.stderr}"
    assert failed > 0
    assert_same_cells(local, url)
    verify = cli_in_process("status", url, "--verify", "--json", env=env)
    assert verify.returncode == 0 and '"pending": 0' in verify.stdout, verify.stdout + verify.stderr


def test_requests_stalled_past_the_timeout_are_given_up_and_retried_and_the_cube_is_the_undisturbed_one(reader,
                                                                                                      undisturbed):
    """One request in fifty held 60 s and closed unanswered (never reaching the server), the client's timeout set to
    1 s (``ORDERCUBE_STORE_TIMEOUT_SECONDS``): each is given up after the timeout, not the stall, and retried; the run
    ends 0, the cube is the undisturbed one and ``status --verify`` clean."""
    proxy, env = reader
    config, local = undisturbed
    seed = random.randrange(10**6)
    url = f"s3://{BUCKET}/stalled.zarr"
    before = dict(proxy.counts)
    proxy.fail(share=0.02, stall=60.0, seed=seed)
    started = time.monotonic()
    try:
        done = _run(config, url, {**env, "ORDERCUBE_STORE_TIMEOUT_SECONDS": "1"})
    finally:
        proxy.heal()
    stalled = proxy.counts["stalled"] - before["stalled"]
    took = time.monotonic() - started
    print(f"stalled past the 1 s timeout: {stalled} of {stalled + proxy.counts['forwarded'] - before['forwarded']} "
          f"requests (seed {seed}); the run took {took:.1f} s")
    assert done.returncode == 0, f"seed {seed}: {done.stdout}{done.stderr}"
    assert stalled > 0 and took < 60, took  # no stall was waited out
    assert_same_cells(local, url)
    verify = cli_in_process("status", url, "--verify", "--json", env=env)
    assert verify.returncode == 0 and '"pending": 0' in verify.stdout, verify.stdout + verify.stderr


def test_every_write_failing_from_a_random_moment_stops_the_run_with_the_resume_command(reader, undisturbed):
    """From a random moment after the cube exists, every PUT is answered 500: the run stops (exit != 0) naming the
    store and the command that resumes, never a traceback; ``status --verify`` then finds no done cell without its
    values; the store healed, the resume command finishes and the cube is the undisturbed one."""
    proxy, env = reader
    config, local = undisturbed
    url = f"s3://{BUCKET}/down.zarr"
    delay = random.uniform(0.0, 1.5)
    process = subprocess.Popen([ORDERCUBE, "run", str(config), "--out", url, "--no-progress", "--workers", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    import s3fs

    fs = s3fs.S3FileSystem(endpoint_url=env["AWS_ENDPOINT_URL"], key="testing", secret="testing",
                           skip_instance_cache=True, use_listings_cache=False)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None and not fs.exists(f"{BUCKET}/down.zarr/zarr.json"):
        time.sleep(0.05)
    time.sleep(delay)
    proxy.fail(share=1.0, status=500, methods=("PUT", "POST", "DELETE"))
    try:
        out, err = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("the run did not stop within 300 s of its store failing every write")
    finally:
        proxy.heal()
    print(f"writes failing from {delay:.2f} s after the cube existed: exit {process.returncode}; {err.strip()[-400:]}")
    if process.returncode == 0:
        pytest.skip(f"the run finished before its writes failed ({delay:.2f} s): nothing to check this time")
    assert "Traceback" not in err, err
    assert process.returncode == 4 and "cannot write the cube" in err and "ordercube run" in err, err  # resume with
    verify = cli_in_process("status", url, "--verify", "--json", env=env)
    assert verify.returncode == 0, verify.stdout + verify.stderr  # every cell marked done has its values
    resumed = _run(config, url, env)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert_same_cells(local, url)
