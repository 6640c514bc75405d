"""Matrix, image and graph files: what is not a file, a Boolean matrix's layout, edge ids, image headers, and data
whose rows cannot tell model orders apart are refused (exit 2, one line naming the key); what is read is read right.

Every refusal runs through the CLI in this process (``validate`` or ``run``); where a cube exists it is compared
byte for byte afterwards. The images are real PNG files, the oversized ones written chunk by chunk (IHDR with its
CRC-32, PNG specification section 11.2.2), never a stand-in for Pillow.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from PIL import Image

from conftest import cli_in_process, write_config
from ordercube.pipeline.config.study import load_config
from ordercube.pipeline.errors import ConfigError
from ordercube.pipeline.data.imagefiles import MAX_IMAGE_PIXELS, load_image
from ordercube.pipeline.data.matrixfiles import INT64_MAX, load_boolean_matrix

SVD = {"name": "svd", "algorithm": "boolean_svd", "criteria": ["mtc_matrix"]}
IMAGE_SVD = {"name": "svd", "algorithm": "truncated_svd", "criteria": ["mtc_matrix"]}
GIBBS = {"name": "gibbs", "algorithm": "correlation_gibbs", "params": {"restarts": 1}, "predictor": "graph_transfer",
         "criteria": ["mtc"]}
METHOD = {"boolean_matrix": SVD, "image": IMAGE_SVD, "edge_list": GIBBS}


def config(entry: dict, **overrides) -> dict:
    kind = entry["kind"]
    base = {"name": "trust", "seed": 3, "k": [1, 2], "resamples": 2, "datasets": [{"name": "m", **entry}],
            "methods": [METHOD.get(kind, SVD)]}
    if kind == "edge_list":
        base["n"] = ["all"]
    return {**base, **overrides}


def refused(tmp_path: Path, entry: dict, key: str, *words: str, command: str = "validate") -> str:
    """Exit 2 with one line naming ``key`` and ``words``, no traceback, and nothing written."""
    path = write_config(tmp_path / "bad.yaml", **config(entry))
    out = tmp_path / "bad.zarr"
    args = ("run", str(path), "--out", str(out), "--no-progress") if command == "run" else ("validate", str(path))
    result = cli_in_process(*args, cwd=tmp_path)
    line = result.stderr.strip()
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and len(line.splitlines()) == 1, line
    assert line.startswith(f"error: {key}:"), line
    for word in words:
        assert word in line, (word, line)
    assert not out.exists()
    return line


def blocks(users: int = 12) -> np.ndarray:
    """Users holding one or two of three roles of two permissions each: distinct rows, rank 3."""
    roles = np.kron(np.eye(3, dtype=int), np.ones((1, 2), dtype=int))
    assignment = np.zeros((users, 3), dtype=int)
    assignment[np.arange(users), np.arange(users) % 3] = 1
    assignment[::4, 0] = 1
    return (assignment @ roles > 0).astype(int)


def write_dense(path: Path, X: np.ndarray, *, names: bool = True, header: bool = True) -> Path:
    lines = [(["user"] if names else []) + [f"p{j}" for j in range(X.shape[1])]] if header else []
    lines += [([f"u{i}"] if names else []) + [str(v) for v in row] for i, row in enumerate(X)]
    path.write_text("".join(",".join(line) + "\n" for line in lines))
    return path


def write_edges(path: Path, X: np.ndarray, *, first_id: int = 10) -> Path:
    """X as ``user,permission`` pairs with ids first_id, first_id + 1, ... (so some id exceeds 1)."""
    pairs = [f"{first_id + i},{first_id + j}" for i, j in np.argwhere(X == 1)]
    path.write_text("user,permission\n" + "\n".join(pairs) + "\n")
    return path


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def crafted_png(path: Path, width: int, height: int, *, crc_ok: bool = True) -> Path:
    """A PNG whose IHDR claims ``width x height`` 8-bit grey pixels, followed by one row of image data only."""
    header = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
    if not crc_ok:
        header = header[:-1] + bytes([header[-1] ^ 0xFF])
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + header + chunk(b"IDAT", zlib.compress(b"\0" * 9)) + chunk(b"IEND", b""))
    return path


def grey_png(path: Path, pixels: np.ndarray) -> Path:
    Image.fromarray(pixels.astype(np.uint8)).save(path)
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ----------------------------------------------------------------------------- paths that are not regular files


def _not_a_file(tmp_path: Path, what: str) -> str:
    if what == "fifo":
        os.mkfifo(tmp_path / "input")
    elif what == "folder":
        (tmp_path / "input").mkdir()
    elif what == "loop":
        os.symlink(tmp_path / "loop_b", tmp_path / "input")
        os.symlink(tmp_path / "input", tmp_path / "loop_b")
    else:
        return "/dev/null"
    return "input"


NOT_A_FILE = {"fifo": "named pipe", "folder": "a folder", "device": "a device", "loop": "loop of symbolic links"}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("what", sorted(NOT_A_FILE))
@pytest.mark.parametrize("kind, field", [("boolean_matrix", "path"), ("image", "path"), ("edge_list", "path"),
                                         ("edge_list", "nodes")])
def test_a_path_that_is_not_a_regular_file_exits_2_naming_the_key(tmp_path, what, kind, field):
    entry = {"kind": kind, "path": _not_a_file(tmp_path, what)}
    if field == "nodes":
        (tmp_path / "edges.csv").write_text("source,target,weight\na,b,1\nb,c,-1\n")
        entry = {"kind": kind, "path": "edges.csv", "nodes": entry["path"]}
    refused(tmp_path, entry, f"datasets[0].{field}", NOT_A_FILE[what])


@pytest.mark.timeout(120)
def test_a_refused_input_leaves_the_cube_byte_identical(tmp_path):
    write_dense(tmp_path / "m.csv", blocks())
    path = write_config(tmp_path / "c.yaml", **config({"kind": "boolean_matrix", "path": "m.csv"}))
    cube = tmp_path / "c.zarr"
    assert cli_in_process("run", str(path), "--out", str(cube), "--no-progress", cwd=tmp_path).returncode == 0
    before = snapshot(cube)
    (tmp_path / "m.csv").unlink()
    os.mkfifo(tmp_path / "m.csv")
    result = cli_in_process("run", str(path), "--out", str(cube), "--no-progress", cwd=tmp_path)
    assert result.returncode == 2 and "datasets[0].path" in result.stderr and "named pipe" in result.stderr
    assert snapshot(cube) == before


# ------------------------------------------------------------------------------------- a Boolean matrix's layout


AMBIGUOUS = {
    "with a header": "a,b\n" + "1,0\n0,1\n1,1\n0,0\n",
    "without a header": "1,0\n0,1\n1,1\n0,0\n",
    "written as floats": "a,b\n1.0,0.0\n0.0,1.0\n1.0,1.0\n",
}


@pytest.mark.parametrize("text", AMBIGUOUS.values(), ids=AMBIGUOUS)
def test_a_two_column_file_of_0_1_values_needs_its_format(tmp_path, text):
    (tmp_path / "m.csv").write_text(text)
    refused(tmp_path, {"kind": "boolean_matrix", "path": "m.csv"}, "datasets[0].format", "two columns of 0/1 values",
            "reads as a dense", "edge list", "format: dense or format: edges")


@pytest.mark.parametrize("entry, key, words", [
    ({"kind": "boolean_matrix", "format": "csv"}, "datasets[0].format", ["expected edges or dense", "'csv'"]),
    ({"kind": "boolean_matrix", "format": 2}, "datasets[0].format", ["expected edges or dense"]),
    ({"kind": "boolean_matrix", "format": "edges"}, "datasets[0].format", ["format edges reads two columns", "has 7"]),
    ({"kind": "image", "format": "dense"}, "datasets[0].format", ["only a boolean_matrix"]),
    ({"kind": "file", "format": "dense", "n": [10]}, "datasets[0].format", ["only a boolean_matrix"]),
], ids=["unknown format", "not a string", "edges on a dense table", "format on an image", "format on a table"])
def test_a_format_that_cannot_apply_is_refused(tmp_path, entry, key, words):
    write_dense(tmp_path / "m.csv", blocks())
    refused(tmp_path, {**entry, "path": "m.csv"}, key, *words)


def test_a_two_column_table_of_row_names_is_an_edge_list_until_format_says_dense(tmp_path):
    (tmp_path / "m.csv").write_text("user,p0\nalice,1\nbob,0\ncarol,1\n")
    refused(tmp_path, {"kind": "boolean_matrix", "path": "m.csv"}, "datasets[0].path", "line 2",
            "the id 'alice' is not an integer", "set format: dense")
    matrix = load_boolean_matrix(str(tmp_path / "m.csv"), "k", "dense")
    assert np.array_equal(matrix.values, [[1], [0], [1]]) and matrix.reading == {"format": "dense"}


def test_a_dense_40_x_2_matrix_is_read_as_such_with_format_dense(tmp_path):
    X = (np.random.default_rng(5).random((40, 2)) < 0.5).astype(int)
    X[:3] = [[1, 0], [0, 1], [1, 1]]  # rows differ
    write_dense(tmp_path / "m.csv", X, names=False)
    spec = load_config(write_config(tmp_path / "c.yaml", **config({"kind": "boolean_matrix", "path": "m.csv",
                                                                     "format": "dense"}))).datasets[0]
    assert spec.data.shape == (40, 2) and np.array_equal(spec.data, X)
    assert spec.read.startswith(f"40 rows x 2 columns, {X.sum()} ones, dense 0/1 (format: dense, given)")
    # earlier versions read this file as a 2 x 2 edge list: the dense reading is another identity
    assert spec.identity["format"] == "dense" and spec.identity["sha256"] == hashlib.sha256(
        (tmp_path / "m.csv").read_bytes()).hexdigest()


def test_an_edge_list_reads_the_same_given_or_inferred_and_keeps_its_identity(tmp_path):
    X = blocks()
    write_edges(tmp_path / "e.csv", X)
    specs = {}
    for layout in ("given", "inferred"):
        entry = {"kind": "boolean_matrix", "path": "e.csv", **({"format": "edges"} if layout == "given" else {})}
        specs[layout] = load_config(write_config(tmp_path / f"{layout}.yaml", **config(entry))).datasets[0]
    assert np.array_equal(specs["given"].data, X) and np.array_equal(specs["inferred"].data, X)
    assert specs["given"].identity == specs["inferred"].identity
    assert set(specs["given"].identity) == {"kind", "sha256", "params"}  # as before the option existed
    assert "edge list (format: edges, given)" in specs["given"].read
    assert "edge list (format: edges, inferred: two columns of ids, not all 0 or 1)" in specs["inferred"].read


def test_a_dense_table_reads_the_same_given_or_inferred_and_the_same_as_its_edge_list(tmp_path):
    X = blocks()
    write_dense(tmp_path / "m.csv", X)
    write_edges(tmp_path / "e.csv", X)
    dense = load_boolean_matrix(str(tmp_path / "m.csv"), "k", "dense")
    inferred = load_boolean_matrix(str(tmp_path / "m.csv"), "k")
    edges = load_boolean_matrix(str(tmp_path / "e.csv"), "k")
    assert np.array_equal(dense.values, X) and np.array_equal(inferred.values, X) and np.array_equal(edges.values, X)
    assert dense.reading == inferred.reading == edges.reading == {}
    assert "(format: dense, inferred: 7 columns, an edge list has 2)" in inferred.read


@pytest.mark.timeout(120)
def test_a_cube_made_without_format_resumes_with_it(tmp_path):
    write_edges(tmp_path / "e.csv", blocks())
    entry = {"kind": "boolean_matrix", "path": "e.csv"}
    cube = tmp_path / "c.zarr"
    first = write_config(tmp_path / "first.yaml", **config(entry))
    later = write_config(tmp_path / "later.yaml", **config({**entry, "format": "edges"}))
    assert load_config(first).fingerprint == load_config(later).fingerprint
    assert cli_in_process("run", str(first), "--out", str(cube), "--no-progress", cwd=tmp_path).returncode == 0
    chunks = {name: data for name, data in snapshot(cube).items() if name != "zarr.json"}
    result = cli_in_process("run", str(later), "--out", str(cube), "--no-progress", cwd=tmp_path)
    assert result.returncode == 0 and "nothing to compute: all 4 planned cells" in result.stdout, result.stderr
    assert "edge list (format: edges, given)" in result.stdout
    assert {name: data for name, data in snapshot(cube).items() if name != "zarr.json"} == chunks


# ------------------------------------------------------------------------------------------------ edge-list ids


@pytest.mark.parametrize("line, words", [
    ("99999999999999999999,3", ["the id 99999999999999999999 exceeds", "2^63 - 1"]),
    (f"{INT64_MAX + 1},3", [f"the id {INT64_MAX + 1} exceeds"]),
    ("1" * 5000 + ",3", ["exceeds the largest id"]),
    ("3,-4", ["the id '-4' is negative", "non-negative"]),
    ("1.5,3", ["the id '1.5' is not an integer"]),
    ("1e3,3", ["the id '1e3' is not an integer"]),
    ("1_000,3", ["the id '1_000' is not an integer"]),
    ("+3,3", ["the id '+3' is not an integer"]),
    ("x7,3", ["the id 'x7' is not an integer"]),
    ("3,4,5", ["expected two non-negative integer ids"]),
    ("12,13,14\n15", ["expected two non-negative integer ids", "['12', '13', '14']"]),
], ids=["20 digits", "2^63", "5000 digits", "negative", "decimal", "exponent", "underscore", "sign", "text", "3 cells",
        "3 + 1 cells"])
def test_an_edge_id_outside_0_to_2_63_or_not_an_integer_names_the_file_and_line(tmp_path, line, words):
    (tmp_path / "e.csv").write_text(f"user,permission\n10,11\n\n{line}\n")
    refused(tmp_path, {"kind": "boolean_matrix", "path": "e.csv", "format": "edges"}, "datasets[0].path",
            "e.csv line 4", *words)  # line 4 of the file: the blank line 3 is counted


def test_the_largest_int64_id_is_read(tmp_path):
    (tmp_path / "e.csv").write_text(f"user,permission\n{INT64_MAX},{INT64_MAX}\n{INT64_MAX},5\n7,5\n")
    matrix = load_boolean_matrix(str(tmp_path / "e.csv"), "k", "edges")
    assert np.array_equal(matrix.values, [[1, 0], [1, 1]])  # users 7, 2^63 - 1; permissions 5, 2^63 - 1


def _text_entry(tmp_path: Path, name: str, text: str) -> dict:
    (tmp_path / name).write_text(text)
    return {"kind": "boolean_matrix", "path": name}


def _graph_with_nodes(tmp_path: Path, edges: str, nodes: str) -> dict:
    (tmp_path / "n.csv").write_text(nodes)
    return {**_graph_entry(tmp_path, edges), "nodes": "n.csv"}


@pytest.mark.parametrize("make, key, words", [
    (lambda t: _graph_entry(t, "a,b,1\nb,c,0,5\n"), "path", ["g.csv line 3", "got 4 cells", "decimal point"]),
    (lambda t: _graph_entry(t, "a,b,1\n ,c,-1\n"), "path", ["g.csv line 3", "without a node name"]),
    (lambda t: _graph_with_nodes(t, "a,b,1\nb,c,-1\n", "node\na\nb\n\n,x\nc\n"), "nodes",
     ["n.csv line 5", "a node without a name"]),
    (lambda t: _text_entry(t, "typo.csv", "1,0,1\n0,1,1\nI,0,0\n1,1,0\n"), "path",
     ["typo.csv line 3", "holds 'I'", "cannot be told apart"]),
], ids=["decimal comma in a weight", "edge without a node", "node without a name", "typo in an unnamed table"])
def test_a_line_that_would_be_misread_is_refused(tmp_path, make, key, words):
    refused(tmp_path, make(tmp_path), f"datasets[0].{key}", *words)


# ------------------------------------------------------------------------------------------------ image headers


@pytest.mark.parametrize("width, height, words", [
    (100_000, 100_000, ["100000 x 100000 = 10000000000 pixels", f"above the {MAX_IMAGE_PIXELS} (4096 x 4096)"]),
    (4097, 4096, [f"= {4097 * 4096} pixels, above"]),
    (2**32 - 1, 2**32 - 1, ["pixels, above"]),
    (0, 16, ["0 x 16 pixels: an empty image"]),
])
def test_a_png_header_beyond_the_pixel_limit_is_refused_before_decoding(tmp_path, width, height, words):
    crafted_png(tmp_path / "huge.png", width, height)
    refused(tmp_path, {"kind": "image", "path": "huge.png"}, "datasets[0].path", *words)


@pytest.mark.parametrize("make, words", [
    (lambda p: crafted_png(p, 16, 16, crc_ok=False), ["fails its CRC"]),
    (lambda p: crafted_png(p, 4096, 4096), ["not a readable PNG"]),  # at the limit: decoded, and the data is short
    (lambda p: p.write_bytes(b"GIF89a" + bytes(20)), ["not a PNG", "signature"]),
    (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"tEXt", b"a\0b")), ["no IHDR header"]),
    (lambda p: p.write_bytes(grey_png(p, np.arange(256).reshape(16, 16)).read_bytes()[:50]), ["not a readable PNG", "truncated"]),
], ids=["bad CRC", "limit, short data", "GIF bytes", "no IHDR", "truncated"])
def test_a_png_that_is_not_one_or_is_damaged_is_refused(tmp_path, make, words):
    make(tmp_path / "bad.png")
    refused(tmp_path, {"kind": "image", "path": "bad.png"}, "datasets[0].path", *words)


def test_a_csv_image_beyond_the_pixel_limit_is_refused_before_parsing(tmp_path):
    (tmp_path / "wide.csv").write_text("0," * MAX_IMAGE_PIXELS + "0\n")
    refused(tmp_path, {"kind": "image", "path": "wide.csv"}, "datasets[0].path",
            f"1 = {MAX_IMAGE_PIXELS + 1} pixels, above")


@pytest.mark.parametrize("limit, words", [(200, ["decompression-bomb guard", "could be decompression bomb"]),
                                          (100, ["decompression-bomb guard", "exceeds limit"])],
                         ids=["Pillow's warning", "Pillow's error"])
def test_pillows_own_bomb_guard_is_a_refusal_not_a_warning_or_a_traceback(tmp_path, monkeypatch, limit, words):
    """Pillow warns above ``Image.MAX_IMAGE_PIXELS`` and raises above twice that; a program that lowers the setting
    (it is Pillow's, process-wide) meets both on a 16 x 16 image."""
    grey_png(tmp_path / "g.png", np.arange(256).reshape(16, 16))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", limit)
    with pytest.raises(ValueError, match="datasets\\[0\\].path") as error:
        load_image(str(tmp_path / "g.png"), "datasets[0].path")
    for word in words:
        assert word in str(error.value)


def test_the_image_digest_is_the_sha256_of_its_bytes(tmp_path):
    path = grey_png(tmp_path / "g.png", np.arange(256).reshape(16, 16))
    image = load_image(str(path), "k")
    assert image.sha256 == hashlib.sha256(path.read_bytes()).hexdigest() and image.pixels[15, 15] == 255


# ------------------------------------------------------------------------------------------------ degenerate data


def _dense_entry(tmp_path: Path, X: np.ndarray, **extra) -> dict:
    write_dense(tmp_path / "m.csv", X)
    return {"kind": "boolean_matrix", "path": "m.csv", **extra}


def _edges_entry(tmp_path: Path, text: str) -> dict:
    (tmp_path / "e.csv").write_text(text)
    return {"kind": "boolean_matrix", "path": "e.csv", "format": "edges"}


def _image_entry(tmp_path: Path, pixels: np.ndarray, **params) -> dict:
    grey_png(tmp_path / "g.png", pixels)
    return {"kind": "image", "path": "g.png", "params": params}


def _graph_entry(tmp_path: Path, text: str) -> dict:
    (tmp_path / "g.csv").write_text("source,target,weight\n" + text)
    return {"kind": "edge_list", "path": "g.csv"}


STRIPES = np.tile(np.arange(4) * 60, (16, 4))  # every 4 x 4 tile the same patch, the image not constant
ONE_PERMISSION_SHARED = np.hstack([np.ones((12, 1), dtype=int), np.eye(12, 6, dtype=int)])


@pytest.mark.parametrize("make, key, words", [
    (lambda t: _dense_entry(t, np.zeros((12, 6), dtype=int)), "path", ["holds no 1", "12 x 6 zeros"]),
    (lambda t: _dense_entry(t, np.ones((12, 6), dtype=int)), "path", ["every row", "all ones"]),
    (lambda t: _dense_entry(t, np.tile([1, 0, 1, 1, 0, 0], (12, 1))), "path", ["every row", "the same 3 of 6 columns"]),
    (lambda t: _edges_entry(t, "user,permission\n" + "".join(f"{u},{p}\n" for u in (10, 11, 12) for p in (20, 21))),
     "path", ["every row", "all ones"]),
    (lambda t: _dense_entry(t, ONE_PERMISSION_SHARED, params={"columns": 1}), "params.columns",
     ["the 1 most frequent columns", "all ones"]),
    (lambda t: _image_entry(t, np.full((16, 16), 128), patch=4), "path", ["every pixel", "is 128", "constant image"]),
    (lambda t: _image_entry(t, STRIPES, patch=4), "path", ["all 16 tiles", "the same 4 x 4 patch"]),
    (lambda t: _graph_entry(t, "a,b,0\nb,c,0\n"), "path", ["no edge of non-zero weight"]),
    (lambda t: _graph_entry(t, "a,b,1\nb,c,0.5\n"), "path", ["2 positive edges and no negative", "k = 1", "2s - 1"]),
    (lambda t: _graph_entry(t, "a,b,-1\nb,c,-0.5\n"), "path", ["2 negative edges and no positive", "colouring"]),
], ids=["no 1", "all ones", "one row repeated", "edges: every user the same", "columns collapse it",
        "constant image", "identical tiles", "graph without edges", "graph: positive only", "graph: negative only"])
def test_data_whose_rows_cannot_tell_orders_apart_is_refused(tmp_path, make, key, words):
    refused(tmp_path, make(tmp_path), f"datasets[0].{key}", *words, command="run")


def test_the_same_stripes_at_random_corners_and_a_one_role_matrix_with_distinct_rows_are_read(tmp_path):
    spec = load_config(write_config(tmp_path / "i.yaml", **config(_image_entry(
        tmp_path, STRIPES, patch=4, placement="random"), k=[1]))).datasets[0]
    assert spec.data.shape == (16, 16)
    # one role held by some users only: rank 1 but rows that differ (the role, or nothing)
    X = np.zeros((12, 6), dtype=int)
    X[::2, :3] = 1
    spec = load_config(write_config(tmp_path / "b.yaml", **config(_dense_entry(tmp_path, X), k=[1]))).datasets[0]
    assert int(spec.data.sum()) == 18


def test_a_graph_file_is_read_once_with_the_same_digest_as_before(tmp_path):
    (tmp_path / "g.csv").write_text("source,target,weight\na,b,1\n\nb,c,-1\n")
    (tmp_path / "n.csv").write_text("node,group\na,x\nb,x\nc,y\n")
    from ordercube.pipeline.data.graphfiles import load_edge_list

    graph = load_edge_list(str(tmp_path / "g.csv"), str(tmp_path / "n.csv"), "datasets[0]")
    expected = hashlib.sha256((tmp_path / "g.csv").read_bytes())
    expected.update(b"|nodes|" + (tmp_path / "n.csv").read_bytes())
    assert graph.sha256 == expected.hexdigest()
    assert np.array_equal(graph.weights, [[0, 1, 0], [1, 0, -1], [0, -1, 0]]) and graph.classes == ("x", "y")


# ------------------------------------------------------------------------------------------------ any file at all


TOKENS = ["0", "1", "1", "0", "2", "17", "-1", "1.5", "x", "", " 3 ", "1e3", "1_0", "99999999999999999999", "nan"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@st.composite
def tables(draw) -> list[list[str]]:
    """Mostly rectangular tables of mostly 0/1 cells, sometimes a ragged row or a token that is not 0/1."""
    width = draw(st.sampled_from([1, 2, 2, 2, 3, 4]))  # two columns: where the layouts meet
    zero_one = st.sampled_from(["0", "1"])
    cell = st.one_of(zero_one, zero_one, zero_one, st.sampled_from(TOKENS))
    rows = draw(st.lists(st.lists(cell, min_size=width, max_size=width), min_size=1, max_size=6))
    if draw(st.booleans()) and draw(st.booleans()):
        rows.append(draw(st.lists(cell, min_size=1, max_size=4)))
    return rows


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cells=tables(), header=st.booleans(), layout=st.sampled_from([None, "edges", "dense"]))
@example(cells=[["0", "1"], ["1", "0"]], header=False, layout=None)  # the two readings of one file
@example(cells=[["0", "1", "1"], ["0"]], header=True, layout=None)  # ragged rows of 2 x 2 cells in all
def test_any_small_csv_is_read_as_0_1_with_differing_rows_or_refused_with_a_config_error(tmp_path, cells, header,
                                                                                       layout):
    """Whatever the cells, a Boolean-matrix file gives a 0/1 matrix whose rows are not all the same, read in the
    layout given or said to be inferred, or a ``ConfigError`` under the dataset's key: never another exception,
    a warning, or a two-column file of 0/1 values read without its format."""
    (tmp_path / "m.csv").write_text(("a,b\n" if header else "") + "".join(",".join(row) + "\n" for row in cells))
    entry = {"kind": "boolean_matrix", "path": "m.csv", **({"format": layout} if layout else {})}
    try:
        spec = load_config(write_config(tmp_path / "c.yaml", **config(entry, k=[1]))).datasets[0]
    except ConfigError as error:
        assert str(error).startswith(("datasets[0].path: ", "datasets[0].format: ", "datasets[0].n[0]: ", "k: ")), error
        return
    values = spec.data
    assert set(np.unique(values)) <= {0.0, 1.0} and not (values == values[0]).all()
    assert f"(format: {layout}, given)" in spec.read if layout else "inferred" in spec.read
    if layout is None and "ones, edge list" in spec.read:  # inferred edges: some id is beyond 0 and 1
        assert any(int(cell) > 1 for row in cells for cell in row if cell.strip().isdigit())


def test_the_identical_tiles_check_agrees_with_the_tiling_the_model_reads():
    """``check_image_structure`` compares tiles through a view; ``patches.tile_patches`` builds the rows the truncated
    SVD is fitted on: on 300 random periodic images, half with one pixel changed, both say the same."""
    from ordercube.pipeline.data.imagefiles import check_image_structure
    from ordercube.tasks.datasets.patches import tile_patches

    rng = np.random.default_rng(0)
    for _ in range(300):
        patch = int(rng.integers(1, 5))
        height, width = patch * int(rng.integers(1, 5)), patch * int(rng.integers(1, 5))
        image = np.tile(rng.integers(0, 3, (patch, patch)), (height // patch, width // patch)).astype(float)
        if rng.random() < 0.5:
            image[rng.integers(height), rng.integers(width)] += 1
        tiles = tile_patches(image, patch)
        degenerate = bool((tiles == tiles[0]).all())
        try:
            check_image_structure(image, patch, "tiling", "img", "k")
            refused_here = False
        except ConfigError:
            refused_here = True
        assert refused_here == degenerate, (image, patch)
