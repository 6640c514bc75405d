"""Cubes on object storage: a real S3-compatible HTTP server (moto's server mode) on 127.0.0.1, reached the way
a user reaches S3 (the standard AWS_* environment variables, read by botocore), and memory:// in process.

Nothing here reaches the internet: the endpoint is the local server, AWS config files are pointed at nothing.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, STUBS, cli, cli_in_process, small_config, write_config
from test_engine import assert_same_cells, run_here

pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

BUCKET = "cubes"


@pytest.fixture(scope="module")
def s3_env(tmp_path_factory) -> dict[str, str]:
    """A moto S3 server on 127.0.0.1 with the bucket ``cubes``; the environment a user would set for it."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    home = tmp_path_factory.mktemp("home")
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": str(home / "none"),
           "AWS_SHARED_CREDENTIALS_FILE": str(home / "none"), "AWS_EC2_METADATA_DISABLED": "true",
           "NO_PROXY": "127.0.0.1,localhost", "XDG_CACHE_HOME": str(home / "cache")}
    import s3fs

    s3fs.S3FileSystem(endpoint_url=env["AWS_ENDPOINT_URL"], key="testing", secret="testing").mkdir(BUCKET)
    yield env
    server.stop()


@pytest.fixture
def s3(s3_env, monkeypatch, tmp_path):
    """This process configured like the CLI's (for reading cubes in process), working in ``tmp_path``."""
    for name, value in s3_env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    return s3_env


def _s3fs():
    import s3fs

    return s3fs.S3FileSystem(skip_instance_cache=True, use_listings_cache=False)


def _no_url_folders(folder: Path) -> None:
    odd = [p.name for p in folder.iterdir() if ":" in p.name]
    assert not odd, f"local entries named after a URL in {folder}: {odd}"


def test_a_run_on_s3_gives_the_cells_of_a_local_run_extends_and_reports(s3, tmp_path):
    url = f"s3://{BUCKET}/runs/cube.zarr"
    config = write_config(tmp_path / "c.yaml", **small_config(resamples=3))
    # In this process's place (--workers 0): a run on S3 with a LocalCluster is
    # test_a_killed_creation_is_cleaned_up_and_foreign_data_is_never_touched's.
    first = cli("run", str(config), "--out", url, "--no-progress", "--workers", "0", env=s3, timeout=300)
    assert first.returncode == 0, first.stderr
    assert f"-> {url}" in first.stdout
    keys = _s3fs().find(f"{BUCKET}/runs")
    assert f"{BUCKET}/runs/cube.zarr/zarr.json" in keys and f"{BUCKET}/runs/cube.zarr/status/c/0/0/0/0/0" in keys
    assert not any(".ordercube-creating" in key for key in keys)  # the creation marker is gone once the cube is whole

    # Extending the grid (more resamples) resumes on the URL: only the new trials are computed (in this process:
    # where the cells are computed never changes them, and the driver writes the cube either way).
    write_config(config, **small_config(resamples=6))
    second = cli("run", str(config), "--out", url, "--no-progress", "--workers", "0", env=s3, timeout=300)
    assert second.returncode == 0, second.stderr
    assert "extended trial by [3, 4, 5]" in second.stdout
    assert "computing 36 of 72 planned cells" in second.stdout
    again = cli_in_process("run", str(config), "--out", url, "--no-progress", "--workers", "0", env=s3)
    assert "nothing to compute: all 72 planned cells of " + url in again.stdout

    local = tmp_path / "local.zarr"
    run_here(config, local)
    assert_same_cells(local, url)  # every variable but the wall-clock seconds, bit for bit

    status = cli_in_process("status", url, "--json", "--verify", env=s3)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout) == {"total": 72, "ok": 72, "failed": 0, "infeasible": 0, "crashed": 0, "pending": 0,
                                         "skipped": 0}
    assert "verified:" in status.stderr and "match their checksums" in status.stderr
    validate = cli_in_process("validate", str(config), "--out", url, env=s3)
    assert validate.returncode == 0, validate.stderr
    assert "72 planned, 0 to compute" in validate.stdout
    report = cli("report", url, env=s3, timeout=300)  # default folder: <cube stem>-report in the working folder
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "cube-report" / "selection.csv").is_file()
    assert f"report written to {tmp_path / 'cube-report'}" in report.stdout
    local_report = cli_in_process("report", str(local), "--out", str(tmp_path / "local-report"))
    assert local_report.returncode == 0
    # The same rows; their order follows the store's listing of variables (sorted on S3, not on a local disk).
    assert sorted((tmp_path / "cube-report" / "selection.csv").read_text().splitlines()) == \
        sorted((tmp_path / "local-report" / "selection.csv").read_text().splitlines())
    _no_url_folders(tmp_path)


