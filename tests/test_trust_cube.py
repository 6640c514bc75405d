"""What a command writes and what it reads back: the output guard, the writer lock by real path, damaged
and incomplete cubes, the replay's bound and the figure helper's silence. Every refusal is exit 2 with one
line naming the option or the file, and leaves every byte of the cube (and of any file it refused to
overwrite) as it was."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import zarr

from conftest import REPO, cli, cli_in_process, small_config, write_config
from ordercube.pipeline.errors import InputError
from ordercube.pipeline.cube.lock import CubeLock
from ordercube.pipeline.files.location import Location
from ordercube.pipeline.report.replay import MAX_PERMUTATIONS
from ordercube.tasks.criteria.stability import random_labeling_disagreement
from ordercube.tasks.seeding import Purpose, stream

CONFIG = small_config(n=[40, 80], k=[2, 3], resamples=4, datasets=[{"name": "gauss", "kind": "lange_gaussians3"}])
CELLS_PER_N = 1 * 1 * 2 * 4  # dataset x model x k x trial at one n


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by its relative path, with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _one_error_line(result, *fragments: str) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def _flip_a_byte(path: Path, at: int = 5) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def computed(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("trust")
    config = write_config(folder / "c.yaml", **CONFIG)
    result = cli_in_process("run", str(config), "--out", str(folder / "cube.zarr"), "--workers", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    return config, folder / "cube.zarr"


@pytest.fixture
def cube(computed, tmp_path) -> tuple[Path, Path]:
    """A copy of the computed cube and its config in a fresh folder (with a foreign file and a symlink to the cube)."""
    config, reference = computed
    shutil.copytree(reference, tmp_path / "cube.zarr")
    shutil.copyfile(config, tmp_path / "c.yaml")
    (tmp_path / "notes.csv").write_text("mine,not ordercube's\n1,2\n")
    (tmp_path / "link.zarr").symlink_to(tmp_path / "cube.zarr")
    (tmp_path / "folder").mkdir()
    return tmp_path / "c.yaml", tmp_path / "cube.zarr"


# --- the output guard ------------------------------------------------------------------------------------------

PART = ["--dataset", "gauss", "--method", "km"]
OUTPUT_CASES: dict[str, tuple[list[str], list[str]]] = {
    # the reproducers: the cube's root metadata overwritten, exit 0, the cube lost
    "replay over the cube's zarr.json": (["replay", "{cube}", "--out", "{cube}/zarr.json"], ["--out", "inside the cube"]),
    "partition over the cube's zarr.json": (["partition", "{cube}", *PART, "--out", "{cube}/zarr.json"],
                                            ["--out", "inside the cube"]),
    "replay into an array of the cube": (["replay", "{cube}", "--out", "{cube}/lange/table.csv"], ["inside the cube"]),
    "replay through a symlink to the cube": (["replay", "{cube}", "--out", "link.zarr/zarr.json"],
                                             ["inside the cube", "cube.zarr"]),
    "replay by a relative path into the cube": (["replay", "{cube}", "--out", "folder/../cube.zarr/status/zarr.json"],
                                                ["inside the cube"]),
    "partition onto the cube itself": (["partition", "{cube}", *PART, "--out", "{cube}"], ["--out", "is the cube itself"]),
    "report into the cube through a symlink": (["report", "{cube}", "--out", "link.zarr/report"], ["inside the cube"]),
    "run creating a cube inside the cube": (["run", "c.yaml", "--out", "{cube}/lange/x.zarr", "--workers", "0"],
                                            ["--out", "inside the cube"]),
    "replay over a file it did not write": (["replay", "{cube}", "--out", "notes.csv"],
                                            ["--out", "notes.csv", "not a replay table written by ordercube"]),
    "replay over the config": (["replay", "{cube}", "--out", "c.yaml"], ["c.yaml", "not a replay table"]),
    "replay over the cube's lock file": (["replay", "{cube}", "--out", "{cube}.lock"], ["writer lock file of the cube"]),
    "replay whose figure would overwrite a foreign PNG": (["replay", "{cube}", "--out", "plot.csv"],
                                                         ["plot.png", "not a replay figure"]),
    "replay --out naming the figure": (["replay", "{cube}", "--out", "r.png"], ["--out", "names the figure", ".csv"]),
    "replay into a folder": (["replay", "{cube}", "--out", "folder"], ["--out", "is a folder"]),
    "replay into a missing folder": (["replay", "{cube}", "--out", "nowhere/r.csv"], ["--out", "does not exist"]),
    "partition over a file it did not write": (["partition", "{cube}", *PART, "--out", "notes.csv"],
                                               ["notes.csv", "not a partition's labels"]),
    "partition whose clusters would overwrite a foreign file": (["partition", "{cube}", *PART, "--out", "p.csv"],
                                                               ["p-clusters.csv", "not a partition's clusters"]),
    "report into a folder of other files": (["report", "{cube}", "--out", "."], ["--out", "no ordercube report"]),
    "replay without bound": (["replay", "{cube}", "--permutations", "100000000"],
                             ["--permutations", "100000000", f"{MAX_PERMUTATIONS:,}"]),
    "replay negative permutations": (["replay", "{cube}", "--permutations", "-1"], ["--permutations", "-1"]),
}


@pytest.mark.parametrize("case", OUTPUT_CASES)
def test_a_command_never_writes_into_a_cube_or_over_a_file_it_did_not_write(cube, case):
    _, path = cube
    folder = path.parent
    (folder / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\nsomebody else's figure")
    (folder / "p-clusters.csv").write_text("a,b\n")
    args, fragments = OUTPUT_CASES[case]
    before, others = _tree(path), {name: (folder / name).read_bytes() for name in ("notes.csv", "c.yaml", "plot.png",
                                                                                   "p-clusters.csv")}
    listing = sorted(p.name for p in folder.iterdir())
    result = cli_in_process(*[arg.format(cube=path) for arg in args], cwd=folder)
    _one_error_line(result, *fragments)
    assert _tree(path) == before, "the cube changed"
    assert {name: (folder / name).read_bytes() for name in others} == others
    assert sorted(p.name for p in folder.iterdir()) == listing, "a file was written beside the cube"


def test_a_command_overwrites_its_own_earlier_output(cube):
    _, path = cube
    folder = path.parent
    for _ in range(2):
        replayed = cli_in_process("replay", str(path), "--permutations", "20", "--out", "r.csv", cwd=folder)
        assert replayed.returncode == 0, replayed.stderr
        parted = cli_in_process("partition", str(path), *PART, "--out", "p.csv", cwd=folder)
        assert parted.returncode == 0, parted.stderr
        reported = cli_in_process("report", str(path), "--out", "report", cwd=folder)
        assert reported.returncode == 0, reported.stderr
    assert (folder / "r.csv").read_text().startswith("dataset,n,method,criterion,trials,fixed_k_hat,")
    assert (folder / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (folder / "p.csv").read_text().startswith("row,cluster,class\n")
    assert (folder / "p-clusters.csv").read_text().startswith("cluster,size,jaccard_mean,")
    assert (folder / "report" / "selection.csv").is_file()
    # the first line says what the chosen B costs before the replay starts: groups x (B + 1) orders and a time
    first = replayed.stdout.splitlines()[0]
    assert first.startswith("replaying 4 groups x 21 trial orders: about "), first  # lange, pairwise x n = 40, 80


def test_an_interrupted_reports_folder_is_still_its_own(cube, tmp_path):
    """A new report folder is marked as a report's before anything is written to it."""
    _, path = cube
    out = tmp_path / "report"
    out.mkdir()
    (out / ".ordercube-figures.json").write_text("{}")  # what a report killed after its first write leaves
    (out / "selection.csv").write_text("half written")
    result = cli_in_process("report", str(path), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert (out / "selection.csv").read_text().startswith("dataset,n,method,criterion")


# --- the writer lock --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("held, tried", [("real", "symlink"), ("symlink", "real"), ("real", "relative"),
                                         ("relative", "symlink")])
