"""Creating and growing a cube survive `kill -9` at any moment: the same command then gives the cube of an
undisturbed run, byte for byte (every file but the wall-clock `seconds` chunks).

The kill comes from the test plugin ``ordercube_kill_switch`` (tests/stubs): it SIGKILLs the driver's whole
process group just before the Nth file-system change made while the cube is created or grown. The moments are
drawn from a seeded generator among all the changes those phases make. The driver alone makes those changes, so
the runs compute their cells in its process (--workers 0); tests/test_faults.py kills a driver with its
LocalCluster.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ORDERCUBE, REPO, STUBS, cli_in_process, small_config, write_config

# Edge chunks everywhere (3 trials per chunk, 4 then 6 trials; k chunk of 3 then a fourth k), and a growth
# that adds a sample size, a k, trials, a dataset and a method with a criterion (a new variable).
BEFORE = small_config(n=[40, 80], k=[2, 3, 4], resamples=4, datasets=[{"name": "gauss", "kind": "lange_gaussians3"}],
                      execution={"trials_per_chunk": 3, "task_seconds": 0.01})
AFTER = {**BEFORE, "n": [40, 80, 120], "k": [2, 3, 4, 5], "resamples": 6,
         "datasets": [{"name": "gauss", "kind": "lange_gaussians3"}, {"name": "rings", "kind": "rings3"}],
         "methods": [*BEFORE["methods"], {"name": "ps", "algorithm": "kmeans", "params": {"n_init": 2},
                                          "predictor": "nearest_centroid", "criteria": ["prediction_strength"]}]}
TIMEOUT = 180


def _run(config: Path, cube: Path, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)]),
                "ORDERCUBE_PLUGINS": "ordercube_kill_switch", **env}
    full_env.pop("ORDERCUBE_KILL_PID", None)
    try:
        return subprocess.run([ORDERCUBE, "run", str(config), "--out", str(cube),
                               "--no-progress", "--workers", "0"], env=full_env, capture_output=True, text=True,
                              timeout=TIMEOUT, start_new_session=True)
    except subprocess.TimeoutExpired as error:
        raise AssertionError(f"ordercube run did not finish in {TIMEOUT} s: {error.stderr}") from None


def _files(cube: Path) -> dict[str, bytes]:
    """Every file of the cube by relative path, but the wall-clock seconds' chunks (their presence is kept)."""
    return {str(p.relative_to(cube)): b"" if p.parts[len(cube.parts)] == "seconds" and "c" in p.parts else p.read_bytes()
            for p in sorted(cube.rglob("*")) if p.is_file()}


def _assert_same_files(cube: Path, reference: Path) -> None:
    got, want = _files(cube), _files(reference)
    assert got.keys() == want.keys(), f"files differ: extra {sorted(got.keys() - want.keys())}, " \
                                      f"missing {sorted(want.keys() - got.keys())}"
    different = [name for name in want if got[name] != want[name]]
    assert not different, f"bytes differ from the undisturbed run in {different}"


@pytest.fixture(scope="module")
def references(tmp_path_factory) -> dict:
    """Undisturbed runs (created, then grown) and how many file-system changes each phase made."""
    folder = tmp_path_factory.mktemp("undisturbed")
    before, after = write_config(folder / "before.yaml", **BEFORE), write_config(folder / "after.yaml", **AFTER)
    created, grown = folder / "created.zarr", folder / "grown.zarr"
    counts = folder / "counts.json"
    result = _run(before, created, ORDERCUBE_KILL_COUNT=str(counts))
    assert result.returncode == 0, result.stderr
    creation_changes = json.loads(counts.read_text())["create"]
    shutil.copytree(created, grown)
    result = _run(after, grown, ORDERCUBE_KILL_COUNT=str(counts))
    assert result.returncode == 0, result.stderr
    growth_changes = json.loads(counts.read_text())["grow"]
    assert creation_changes > 20 and growth_changes > 20, (creation_changes, growth_changes)
    status = cli_in_process("status", str(created), "--json")
    return {"before": before, "after": after, "created": created, "grown": grown,
            "create": creation_changes, "grow": growth_changes, "status before growth": json.loads(status.stdout)}


def _kill_then_rerun(refs: dict, phase: str, moment: int, folder: Path, *, second_kill: int = 0) -> None:
    cube = folder / f"{phase}-{moment}-{second_kill}" / "cube.zarr"
    cube.parent.mkdir()
    config = refs["before"] if phase == "create" else refs["after"]
    if phase == "grow":
        shutil.copytree(refs["created"], cube)
    killed = _run(config, cube, ORDERCUBE_KILL_AT=str(moment))
    assert killed.returncode == -9, f"not killed at change {moment} of {phase} ({killed.returncode}): {killed.stderr}"
    if phase == "grow":  # meanwhile, readers see the cube as it was before the growth
        status = cli_in_process("status", str(cube), "--json")
        assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr
        assert json.loads(status.stdout) == refs["status before growth"], status.stdout
    if second_kill:  # killed again while the next run repairs what the first left
        again = _run(config, cube, ORDERCUBE_KILL_AT=str(second_kill))
        assert again.returncode == -9, (again.returncode, again.stderr)
    result = _run(config, cube)
    assert result.returncode == 0, f"{phase} killed at change {moment}: the same command then failed: {result.stderr}"
    assert "Traceback" not in result.stderr
    _assert_same_files(cube, refs["created"] if phase == "create" else refs["grown"])
    assert sorted(p.name for p in cube.parent.iterdir()) == ["cube.zarr"], "leftovers beside the cube"


def _moments(refs: dict, phase: str, count: int, seed: int) -> list[int]:
    return sorted(random.Random(seed).sample(range(1, refs[phase] + 1), count))


def test_a_kill_during_creation_or_growth_then_the_same_command_gives_the_undisturbed_cube(references, tmp_path):
    for phase, moment in [("create", m) for m in _moments(references, "create", 1, 1)] + \
                         [("grow", m) for m in _moments(references, "grow", 1, 2)]:
        _kill_then_rerun(references, phase, moment, tmp_path)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_twenty_four_seeded_kill_moments_across_creation_and_growth(references, tmp_path):
    for moment in _moments(references, "create", 10, 11):
        _kill_then_rerun(references, "create", moment, tmp_path)
    for moment in _moments(references, "grow", 12, 12):
        _kill_then_rerun(references, "grow", moment, tmp_path)
    for moment in _moments(references, "grow", 2, 13):  # and the roll-back itself killed at its first changes
        _kill_then_rerun(references, "grow", moment, tmp_path, second_kill=2)
