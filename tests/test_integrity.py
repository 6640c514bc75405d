"""The cube is checked, not trusted: checksums name a damaged chunk, lost chunks and variables make their cells
pending again (never silent NaN), damaged metadata is an error naming the file, one writer at a time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
import zarr

from conftest import ORDERCUBE, REPO, STUBS, cli, cli_in_process, small_config, write_config
from ordercube.pipeline.cube.integrity import OUTPUTS, chunk_grid_any, expand_grid, outputs_of
from test_engine import assert_same_cells, run_here

CONFIG = small_config(resamples=4, datasets=[{"name": "gauss", "kind": "lange_gaussians3"}])
CELLS = 1 * 2 * 1 * 3 * 4


@pytest.fixture(scope="module")
def computed(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("computed")
    config = write_config(folder / "c.yaml", **CONFIG)
    run_here(config, folder / "cube.zarr")
    return config, folder / "cube.zarr"


@pytest.fixture
def cube(computed, tmp_path) -> tuple[Path, Path]:
    config, reference = computed
    shutil.copytree(reference, tmp_path / "cube.zarr")
    return config, tmp_path / "cube.zarr"


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _flip_a_byte(path: Path, at: int = 5) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


def test_chunk_grid_reduction_by_hand():
    mask = np.zeros((5, 3), dtype=bool)
    mask[4, 0] = True  # in the edge chunk along the first axis
    grid = chunk_grid_any(mask, (2, 2))
    assert grid.tolist() == [[False, False], [False, False], [True, False]]
    cells = expand_grid(grid, (2, 2), (5, 3))
    assert cells.shape == (5, 3) and cells.sum() == 2 and cells[4, 0] and cells[4, 1]


def test_every_chunk_is_checksummed(cube):
    _, path = cube
    arrays = [path / "integrity" / "crc" / "zarr.json", *path.glob("*/zarr.json")]
    arrays = [metadata for metadata in arrays if json.loads(metadata.read_text())["node_type"] == "array"]
    assert len(arrays) == 5 + 1 + 6 + 1  # coordinates, true_k; lange, pairwise, status, reason, seconds, baseline; the manifest
    for metadata in arrays:
        codecs = [codec["name"] for codec in json.loads(metadata.read_text())["codecs"]]
        assert codecs[-1] == "crc32c", (metadata, codecs)


def test_a_flipped_byte_is_an_error_naming_the_chunk(cube):
    config, path = cube
    _flip_a_byte(path / "lange" / "c" / "0" / "1" / "0" / "0" / "0")
    before = _tree(path)
    for command in (["status", str(path), "--verify"], ["report", str(path), "--out", str(path.parent / "r")]):
        result = cli(*command)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr and "Task was destroyed" not in result.stderr, result.stderr
        assert "lange/c/0/1/0/0/0" in result.stderr and "checksum" in result.stderr
    _flip_a_byte(path / "status" / "c" / "0" / "0" / "0" / "0" / "0")
    before = _tree(path)
    for command in (["status", str(path)], ["run", str(config), "--out", str(path), "--no-progress"],
                    ["validate", str(config), "--out", str(path)]):
        result = cli_in_process(*command)
        assert result.returncode == 2 and "status/c/0/0/0/0/0" in result.stderr, (command, result.stderr)
        assert "Traceback" not in result.stderr
    assert _tree(path) == before


def test_the_advised_fix_deleting_the_damaged_chunk_recomputes_it(cube, computed):
    config, path = cube
    _flip_a_byte(path / "pairwise" / "c" / "0" / "0" / "0" / "0" / "0")
    (path / "pairwise" / "c" / "0" / "0" / "0" / "0" / "0").unlink()
    result = run_here(config, path)
    assert "12 cell(s) marked done have lost their values (pairwise/c/0/0/0/0/0 missing)" in result.stdout
    assert_same_cells(path, computed[1])
    assert cli_in_process("status", str(path), "--verify").returncode == 0


def test_a_valid_chunk_copied_over_another_is_detected_by_the_manifest_and_recomputed(cube, computed):
    config, path = cube
    chunks = path / "lange" / "c" / "0"
    assert (chunks / "0" / "0" / "0" / "0").read_bytes() != (chunks / "1" / "0" / "0" / "0").read_bytes()
    shutil.copyfile(chunks / "0" / "0" / "0" / "0", chunks / "1" / "0" / "0" / "0")  # a valid checksum, the wrong place
    result = cli_in_process("status", str(path), "--json")
    assert json.loads(result.stdout)["pending"] == 12
    assert "lange/c/0/1/0/0/0 not the chunk recorded at its place" in result.stderr
    rerun = run_here(config, path)
    assert "12 cell(s) marked done have lost their values" in rerun.stdout
    assert_same_cells(path, computed[1])
    assert cli_in_process("status", str(path), "--verify").stderr.startswith("verified: ")


def test_with_the_manifest_s_chunks_deleted_no_chunk_is_trusted_and_a_copied_one_is_recomputed(cube, computed):
    """Deleting a damaged manifest chunk is the fix its message gives; with every manifest chunk deleted, a value
    chunk copied over another passed status --verify, report and run (its wrong values kept). A missing manifest
    chunk vouches for nothing: the cells it covered are pending, and the run recomputes them."""
    config, path = cube
    chunks = path / "lange" / "c" / "0"
    shutil.copyfile(chunks / "0" / "0" / "0" / "0", chunks / "1" / "0" / "0" / "0")
    shutil.rmtree(path / "integrity" / "crc" / "c")
    result = cli_in_process("status", str(path), "--json", "--verify")
    assert json.loads(result.stdout)["pending"] == CELLS and json.loads(result.stdout)["ok"] == 0
    assert "without a checksum to trust (the manifest's chunk of it is gone: integrity/crc)" in result.stderr
    report = cli_in_process("report", str(path), "--out", str(path.parent / "report"))
    assert report.returncode == 0 and "nothing" in report.stdout.lower() + report.stderr.lower()
    rerun = run_here(config, path)
    assert f"{CELLS} cell(s) marked done have lost their values" in rerun.stdout
    assert_same_cells(path, computed[1])  # the copied chunk's values were not kept
    assert cli_in_process("status", str(path)).stderr == ""
    assert sorted(p.name for p in (path / "integrity" / "crc" / "c").rglob("*") if p.is_file())  # recorded again


def test_a_deleted_chunk_or_variable_makes_its_cells_pending_never_silent_nan(cube, computed):
    config, path = cube
    shutil.rmtree(path / "lange" / "c" / "0" / "1")  # the n = 80 chunk of lange
    result = cli_in_process("status", str(path), "--json")
    assert result.returncode == 0
    assert json.loads(result.stdout)["pending"] == 12 and json.loads(result.stdout)["ok"] == CELLS - 12
    assert result.stderr.count("\n") == 1 and "lange/c/0/1/0/0/0" in result.stderr and "pending" in result.stderr
    report = cli_in_process("report", str(path), "--out", str(path.parent / "report"))
    assert report.returncode == 0 and "lost their values" in report.stderr
    shutil.rmtree(path / "pairwise")  # a whole variable
    result = cli_in_process("status", str(path), "--json")
    assert json.loads(result.stdout)["pending"] == CELLS and "variable pairwise missing" in result.stderr
    rerun = run_here(config, path)
    assert f"{CELLS} cell(s) marked done have lost their values" in rerun.stdout
    assert_same_cells(path, computed[1])
    assert cli_in_process("status", str(path)).stderr == ""


def test_the_cube_records_what_each_method_writes_and_status_finds_lost_chunks_without_the_criteria(cube):
    """What the lost-value check needs of the criteria is in the cube (``ordercube_outputs``): ``status`` reads it
    without importing the criteria registry, and a cube written before it is checked from the registry alike."""
    import sys

    _, path = cube
    attributes = json.loads((path / "zarr.json").read_text())["attributes"]
    recorded = json.loads(attributes[OUTPUTS])
    assert recorded == outputs_of(json.loads(attributes["ordercube_identity"])["methods"])
    (model,) = recorded
    assert {"lange", "pairwise"} <= set(recorded[model]["variables"]) and recorded[model]["baseline"] == ["lange"]
    shutil.rmtree(path / "lange" / "c" / "0" / "1")  # the n = 80 chunk of lange
    status = ("import json, sys; from ordercube.pipeline.cli import main; main(['status', sys.argv[1], '--json']); "
              "print('registry', 'ordercube.tasks.criteria' in sys.modules)")

    def counted() -> tuple[dict, list[str], str]:
        done = subprocess.run([sys.executable, "-c", status, str(path)], capture_output=True, text=True, timeout=120)
        lines = done.stdout.splitlines()
        return json.loads(lines[0]), lines[1:], done.stderr

    counts, registry, stderr = counted()
    assert counts["pending"] == 12 and registry == ["registry False"] and "lange/c/0/1/0/0/0" in stderr
    document = json.loads((path / "zarr.json").read_text())
    del document["attributes"][OUTPUTS]  # as an older ordercube wrote it
    (path / "zarr.json").write_text(json.dumps(document))
    older, registry, stderr = counted()
    assert older == counts and registry == ["registry True"] and "lange/c/0/1/0/0/0" in stderr


@pytest.mark.parametrize("damage", ["garbage", "empty", "foreign"])
def test_damaged_metadata_or_a_foreign_store_exits_2_naming_the_file(cube, damage):
    config, path = cube
    if damage == "foreign":
        shutil.rmtree(path)
        zarr.open_group(path, mode="w", zarr_format=3).create_array("x", shape=(3,), dtype="f8")
        named = str(path)
    else:
        target = path / "status" / "zarr.json"
        target.write_bytes(b"\x00\xffnot json" if damage == "garbage" else b"")
        named = str(target)
    before = _tree(path)
    for command in (["status", str(path)], ["report", str(path), "--out", str(path.parent / "r")],
                    ["run", str(config), "--out", str(path), "--no-progress"], ["validate", str(config), "--out", str(path)]):
        result = cli_in_process(*command)
        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
        assert named in result.stderr, (command, result.stderr)
    assert _tree(path) == before


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)])}


def test_a_second_writer_is_refused_naming_the_holder_and_a_dead_holder_is_detected(tmp_path):
    sleepy = write_config(tmp_path / "sleepy.yaml", **small_config(
        n=[40], k=[2, 3], resamples=20, datasets=[{"name": "gauss", "kind": "lange_gaussians3"}],
        methods=[{"name": "m", "algorithm": "stub_sleepy", "predictor": "nearest_centroid", "criteria": ["lange"]}]))
    path = tmp_path / "cube.zarr"
    env = {**_env(), "ORDERCUBE_PLUGINS": "ordercube_test_stubs"}
    first = subprocess.Popen([ORDERCUBE, "run", str(sleepy), "--out", str(path),
                              "--no-progress", "--workers", "0"], env={**env, "ORDERCUBE_STUB_SLEEP": "1"},
                             start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (path / "status").exists():
            assert first.poll() is None and time.monotonic() < deadline, "the first run did not create its cube"
            time.sleep(0.05)
        second = cli_in_process("run", str(sleepy), "--out", str(path), "--no-progress", env=env)
        assert second.returncode == 2, second.stderr
        assert f"pid {first.pid}" in second.stderr and "being written by another ordercube run" in second.stderr
        assert "Traceback" not in second.stderr and second.stderr.count("\n") == 1
        assert first.poll() is None, "the first run ended before the second was refused: nothing was tested"
    finally:
        os.killpg(first.pid, 9)  # the holder dies without releasing: the kernel drops its flock
        first.wait(timeout=60)
    assert (tmp_path / "cube.zarr.lock").exists()
    resumed = cli_in_process("run", str(sleepy), "--out", str(path), "--no-progress", "--workers", "0", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert f"pid {first.pid}" in resumed.stdout and "stale" in resumed.stdout
    assert not (tmp_path / "cube.zarr.lock").exists()
    assert json.loads(cli_in_process("status", str(path), "--json").stdout)["pending"] == 0