def test_the_writer_lock_is_the_cube_s_whatever_its_path_is_spelled(cube, monkeypatch, held, tried):
    _, path = cube
    folder = path.parent
    monkeypatch.chdir(folder / "folder")
    spelled = {"real": path, "symlink": folder / "link.zarr", "relative": Path("..") / "cube.zarr"}
    before = _tree(path)
    with CubeLock(spelled[held]):
        with pytest.raises(InputError, match=rf"being written by another ordercube run \(pid {os.getpid()} on host"):
            CubeLock(spelled[tried]).acquire()
    assert _tree(path) == before
    assert not list(folder.glob("*.lock")), "the lock file is removed on release"


def test_a_run_through_a_symlink_is_refused_while_the_cube_is_locked(cube):
    config, path = cube
    before = _tree(path)
    with CubeLock(path):
        result = cli_in_process("run", str(config), "--out", str(path.parent / "link.zarr"), "--workers", "0",
                                "--no-progress")
    _one_error_line(result, "--out", "being written by another ordercube run", f"pid {os.getpid()}")
    assert _tree(path) == before


@pytest.mark.parametrize("spelling", ["s3://bucket/runs/x.zarr", "s3://bucket/runs/x.zarr/", "S3://bucket//runs/./x.zarr",
                                      "s3a://bucket/runs/x.zarr"])
