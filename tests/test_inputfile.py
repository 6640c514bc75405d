"""ordercube.pipeline.files.inputfile: every input path is a regular file read once, within a bound, or refused naming its key."""

from __future__ import annotations

import hashlib
import os

import pytest

import ordercube

from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.files.inputfile import MAX_INPUT_ENV, read_input


def _refusal(path, key="datasets[0].path") -> str:
    with pytest.raises(ConfigError) as caught:
        read_input(path, key, expected="a .csv file")
    message = str(caught.value)
    assert message.startswith(f"{key}: '{path}' ") and "; give " in message
    return message


def test_a_regular_file_is_read_whole_with_its_digest(tmp_path):
    path = tmp_path / "x.csv"
    path.write_bytes(b"\xef\xbb\xbfa,b\n1,2\n")
    read = read_input(path, "k", expected="a file")
    assert read.data == path.read_bytes()
    assert read.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert read.text("k").read() == "a,b\n1,2\n"  # the byte-order mark dropped


def test_a_symbolic_link_to_a_file_is_followed(tmp_path):
    (tmp_path / "x.csv").write_text("a\n1\n")
    (tmp_path / "link.csv").symlink_to(tmp_path / "x.csv")
    assert read_input(tmp_path / "link.csv", "k", expected="a file").data == b"a\n1\n"


# What a path can be besides a regular file: how to make it, and what the refusal says it is.
NOT_REGULAR = {
    "folder": (lambda p: p.mkdir(), "is a folder"),
    "fifo": (lambda p: os.mkfifo(p), "is a named pipe (FIFO)"),
    "device": (lambda p: p.symlink_to("/dev/zero"), "is a device"),
    "loop": (lambda p: (p.symlink_to(p.with_name("b")), p.with_name("b").symlink_to(p)), "loop of symbolic links"),
    "missing": (lambda p: None, "does not exist"),
}
# A missing config is said by the CLI's own check, which names the file.
CONFIG_NOT_REGULAR = {**NOT_REGULAR, "missing": (NOT_REGULAR["missing"][0], "file '{path}' does not exist")}


@pytest.mark.timeout(20)
@pytest.mark.parametrize("make, words", NOT_REGULAR.values(), ids=NOT_REGULAR.keys())
def test_what_is_not_a_regular_file_is_refused_before_a_byte_is_read(tmp_path, make, words):
    path = tmp_path / "data.csv"
    make(path)
    message = _refusal(path)
    assert words in message and message.endswith("give the path of a .csv file")


def test_a_file_above_the_bound_is_refused_with_its_size(tmp_path, monkeypatch):
    path = tmp_path / "big.csv"
    path.write_bytes(b"0" * 101)
    monkeypatch.setenv(MAX_INPUT_ENV, "100")
    message = _refusal(path)
    assert "holds 101 bytes, above the 100 read at most" in message and MAX_INPUT_ENV in message
    monkeypatch.setenv(MAX_INPUT_ENV, "101")
    assert len(read_input(path, "k", expected="a file").data) == 101


def test_text_that_is_not_utf8_is_refused_naming_the_byte(tmp_path):
    path = tmp_path / "latin.csv"
    path.write_bytes(b"a\n\xe9\n")
    with pytest.raises(ConfigError, match=r"^k: .* is not UTF-8 text \(byte 2"):
        read_input(path, "k", expected="a file").text("k")


def test_a_small_file_is_read_without_allocating_the_bound(tmp_path):
    import tracemalloc

    path = tmp_path / "x.csv"
    path.write_bytes(b"a,b\n" + b"1,2\n" * 1000)
    tracemalloc.start()
    try:
        read = read_input(path, "k", expected="a file")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert read.data == path.read_bytes()
    assert peak < 1_000_000, f"reading 4 kB allocated {peak} bytes at the peak"


def test_a_file_whose_size_is_not_reported_is_read_whole_within_the_bound(tmp_path, monkeypatch):
    from ordercube.pipeline.files import inputfile

    path = tmp_path / "x.csv"
    path.write_bytes(bytes(range(256)) * 40)
    monkeypatch.setattr(inputfile, "READ_BLOCK", 100)
    with path.open("rb") as handle:  # as /proc files report 0 bytes
        assert inputfile._read_at_most(handle, 10**6, expected_size=0) == path.read_bytes()
    with path.open("rb") as handle:  # a bound below the content: one byte past it is read, so it is refused
        assert len(inputfile._read_at_most(handle, 1000, expected_size=0)) == 1001


@pytest.mark.timeout(60)
@pytest.mark.parametrize("make, words", CONFIG_NOT_REGULAR.values(), ids=CONFIG_NOT_REGULAR.keys())
def test_a_config_path_that_is_not_a_regular_file_exits_2_naming_it(tmp_path, make, words):
    from conftest import cli_in_process

    path = tmp_path / "c.yaml"
    make(path)
    for command in (["validate", str(path)], ["run", str(path), "--out", str(tmp_path / "cube.zarr")]):
        result = cli_in_process(*command)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and len(lines) == 1, result.stderr
        assert lines[0].startswith("error: CONFIG: ") and words.format(path=path) in lines[0], lines[0]
    with pytest.raises(ConfigError) as caught:  # the API reads its config path through the same function
        ordercube.validate(path)
    assert str(caught.value).startswith("config: ") and words.format(path=path).replace("file ", "") in str(caught.value)
    assert not (tmp_path / "cube.zarr").exists()