def test_a_killed_creation_is_cleaned_up_and_foreign_data_is_never_touched(s3, tmp_path):
    fs = _s3fs()
    # What a creation killed mid-upload leaves: the marker and some of the cube's objects, no root zarr.json.
    fs.pipe(f"{BUCKET}/killed.zarr/.ordercube-creating", b'{"host": "elsewhere", "pid": 1}')
    fs.pipe(f"{BUCKET}/killed.zarr/status/zarr.json", b"{}")
    config = write_config(tmp_path / "c.yaml", **small_config(n=[40], resamples=2))
    run = cli("run", str(config), "--out", f"s3://{BUCKET}/killed.zarr", "--no-progress", "--workers", "1", env=s3,
              timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads(fs.cat(f"{BUCKET}/killed.zarr/status/zarr.json"))["node_type"] == "array"
    assert not fs.exists(f"{BUCKET}/killed.zarr/.ordercube-creating")

    fs.pipe(f"{BUCKET}/theirs.zarr/notes.txt", b"not a cube")
    refused = cli_in_process("run", str(config), "--out", f"s3://{BUCKET}/theirs.zarr", env=s3)
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"error: --out: s3://{BUCKET}/theirs.zarr exists and is not an ordercube cube")
    assert fs.find(f"{BUCKET}/theirs.zarr") == [f"{BUCKET}/theirs.zarr/notes.txt"]

    missing = cli_in_process("run", str(config), "--out", "s3://no-such-bucket/x.zarr", env=s3)
    assert missing.returncode == 2
    assert "the bucket 'no-such-bucket' of s3://no-such-bucket/x.zarr does not exist" in missing.stderr
    not_a_cube = cli_in_process("status", f"s3://{BUCKET}/absent.zarr", env=s3)
    assert not_a_cube.returncode == 2 and "is not a cube (no zarr.json)" in not_a_cube.stderr
    _no_url_folders(tmp_path)


def test_a_second_run_on_this_machine_is_refused_by_the_url_lock(s3, tmp_path):
    from ordercube.pipeline.cube.lock import CubeLock

    config = write_config(tmp_path / "c.yaml", **small_config(n=[40], resamples=2))
    url = f"s3://{BUCKET}/locked.zarr"
    with CubeLock(url) as lock:
        assert lock.path.is_relative_to(Path(s3["XDG_CACHE_HOME"]) / "ordercube" / "locks")
        refused = cli_in_process("run", str(config), "--out", url, env=s3)
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"error: --out: the cube {url} is being written by another ordercube run (pid {os.getpid()}")
    assert not _s3fs().exists(f"{BUCKET}/locked.zarr")


