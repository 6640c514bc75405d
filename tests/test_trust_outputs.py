"""What a command writes, and never through: symbolic links, named pipes and devices planted in a report
folder, at a lock file or at an output's path; a cube path that is another cube's lock; unbounded options.
Every refusal is exit 2 with one line naming the option or the path, the value and the fix, and leaves every
byte of the folder (the cube, the planted target, the earlier report) as it was."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

import ordercube
from conftest import cli_in_process, small_config, write_config
from ordercube.pipeline.system.cores import max_workers
from ordercube.pipeline.errors import InputError
from ordercube.pipeline.cube.lock import CubeLock
from ordercube.pipeline.files.outputs import write_output

CONFIG = small_config(n=[40], k=[2, 3], resamples=2, datasets=[{"name": "gauss", "kind": "lange_gaussians3"}],
                      methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 3},
                                "predictor": "nearest_centroid", "criteria": ["lange", "pairwise", "agreement"]}])
VICTIM = b"victim: a file of the user's\n"


def _snapshot(root: Path) -> dict[str, object]:
    """Every entry under ``root``, links not followed: a file's bytes, a link's target, a folder or a pipe."""
    seen: dict[str, object] = {}
    for folder, folders, files in os.walk(root):
        for name in folders + files:
            path = Path(folder) / name
            mode = path.lstat().st_mode
            seen[str(path.relative_to(root))] = (
                ("link", os.readlink(path)) if stat.S_ISLNK(mode) else path.read_bytes() if stat.S_ISREG(mode)
                else ("folder",) if stat.S_ISDIR(mode) else ("other", stat.S_IFMT(mode)))
    return seen


def _one_error_line(result, *fragments: str) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def computed(tmp_path_factory) -> Path:
    """A folder with the config, its cube (cubes/base.zarr) and an earlier report of it (rep1)."""
    folder = tmp_path_factory.mktemp("outputs")
    write_config(folder / "cfg.yaml", **CONFIG)
    run = cli_in_process("run", "cfg.yaml", "--out", "cubes/base.zarr", "--workers", "0", "--no-progress", cwd=folder)
    assert run.returncode == 0, run.stderr
    report = cli_in_process("report", "cubes/base.zarr", "--out", "rep1", cwd=folder)
    assert report.returncode == 0, report.stderr
    return folder


@pytest.fixture
def folder(computed, tmp_path) -> Path:
    shutil.copytree(computed, tmp_path / "w", symlinks=True)
    (tmp_path / "w" / "victim.yaml").write_bytes(VICTIM)
    return tmp_path / "w"


def _link(name: str, target: str) -> Callable[[Path], None]:
    def plant(folder: Path) -> None:
        (folder / name).unlink(missing_ok=True)
        (folder / name).symlink_to(target)
    return plant


def _fifo(name: str) -> Callable[[Path], None]:
    def plant(folder: Path) -> None:
        (folder / name).unlink(missing_ok=True)
        os.mkfifo(folder / name)
    return plant


def _folder(name: str) -> Callable[[Path], None]:
    def plant(folder: Path) -> None:
        (folder / name).unlink(missing_ok=True)
        (folder / name).mkdir()
    return plant


def _both(*plants: Callable[[Path], None]) -> Callable[[Path], None]:
    def plant(folder: Path) -> None:
        for one in plants:
            one(folder)
    return plant


def _nothing(folder: Path) -> None:
    pass


CUBE = "cubes/base.zarr"
RUN = ["run", "cfg.yaml", "--no-progress"]
CASES: dict[str, tuple[Callable[[Path], None], list[str], list[str]]] = {
    # A1: links planted in an earlier report's folder, to the cube's metadata and to the user's config
    "report through links in its folder": (
        _both(_link("rep1/selection.csv", "../cubes/base.zarr/zarr.json"), _link("rep1/index.html", "../victim.yaml")),
        ["report", CUBE, "--out", "rep1"], ["--out", "selection.csv", "symbolic link", "remove it"]),
    "report through a link in a subfolder": (_both(_folder("rep1/notes"), _link("rep1/notes/x", "../../victim.yaml")),
                                             ["report", CUBE, "--out", "rep1"], ["rep1/notes/x", "symbolic link"]),
    # B3
    "report onto a named pipe": (_fifo("rep1/selection.csv"), ["report", CUBE, "--out", "rep1"],
                                 ["selection.csv", "named pipe", "remove it"]),
    "report onto a folder named index.html": (_folder("rep1/index.html"), ["report", CUBE, "--out", "rep1"],
                                              ["index.html", "is a folder named as a file the report writes"]),
    # C13
    "report into /dev/null": (_nothing, ["report", CUBE, "--out", "/dev/null"], ["--out", "/dev/null", "a device"]),
    # A2
    "run through a lock file that is a link": (_link("cubes/w3.zarr.lock", "../victim.yaml"),
                                               [*RUN, "--out", "cubes/w3.zarr", "--workers", "0"],
                                               ["--out", "w3.zarr.lock", "symbolic link", "move it away"]),
    "run with a lock file that is a pipe": (_fifo("cubes/w3.zarr.lock"), [*RUN, "--out", "cubes/w3.zarr", "--workers", "0"],
                                            ["w3.zarr.lock", "named pipe"]),
    "run with a lock file that is a folder": (_folder("cubes/w3.zarr.lock"),
                                              [*RUN, "--out", "cubes/w3.zarr", "--workers", "0"],
                                              ["w3.zarr.lock", "a folder", "move it away"]),
    # C1
    "run onto another cube's lock path": (_nothing, [*RUN, "--out", "cubes/base.zarr.lock", "--workers", "0"],
                                          ["--out", "base.zarr.lock", "ends in .lock", "lock file of the cube"]),
    "run onto a lock path of no cube yet": (_nothing, [*RUN, "--out", "cubes/w3.zarr.lock", "--workers", "0"],
                                            ["--out", "w3.zarr.lock", "ends in .lock"]),
    "run inside a cube": (_nothing, [*RUN, "--out", "cubes/base.zarr/inner.zarr", "--workers", "0"],
                          ["--out", "inside the cube"]),
    # B2
    "run with a scheduler file that is a pipe": (_fifo("sched.json"), [*RUN, "--out", "cubes/s.zarr", "--scheduler-file",
                                                                       "sched.json"],
                                                 ["--scheduler-file", "sched.json", "named pipe", "give the path of"]),
    "run with /dev/zero as scheduler file": (_nothing, [*RUN, "--out", "cubes/s.zarr", "--scheduler-file", "/dev/zero"],
                                             ["--scheduler-file", "/dev/zero", "a device"]),
    # B9
    "run with 100000 workers": (_nothing, [*RUN, "--out", "cubes/s.zarr", "--workers", "100000"],
                                ["--workers", "100000", f"the {max_workers()} local workers started at most"]),
    "run waiting 1e308 s to connect": (_nothing, [*RUN, "--out", "cubes/s.zarr", "--scheduler", "tcp://127.0.0.1:1",
                                                  "--connect-timeout", "1e308"],
                                       ["--connect-timeout", "1e+308", "604800 (a week)"]),
    "run waiting 1e308 s for workers": (_nothing, [*RUN, "--out", "cubes/s.zarr", "--wait-for-workers", "1e308"],
                                        ["--wait-for-workers", "604800 (a week)"]),
    # C9
    "replay looking first beyond the trials": (_nothing, ["replay", CUBE, "--r-min", "99999999999999999999"],
                                               ["--r-min", "99999999999999999999", "2 trials", "from 2 to 2"]),
    "replay of a criterion without a sequential rule": (_nothing, ["replay", CUBE, "--criterion", "agreement"],
                                                        ["--criterion", "'agreement'", "no sequential rule",
                                                         "['lange', 'pairwise']"]),
    # links at the files replay and partition write
    "replay through a link at its table": (_link("r.csv", "victim.yaml"), ["replay", CUBE, "--out", "r.csv"],
                                           ["--out", "r.csv", "symbolic link"]),
    "replay through a link at its figure": (_link("r.png", "victim.yaml"), ["replay", CUBE, "--out", "r.csv"],
                                            ["--out", "r.png", "symbolic link"]),
    "partition through a link at its clusters": (_link("p-clusters.csv", "victim.yaml"),
                                                 ["partition", CUBE, "--dataset", "gauss", "--method", "km",
                                                  "--out", "p.csv"], ["--out", "p-clusters.csv", "symbolic link"]),
}


@pytest.mark.parametrize("case", CASES)
def test_a_command_refuses_what_would_redirect_block_or_unbound_it(folder, case):
    plant, args, fragments = CASES[case]
    plant(folder)
    before = _snapshot(folder)
    result = cli_in_process(*args, cwd=folder)
    _one_error_line(result, *fragments)
    assert "Traceback" not in result.stderr
    assert _snapshot(folder) == before, "something was written, moved or removed"
    assert (folder / "victim.yaml").read_bytes() == VICTIM


def test_a_report_replaces_its_own_files_and_never_leaves_a_link_or_temporary(folder):
    before = (folder / "cubes/base.zarr/zarr.json").read_bytes()
    result = cli_in_process("report", CUBE, "--out", "rep1", cwd=folder)
    assert result.returncode == 0, result.stderr
    entries = list((folder / "rep1").iterdir())
    assert entries and all(stat.S_ISREG(p.lstat().st_mode) for p in entries)
    assert not [p for p in entries if p.name.endswith(".tmp")]
    assert (folder / "cubes/base.zarr/zarr.json").read_bytes() == before


def test_a_link_planted_after_the_check_is_replaced_not_written_through(tmp_path):
    """The last line of defence, should a link appear between the guard and the write: the write replaces it."""
    victim = tmp_path / "victim.yaml"
    victim.write_bytes(VICTIM)
    (tmp_path / "selection.csv").symlink_to(victim)
    write_output(tmp_path / "selection.csv", "a,b\n")
    assert victim.read_bytes() == VICTIM
    assert not (tmp_path / "selection.csv").is_symlink()
    assert (tmp_path / "selection.csv").read_text() == "a,b\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["selection.csv", "victim.yaml"]


def test_the_lock_never_opens_a_link(tmp_path):
    victim = tmp_path / "victim.yaml"
    victim.write_bytes(VICTIM)
    (tmp_path / "x.zarr.lock").symlink_to(victim)
    with pytest.raises(InputError, match="x.zarr.lock exists and is a symbolic link"):
        CubeLock(tmp_path / "x.zarr").acquire()
    assert victim.read_bytes() == VICTIM and (tmp_path / "x.zarr.lock").is_symlink()


@pytest.mark.parametrize("options, fragment", [
    ({"workers": 100000}, f"workers: 100000 is more than the {max_workers()} local workers"),
    ({"wait_for_workers": 1e308}, "wait_for_workers: 1e\\+308 seconds is more than the 604800"),
    ({"connect_timeout": 1e308, "scheduler": "tcp://127.0.0.1:1"}, "connect_timeout: 1e\\+308 seconds is more"),
    ({"out": "{tmp}/x.zarr.lock"}, "ends in .lock"),
])
def test_the_api_bounds_the_same_options(tmp_path, options, fragment):
    options = {key: value.format(tmp=tmp_path) if isinstance(value, str) else value for key, value in options.items()}
    write_config(tmp_path / "c.yaml", **CONFIG)
    with pytest.raises(InputError, match=fragment.replace("(", r"\(")):
        ordercube.sweep(tmp_path / "c.yaml", progress=False, **options)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]