def test_a_url_cube_is_locked_by_its_canonical_url(spelling):
    canonical = Location(text="s3://bucket/runs/x.zarr", url="s3://bucket/runs/x.zarr")
    other = Location(text=spelling, url=spelling)
    assert other.canonical_url() == "s3://bucket/runs/x.zarr"
    assert other.local_lock_file() == canonical.local_lock_file()
    assert Location(text="s3://bucket/runs/y.zarr", url="s3://bucket/runs/y.zarr").local_lock_file() != \
        canonical.local_lock_file()


# --- damaged cubes ----------------------------------------------------------------------------------------------

def _edit_shape(name: str, axis: int, size: int) -> Callable[[Path], None]:
    def edit(cube: Path) -> None:
        metadata = cube / name / "zarr.json"
        document = json.loads(metadata.read_text())
        document["shape"][axis] = size
        metadata.write_text(json.dumps(document))
    return edit


def _edit_metadata(name: str, edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def harm(cube: Path) -> None:
        metadata = cube / name / "zarr.json"
        document = json.loads(metadata.read_text())
        edit(document)
        metadata.write_text(json.dumps(document))
    return harm


def _chunk_shape(document: dict) -> None:
    document["chunk_grid"]["configuration"]["chunk_shape"][4] = 2


DAMAGE: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "a value array's chunk shape edited": (_edit_metadata("lange", _chunk_shape), ["lange/zarr.json", "chunk shape"]),
    "the status's chunk shape edited": (_edit_metadata("status", _chunk_shape), ["status/zarr.json", "chunk shape"]),
    "a value array's data type edited": (_edit_metadata("pairwise", lambda doc: doc.update(data_type="float32")),
                                         ["pairwise/zarr.json", "float32", "float64"]),
    "the status's fill value made ok": (_edit_metadata("status", lambda doc: doc.update(fill_value=1)),
                                        ["status/zarr.json", "fill value says 1"]),
    "a value array's fill value made 0": (_edit_metadata("lange", lambda doc: doc.update(fill_value=0.0)),
                                          ["lange/zarr.json", "fill value says 0.0"]),
    "the manifest's rows edited": (_edit_shape("integrity/crc", 0, 2), ["integrity/crc/zarr.json", "variables"]),
    "a value array's shape edited": (_edit_shape("lange", 4, 9), ["lange/zarr.json", "'trial'", "9", "4"]),
    "the status array's shape edited": (_edit_shape("status", 3, 5), ["status/zarr.json", "'k'"]),
    "a coordinate's shape shortened": (_edit_shape("trial", 0, 3), ["trial/zarr.json", "'trial'", "3"]),
    "the baseline's shape edited": (_edit_shape("lange_random", 1, 7), ["lange_random/zarr.json", "'k'"]),
    "the manifest's shape edited": (_edit_shape("integrity/crc", 1, 3), ["integrity/crc/zarr.json", "chunk grid"]),
    "a flipped byte in the trial coordinate": (lambda cube: _flip_a_byte(cube / "trial" / "c" / "0"),
                                               ["trial/c/0", "checksum"]),
    "a flipped byte in the n coordinate": (lambda cube: _flip_a_byte(cube / "n" / "c" / "0"), ["n/c/0", "checksum"]),
    "a flipped byte in true_k": (lambda cube: _flip_a_byte(cube / "true_k" / "c" / "0"), ["true_k/c/0", "checksum"]),
    "a flipped byte in the baseline": (lambda cube: _flip_a_byte(cube / "lange_random" / "c" / "1" / "0"),
                                       ["lange_random/c/1/0", "checksum"]),
    "a flipped byte in the status": (lambda cube: _flip_a_byte(cube / "status" / "c" / "0" / "0" / "0" / "0" / "0"),
                                     ["status/c/0/0/0/0/0", "checksum"]),
    "a coordinate chunk deleted": (lambda cube: (cube / "k" / "c" / "0").unlink(), ["'k'", "k/c/0 is missing"]),
    "the status array deleted": (lambda cube: shutil.rmtree(cube / "status"), ["'status' is missing", "status/zarr.json"]),
    "the status metadata deleted": (lambda cube: (cube / "status" / "zarr.json").unlink(), ["'status' is missing"]),
    "the reason array deleted": (lambda cube: shutil.rmtree(cube / "reason"), ["'reason' is missing"]),
    "the manifest deleted": (lambda cube: shutil.rmtree(cube / "integrity"), ["'integrity/crc' is missing"]),
    "the true_k coordinate deleted": (lambda cube: shutil.rmtree(cube / "true_k"), ["'true_k' is missing"]),
}
COMMANDS = {"status": ["status", "{cube}"], "status --verify": ["status", "{cube}", "--verify"],
            "run": ["run", "{config}", "--out", "{cube}", "--workers", "0", "--no-progress"],
            "report": ["report", "{cube}", "--out", "{report}"], "validate": ["validate", "{config}", "--out", "{cube}"]}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_cube_is_exit_2_naming_the_file_on_every_command(cube, damage, command):
    config, path = cube
    harm, fragments = DAMAGE[damage]
    harm(path)
    before = _tree(path)
    args = [arg.format(cube=path, config=config, report=path.parent / "report") for arg in COMMANDS[command]]
    result = cli_in_process(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr, result.stderr
    assert all(fragment in lines[0] for fragment in fragments), (fragments, lines[0])
    assert _tree(path) == before, "a refused command changed the cube"
    assert not (path.parent / "report").exists()


def test_a_flipped_value_byte_is_found_by_reading_values_not_by_counting_them(cube):
    """As docs/explanation/faults.md says: ``report`` (which reads every value) and ``status --verify`` exit 2 naming the chunk;
    plain ``status`` and ``run`` read the status, coordinates and baseline, not every value chunk."""
    config, path = cube
    _flip_a_byte(path / "lange" / "c" / "0" / "1" / "0" / "0" / "0")
    before = _tree(path)
    for args in (["status", str(path), "--verify"], ["report", str(path), "--out", str(path.parent / "r")]):
        _one_error_line(cli_in_process(*args), "lange/c/0/1/0/0/0", "checksum")
    counted = cli_in_process("status", str(path), "--json")
    assert counted.returncode == 0 and json.loads(counted.stdout)["ok"] == 2 * CELLS_PER_N
    assert cli_in_process("run", str(config), "--out", str(path), "--workers", "0", "--no-progress").returncode == 0
    assert _tree(path) == before


# --- a lost baseline --------------------------------------------------------------------------------------------

LOSSES: dict[str, tuple[Callable[[Path], None], str, int]] = {
    "the baseline array deleted": (lambda cube: shutil.rmtree(cube / "lange_random"), "is missing", 2 * CELLS_PER_N),
    "the baseline chunk of n = 80 deleted": (lambda cube: (cube / "lange_random" / "c" / "1" / "0").unlink(),
                                             "is lost at n = 80", CELLS_PER_N),
}


@pytest.mark.parametrize("loss", LOSSES)
def test_a_lost_baseline_makes_its_criterion_pending_and_run_restores_it_bit_for_bit(cube, computed, loss):
    config, path = cube
    harm, where, lost = LOSSES[loss]
    harm(path)
    damaged = _tree(path)
    status = cli_in_process("status", str(path), "--json")
    assert status.returncode == 0, status.stderr
    counts = json.loads(status.stdout)
    assert (counts["pending"], counts["ok"]) == (lost, 2 * CELLS_PER_N - lost)
    for text in (status.stderr, cli_in_process("status", str(path), "--verify").stderr):
        assert f"the random-labelling baseline lange_random that lange is divided by {where}" in text, text
        assert "'ordercube run' computes the baseline again (not the cells)" in text
    report = cli_in_process("report", str(path), "--out", str(path.parent / "report"))
    assert report.returncode == 0 and f"lange_random that lange is divided by {where}" in report.stderr
    assert "'ordercube run'" in report.stderr and "Traceback" not in report.stderr
    planned = cli_in_process("validate", str(config), "--out", str(path))  # plans what run does: no cell to compute
    assert planned.returncode == 0 and f"cells: {2 * CELLS_PER_N} planned, 0 to compute" in planned.stdout, planned.stdout
    assert _tree(path) == damaged, "status, report and validate changed the cube"
    run = cli_in_process("run", str(config), "--out", str(path), "--workers", "0", "--no-progress")
    assert run.returncode == 0, run.stderr
    assert "computed the random-labelling baseline lange_random at" in run.stdout
    assert "nothing to compute" in run.stdout  # the cells are kept, not computed again
    assert _tree(path) == _tree(computed[1]), "the restored cube differs from the one computed"
    assert json.loads(cli_in_process("status", str(path), "--json").stdout)["ok"] == 2 * CELLS_PER_N


def test_the_restored_baseline_is_the_random_labelling_disagreement_of_its_own_stream(computed):
    """Roth et al. (2002), eq. 5's denominator, recomputed independently from the cube's seed and draws."""
    _, path = computed
    stored = np.asarray(zarr.open_array(path / "lange_random", mode="r")[:])
    for i, n in enumerate(CONFIG["n"]):
        for j, k in enumerate(CONFIG["k"]):
            expected = random_labeling_disagreement(n // 2, k, stream(CONFIG["seed"], Purpose.BASELINE, n, k), draws=200)
            assert stored[i, j] == expected
            assert 0 < expected < 1 - 1 / k  # below its asymptote for finite n (Roth et al. 2002, section 2)


# --- the figure helper ------------------------------------------------------------------------------------------

HELPER_SCRIPT = """
import os, signal, time
from ordercube.pipeline.report.figures import Helper
from ordercube.pipeline.system.interrupts import on_signal
signal.signal(signal.SIGINT, on_signal)  # the CLI's handlers, which a forked helper used to inherit
signal.signal(signal.SIGTERM, on_signal)
helper = Helper.start()
os.kill(helper.process.pid, signal.SIGINT)  # a Ctrl-C reaches the whole process group: the report's to handle
time.sleep(0.5)
alive = helper.process.is_alive()
helper.stop(now=True)
print(alive, helper.process.exitcode)
"""


@pytest.mark.timeout(60)
def test_the_figure_helper_ends_without_a_word_when_a_report_stops_early():
    """In a fresh process, as ``ordercube report`` starts it (the helper needs a process with one thread)."""
    result = subprocess.run([sys.executable, "-c", HELPER_SCRIPT], capture_output=True, text=True, timeout=50,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", str(-signal.SIGTERM)], result.stdout  # alive after Ctrl-C; ended by SIGTERM
    assert result.stderr == "", result.stderr


@pytest.mark.timeout(120)
def test_a_report_error_exit_is_one_line_from_every_process(cube):
    """The installed command, helper and all: the refusal is the only line on stderr."""
    _, path = cube
    result = cli("report", str(path), "--out", str(path.parent), timeout=100)
    _one_error_line(result, "--out", "no ordercube report")


@pytest.mark.parametrize("opened", ["path", "dataset"])
def test_the_api_s_report_shares_the_guard(cube, opened):
    import ordercube

    _, path = cube
    source = str(path) if opened == "path" else ordercube.open_cube(path)
    before = _tree(path)
    with pytest.raises(InputError, match=r"^folder: .* inside the cube"):
        ordercube.report(source, path.parent / "link.zarr" / "report")
    with pytest.raises(InputError, match=r"^folder: .* no ordercube report"):
        ordercube.report(source, path.parent)
    assert _tree(path) == before and not (path / "report").exists()


# --- a cube that is not as ordercube wrote it: metadata, attributes, entries --------------------------------------

def _in_both_copies(name: str, edit: Callable[[dict], None]) -> Callable[[Path], None]:
    """``edit`` applied to ``name``'s ``zarr.json`` and to its copy in the root's consolidated metadata."""
    def harm(cube: Path) -> None:
        _edit_metadata(name, edit)(cube)
        root = json.loads((cube / "zarr.json").read_text())
        edit(root["consolidated_metadata"]["metadata"][name])
        (cube / "zarr.json").write_text(json.dumps(root))
    return harm


def _root_attributes(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def harm(cube: Path) -> None:
        root = json.loads((cube / "zarr.json").read_text())
        edit(root["attributes"])
        (cube / "zarr.json").write_text(json.dumps(root))
    return harm


def _swap_k_and_trial(document: dict) -> None:
    """The dimension names swapped, the shape and chunk shape with them, so that every size still agrees."""
    chunks = document["chunk_grid"]["configuration"]["chunk_shape"]
    for listed in (document["dimension_names"], document["shape"], chunks):
        listed[3], listed[4] = listed[4], listed[3]


def _replace(relative: str, make: Callable[[Path], None]) -> Callable[[Path], None]:
    def harm(cube: Path) -> None:
        (cube / relative).unlink()
        make(cube / relative)
    return harm


def _only_a_fifo(cube: Path) -> None:
    shutil.rmtree(cube)
    cube.mkdir()
    os.mkfifo(cube / "zarr.json")


FIRST_CHUNK = "lange/c/0/0/0/0/0"
UNLIKE_ORDERCUBE: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "A3 big-endian bytes codec": (
        _edit_metadata("lange", lambda doc: doc["codecs"].__setitem__(0, {"name": "bytes", "configuration": {"endian": "big"}})),
        ["lange/zarr.json", "codecs", 'endian="big"', 'endian="little"']),
    "A4 the k coordinate made float64": (_in_both_copies("k", lambda doc: doc.update(data_type="float64")),
                                         ["k/zarr.json", "data_type", "float64", "int64"]),
    "B1 a cube folder holding a FIFO": (_only_a_fifo, ["zarr.json is a named pipe (FIFO)"]),
    "B1 zarr.json a link to /dev/zero": (_replace("lange/zarr.json", lambda p: p.symlink_to("/dev/zero")),
                                         ["lange/zarr.json is a symbolic link to /dev/zero"]),
    "B1 a chunk that is a FIFO": (_replace(FIRST_CHUNK, os.mkfifo), [f"{FIRST_CHUNK} is a named pipe (FIFO)"]),
    "B1 a chunk linked to /dev/zero": (_replace(FIRST_CHUNK, lambda p: p.symlink_to("/dev/zero")),
                                       [f"{FIRST_CHUNK} is a symbolic link to /dev/zero"]),
    "B4 an array called a group": (_edit_metadata("lange", lambda doc: doc.update(node_type="group")),
                                   ["lange/zarr.json", "node_type", '"group"', '"array"']),
    "B5 dimension names swapped": (_edit_metadata("lange", _swap_k_and_trial),
                                   ["lange/zarr.json", "dimension_names", '"trial", "k"']),
    "B6 the checksum codec removed": (_edit_metadata("lange", lambda doc: doc["codecs"].pop()),
                                      ["lange/zarr.json", "codecs", "crc32c"]),
    "B7 a chunk truncated to 0 bytes": (lambda cube: (cube / FIRST_CHUNK).write_bytes(b""),
                                        [FIRST_CHUNK, "checksum", "delete those chunk files"]),
    "C3 the format attribute deleted": (_root_attributes(lambda attrs: attrs.pop("ordercube_format")),
                                        ["zarr.json", "'ordercube_format' is missing"]),
    "C4 an unknown format": (_root_attributes(lambda attrs: attrs.update(ordercube_format=99)),
                             ["zarr.json", "'ordercube_format' says 99", "formats 1 to 4"]),
    "C4 the seed attribute edited": (_root_attributes(lambda attrs: attrs.update(ordercube_seed=99)),
                                     ["zarr.json", "'ordercube_seed' says 99", "'ordercube_identity' says 7"]),
    "C4 the stored config's seed edited": (
        _root_attributes(lambda attrs: attrs.update(
            ordercube_config=attrs["ordercube_config"].replace('"seed": 7', '"seed": 8'))),
        ["zarr.json", "'ordercube_config' says 8", "'ordercube_seed' says 7"]),
    "C11 an array's zarr.json deleted": (lambda cube: (cube / "lange" / "zarr.json").unlink(),
                                         ["lange/zarr.json was deleted", "delete the folder"]),
}
EVERY_COMMAND = {**{name: COMMANDS[name] for name in ("status", "status --verify", "run", "report")},
                 "replay": ["replay", "{cube}", "--out", "{report}.csv"]}


@pytest.mark.timeout(120)  # a FIFO or /dev/zero read would block or fill the memory: the walk refuses them first
@pytest.mark.parametrize("command", EVERY_COMMAND)
@pytest.mark.parametrize("kind", UNLIKE_ORDERCUBE)
def test_a_cube_unlike_what_ordercube_writes_is_exit_2_naming_the_file(cube, kind, command):
    """Each of these read wrong (byte-swapped values, an empty k axis), hung, filled the memory or ended in a
    traceback or zarr's raw warning; now: exit 2, one line naming the file and the fix, the cube untouched."""
    config, path = cube
    harm, fragments = UNLIKE_ORDERCUBE[kind]
    harm(path)
    before = _tree(path)
    args = [arg.format(cube=path, config=config, report=path.parent / "report") for arg in EVERY_COMMAND[command]]
    line = _one_error_line(cli_in_process(*args), *fragments)
    assert "restore" in line or "delete" in line or "remove" in line, line
    assert _tree(path) == before, "a refused command changed the cube"
    assert not (path.parent / "report").exists() and not (path.parent / "report.csv").exists()


def test_a_deleted_folder_of_values_after_its_metadata_is_computed_again(cube):
    """The fix the message of a deleted ``zarr.json`` gives (delete the folder) works: its cells are pending, and
    ``run`` computes them again as they were."""
    config, path = cube
    reference = np.asarray(zarr.open_array(str(path / "lange"), mode="r")[:])
    shutil.rmtree(path / "lange")
    assert json.loads(cli_in_process("status", str(path), "--json").stdout)["pending"] == 2 * CELLS_PER_N
    assert cli_in_process("run", str(config), "--out", str(path), "--workers", "0", "--no-progress").returncode == 0
    np.testing.assert_array_equal(np.asarray(zarr.open_array(str(path / "lange"), mode="r")[:]), reference)