@pytest.mark.parametrize(("out", "expected"), [
    ("foo://x/cube.zarr", "'foo://x/cube.zarr' has the scheme foo://, which ordercube does not store cubes in"),
    ("s3:/cubes/x.zarr", "looks like a mistyped URL (a URL has '://' after the scheme), and ordercube will not create a "
                         "local folder named 's3:'; write s3://cubes/x.zarr for object storage"),
    ("S3:cubes/x.zarr", "write S3://cubes/x.zarr for object storage, or ./S3:cubes/x.zarr for a local folder"),
    ("gs://bucket/x.zarr", "gs:// needs the package gcsfs, which is not installed; pip install gcsfs"),
    ("memory://x.zarr", "is in the memory of one Python process and vanishes when it exits"),
])
def test_a_location_that_cannot_be_a_cube_exits_2_naming_the_fix(tmp_path, monkeypatch, out, expected):
    if out.startswith("gs://") and _installed("gcsfs"):
        pytest.skip("gcsfs is installed here")
    monkeypatch.chdir(tmp_path)
    config = write_config(tmp_path / "c.yaml", **small_config())
    for command in (["run", str(config), "--out", out], ["validate", str(config), "--out", out]):
        result = cli_in_process(*command)
        assert result.returncode == 2, result
        assert result.stderr.startswith("error: --out: ") and expected in result.stderr
        assert result.stderr.count("\n") == 1
    status = cli_in_process("status", out)
    assert status.returncode == 2 and status.stderr.startswith("error: CUBE: ")
    write_config(config, **small_config(out=out))  # the config's own 'out' is checked under its key
    assert cli_in_process("run", str(config)).stderr.startswith("error: out: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]  # nothing local named after the URL


def _installed(package: str) -> bool:
    from importlib.util import find_spec

    return find_spec(package) is not None


def test_without_s3fs_an_s3_url_exits_2_naming_the_package(tmp_path):
    blocker = tmp_path / "blocked" / "s3fs"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('s3fs is not installed (blocked by the test)')\n")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "blocked"), str(STUBS), str(REPO)])}
    config = write_config(tmp_path / "c.yaml", **small_config())
    for args in (["run", str(config), "--out", "s3://b/x.zarr"], ["status", "s3://b/x.zarr"],
                 ["report", "s3://b/x.zarr"]):
        result = cli(*args, env=env, timeout=120)
        assert result.returncode == 2, result.stderr
        assert "s3:// needs the package s3fs, which is not installed; pip install s3fs" in result.stderr
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")


def test_memory_urls_work_in_process_with_growth_rolled_back_after_a_crash(monkeypatch):
    """memory:// through ordercube.pipeline.cube.owner.Cube: create, write a block, grow, and a growth interrupted mid-way is
    invisible to readers and rolled back by the next writer (the journal uses the zarr API only)."""
    from ordercube.pipeline.cube import growth as cube_growth
    from ordercube.pipeline.config.study import parse_config
    from ordercube.pipeline.cube.owner import Cube
    from ordercube.pipeline.cube.grid import config_coords, default_chunks
    from ordercube.pipeline.run.sweep import fill_baseline, make_plan
    from ordercube.tasks.cell import BlockResult, Status

    url = f"memory://ordercube-test-{os.getpid()}/cube.zarr"
    before = parse_config(small_config(n=[40], k=[2, 3], resamples=4), out=url)
    coords = config_coords(before)
    Cube.check_new(url)
    Cube.create(url, before, coords, default_chunks(before), prepare=lambda new: fill_baseline(new, before, coords))
    assert Cube.exists(url)
    written = Cube.open_for(url, before, writable=True)
    chunk = make_plan(before, coords, written.chunk_shape, np.zeros(coords.shape, dtype=np.int8)).chunks[0]
    shape = (len(chunk.k), len(chunk.trial))
    values = {name: np.full(shape, 0.25) for name in before.variables}
    written.writer().write(chunk, BlockResult(
        values=values, status=np.full(shape, Status.OK, dtype=np.int8), reason=np.full(shape, "", dtype=object),
        seconds=np.ones(shape)))
    cube = Cube.open(url).dataset()
    assert cube.sizes["trial"] == 4 and int((cube["status"] == Status.OK).sum()) == chunk.cells

    after = parse_config(small_config(n=[40, 80], k=[2, 3], resamples=6), out=url)

    def crash(*args, **kwargs):
        raise RuntimeError("killed mid-growth")

    with monkeypatch.context() as patched:
        patched.setattr(cube_growth, "grow_manifest", crash)  # after every array is resized, before the record is cleared
        with pytest.raises(RuntimeError):
            Cube.open_for(url, after, writable=True).grow(after, config_coords(after))
    seen = Cube.open(url).dataset()  # the shapes from before the growth, its done cells intact
    assert dict(seen.sizes) == dict(cube.sizes)
    assert int((seen["status"] == Status.OK).sum()) == chunk.cells
    merged, notes = Cube.open_for(url, after, writable=True).grow(after, config_coords(after))
    assert "rolled back the growth an earlier run left unfinished" in notes
    grown = Cube.open(url).dataset()
    assert grown.sizes["trial"] == 6 and grown.sizes["n"] == 2
    assert int((grown["status"] == Status.OK).sum()) == chunk.cells
    assert float(grown[before.variables[0]].isel(dataset=0, n=0, model=0, k=0, trial=0)) == 0.25


def test_the_lock_object_keeps_out_a_run_on_another_machine_and_a_dead_local_holder_is_taken_over(s3, tmp_path):
    """A run on another host holds ``CUBE.lock`` (a real object, created as that run would): refused, naming
    it; the object of a dead run on this host (this machine's lock is free) is taken over and released."""
    config = write_config(tmp_path / "c.yaml", **small_config(n=[40], k=[2, 3], resamples=2))
    url = f"s3://{BUCKET}/shared.zarr"
    fs = _s3fs()
    other = {"host": "another-machine", "pid": 4242, "started": "2026-01-01T00:00:00+0000", "command": "ordercube run"}
    fs.pipe(f"{BUCKET}/shared.zarr.lock", json.dumps(other).encode())
    refused = cli_in_process("run", str(config), "--out", url, env=s3)
    assert refused.returncode == 2
    assert refused.stderr.startswith(f"error: --out: the cube {url} is being written by another ordercube run "
                                     "(pid 4242 on host another-machine, started 2026-01-01T00:00:00+0000; no heartbeat")
    assert "once it is more than 120 s old, run again with --break-lock another-machine:4242" in refused.stderr
    assert not fs.exists(f"{BUCKET}/shared.zarr") and json.loads(fs.cat(f"{BUCKET}/shared.zarr.lock")) == other

    import socket

    fs.pipe(f"{BUCKET}/shared.zarr.lock", json.dumps({**other, "host": socket.gethostname()}).encode())
    taken = cli("run", str(config), "--out", url, "--no-progress", "--workers", "0", env=s3, timeout=300)
    assert taken.returncode == 0, taken.stderr
    assert "a previous run (pid 4242 on host " in taken.stdout and "its lock was stale and is taken over" in taken.stdout
    assert not fs.exists(f"{BUCKET}/shared.zarr.lock")  # released at the end of the run
    assert fs.exists(f"{BUCKET}/shared.zarr/zarr.json")


def test_a_lock_of_another_machine_is_broken_only_by_name_and_only_once_its_heartbeat_is_older_than_the_lease(
        s3, tmp_path, monkeypatch):
    """The holder of an S3 cube's lock object rewrites its heartbeat while it runs; a run on another machine takes
    the lock over only with --break-lock naming that holder, and only once the heartbeat is older than the lease
    (never while the holder lives). A run's own heartbeat is seen in its lock object while it holds it."""
    import time

    from ordercube.pipeline.cube.lock import CubeLock

    config = write_config(tmp_path / "c.yaml", **small_config(n=[40], k=[2, 3], resamples=2))
    url = f"s3://{BUCKET}/leased.zarr"
    fs = _s3fs()
    alive = {"host": "another-machine", "pid": 77, "started": "2026-11-29T10:00:00+0000", "command": "ordercube run",
             "heartbeat": time.time() - 10}
    fs.pipe(f"{BUCKET}/leased.zarr.lock", json.dumps(alive).encode())
    live = cli_in_process("run", str(config), "--out", url, "--break-lock", "another-machine:77", env=s3)
    assert live.returncode == 2 and live.stderr.startswith("error: --break-lock: another-machine:77 wrote its heartbeat "), \
        live.stderr
    assert "under the 120 s lease (ordercube's default: it stated none): it is running; its lock is not broken" \
        in live.stderr
    wrong = cli_in_process("run", str(config), "--out", url, "--break-lock", "another-machine:78", env=s3)
    assert wrong.returncode == 2 and "does not name the lock's holder, which is another-machine:77" in wrong.stderr
    assert json.loads(fs.cat(f"{BUCKET}/leased.zarr.lock")) == alive and not fs.exists(f"{BUCKET}/leased.zarr")
    fs.pipe(f"{BUCKET}/leased.zarr.lock", json.dumps({**alive, "heartbeat": time.time() - 121}).encode())  # it died
    taken = cli_in_process("run", str(config), "--out", url, "--no-progress", "--workers", "0", "--break-lock",
                           "another-machine:77", env=s3)
    assert taken.returncode == 0, taken.stderr
    assert "a previous run (pid 77 on host another-machine" in taken.stdout and "taken over" in taken.stdout
    assert not fs.exists(f"{BUCKET}/leased.zarr.lock") and fs.exists(f"{BUCKET}/leased.zarr/zarr.json")
    # the holder's own lease decides, not the breaker's: 300 s stated, 200 s old, refused; 5 s stated, 6 s old, taken
    fs.pipe(f"{BUCKET}/leased.zarr.lock", json.dumps({**alive, "lease": 300, "heartbeat": time.time() - 200}).encode())
    long_lease = cli_in_process("run", str(config), "--out", url, "--break-lock", "another-machine:77", env=s3)
    assert long_lease.returncode == 2 and "under the 300 s lease it stated: it is running" in long_lease.stderr
    fs.pipe(f"{BUCKET}/leased.zarr.lock", json.dumps({**alive, "lease": 5, "heartbeat": time.time() - 6}).encode())
    short_lease = cli_in_process("run", str(config), "--out", url, "--no-progress", "--workers", "0", "--break-lock",
                                 "another-machine:77", env=s3)
    assert short_lease.returncode == 0 and "taken over" in short_lease.stdout, short_lease.stderr
    # a holder's heartbeat: stated with its lease, rewritten four times per lease while it holds the lock, stopped at
    # release (the object removed)
    monkeypatch.setenv("ORDERCUBE_LOCK_LEASE_SECONDS", "0.8")
    with CubeLock(url):
        first = json.loads(fs.cat(f"{BUCKET}/leased.zarr.lock"))
        assert first["lease"] == 0.8
        time.sleep(1.0)
        assert json.loads(_s3fs().cat(f"{BUCKET}/leased.zarr.lock"))["heartbeat"] > first["heartbeat"]
    assert not fs.exists(f"{BUCKET}/leased.zarr.lock")


@pytest.mark.slow  # 2 to 8 minutes: nine runs of a LocalCluster
@pytest.mark.timeout(1200)
def test_a_kill_during_creation_or_growth_on_s3_then_the_same_command_gives_the_undisturbed_cells(s3, tmp_path):
    """``kill -9`` of the driver's process group (the test plugin ordercube_kill_switch, counting the objects
    written or deleted) at seeded moments of an S3 cube's creation and growth; the same command then gives
    the cells of an undisturbed local run and the objects of an undisturbed S3 run, with no marker left."""
    import random

    from test_crash_safety import AFTER, BEFORE, _run

    fs = _s3fs()
    before, after = write_config(tmp_path / "before.yaml", **BEFORE), write_config(tmp_path / "after.yaml", **AFTER)
    local_created, local_grown = tmp_path / "created.zarr", tmp_path / "grown.zarr"
    assert _run(before, local_created).returncode == 0
    assert _run(after, local_grown).returncode == 0  # the cells of a grown cube are those of a new one
    counts, reference = tmp_path / "counts.json", f"s3://{BUCKET}/kill/reference.zarr"
    assert _run(before, reference, ORDERCUBE_KILL_COUNT=str(counts), **s3).returncode == 0
    created_objects = _objects(fs, reference)
    fs.copy(f"{BUCKET}/kill/reference.zarr", f"{BUCKET}/kill/created-copy.zarr", recursive=True)
    creation_changes = json.loads(counts.read_text())["create"]
    assert _run(after, reference, ORDERCUBE_KILL_COUNT=str(counts), **s3).returncode == 0
    growth_changes = json.loads(counts.read_text())["grow"]
    assert creation_changes > 20 and growth_changes > 20, (creation_changes, growth_changes)
    grown_objects = _objects(fs, reference)
    status_before = json.loads(cli("status", str(local_created), "--json").stdout)

    moments = [("create", random.Random(21).randint(1, creation_changes)), ("grow", random.Random(22).randint(1, growth_changes))]
    for phase, moment in moments:
        url = f"s3://{BUCKET}/kill/{phase}-{moment}.zarr"
        if phase == "grow":
            fs.copy(f"{BUCKET}/kill/created-copy.zarr", url.removeprefix("s3://"), recursive=True)
        config = before if phase == "create" else after
        killed = _run(config, url, ORDERCUBE_KILL_AT=str(moment), **s3)
        assert killed.returncode == -9, f"not killed at change {moment} of {phase}: {killed.stderr}"
        status = cli("status", url, "--json", env=s3, timeout=120)
        if phase == "grow":  # readers see the cube as it was before the growth
            assert status.returncode == 0 and json.loads(status.stdout) == status_before, status.stderr
        else:  # a half-uploaded cube is not a cube
            assert status.returncode == 2 and "is not a cube (no zarr.json)" in status.stderr, status.stderr
        result = _run(config, url, **s3)
        assert result.returncode == 0, f"{phase} killed at change {moment}: the same command then failed: {result.stderr}"
        assert_same_cells(local_created if phase == "create" else local_grown, url)
        assert _objects(fs, url) == (created_objects if phase == "create" else grown_objects), f"{phase} at {moment}"


def _objects(fs, url: str) -> set[str]:
    """The cube's object names, relative to it (their presence, not their bytes: seconds differ run to run)."""
    prefix = url.removeprefix("s3://") + "/"
    return {key.removeprefix(prefix) for key in fs.find(prefix)}
