"""The reader registry: a ``kind: file`` dataset is read by the reader its ``reader:``, its suffix or its first
bytes choose; Parquet/Arrow, Matrix Market and AnnData ``.h5ad`` files give the values written into them, their
bytes are the data's identity, and labels, row names, preprocessing, ``n: [all]`` and the row bound apply as
to a CSV. Hand-written files whose values are known, and round trips through pandas and SciPy."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.io
import scipy.sparse

from conftest import cli_in_process, write_config
from ordercube.pipeline.config.study import load_config, parse_config
from ordercube.pipeline.errors import ConfigError

HAS_PYARROW = importlib.util.find_spec("pyarrow") is not None
HAS_H5PY = importlib.util.find_spec("h5py") is not None
needs_pyarrow = pytest.mark.skipif(not HAS_PYARROW, reason="pyarrow is not installed (pip install 'ordercube[parquet]')")
needs_h5py = pytest.mark.skipif(not HAS_H5PY, reason="h5py is not installed (pip install 'ordercube[anndata]')")
METHODS = [{"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["lange"]}]


def config(*datasets: dict, k=(2,)) -> dict:
    return {"name": "r", "seed": 1, "k": list(k), "resamples": 2, "datasets": list(datasets), "methods": METHODS}


def spec_of(folder: Path, entry: dict, **overrides):
    path = write_config(folder / "c.yaml", **{**config({"name": "d", "kind": "file", **entry}), **overrides})
    return load_config(path).datasets[0]


def refused(folder: Path, entry: dict) -> str:
    """The one-line error of ``ordercube validate`` on a config of this dataset (exit code 2)."""
    path = write_config(folder / "bad.yaml", **config({"name": "d", "kind": "file", **entry}))
    result = cli_in_process("validate", str(path), cwd=folder)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr.strip()


# the registry


def test_every_format_of_ordercube_is_registered_with_what_it_opens():
    from ordercube.pipeline.data import formats  # noqa: F401
    from ordercube.tasks.readers import READERS, guess_reader

    assert {"csv", "npy", "parquet", "arrow", "mtx", "h5ad", "distances", "edge_list", "image",
            "boolean_matrix"} <= set(READERS)
    assert guess_reader(".CSV", b"a,b\n").name == "csv"  # suffixes match whatever their case
    assert guess_reader(".bin", b"\x93NUMPY\x01\x00").name == "npy"  # by the first bytes when no suffix claims it
    assert guess_reader(".dat", b"PAR1\x15\x04").name == "parquet"
    assert guess_reader("", b"%%MatrixMarket matrix coordinate real general\n").name == "mtx"
    assert guess_reader(".data", b"\x89HDF\r\n\x1a\n\x00").name == "h5ad"
    assert guess_reader(".txt", b"hello") is None


def test_an_unknown_suffix_names_the_key_the_file_and_the_registered_readers(tmp_path):
    (tmp_path / "x.txt").write_text("1,2\n3,4\n")
    line = refused(tmp_path, {"path": "x.txt"})
    assert line.startswith("error: datasets[0].path: no registered reader opens")
    assert "x.txt" in line and "'.txt'" in line and "reader: NAME" in line
    for listed in ("csv (.csv)", "npy (.npy)", "parquet (.parquet, .pq)", "mtx (.mtx)", "h5ad (.h5ad)"):
        assert listed in line


def test_an_unknown_reader_name_lists_the_registered_ones(tmp_path):
    (tmp_path / "x.csv").write_text("a,b\n1,2\n3,4\n5,6\n7,9\n")
    line = refused(tmp_path, {"path": "x.csv", "reader": "excel"})
    assert line.startswith("error: datasets[0].reader: no reader is registered as 'excel'") and "csv (.csv)" in line


def test_a_named_reader_reads_a_file_whatever_its_suffix(tmp_path):
    np.save(tmp_path / "x.npy", np.array([[1.0, 2.0], [3.0, 5.0], [8.0, 13.0], [21.0, 34.0]] * 2))
    (tmp_path / "x.npy").rename(tmp_path / "x.bin")
    by_sniff = spec_of(tmp_path, {"path": "x.bin"})
    (tmp_path / "y.txt").write_text("a,b\n" + "1,2\n3,5\n8,13\n21,34\n" * 2)
    by_name = spec_of(tmp_path, {"path": "y.txt", "reader": "csv"})
    assert np.array_equal(by_sniff.data, by_name.data) and by_sniff.data[3, 1] == 34.0
    assert "reader" not in by_sniff.identity and "reader" not in by_name.identity  # the first readers' identity kept


def test_a_reader_option_on_a_file_of_another_reader_is_refused(tmp_path):
    (tmp_path / "x.csv").write_text("a,b\n1,2\n3,4\n5,6\n7,9\n")
    line = refused(tmp_path, {"path": "x.csv", "layer": "counts"})
    assert line.startswith("error: datasets[0].layer: a file read by the csv reader takes no 'layer'")
    assert "h5ad" in line
    line = refused(tmp_path, {"path": "x.csv", "reader": "csv", "obsm": "X_pca"})
    assert line.startswith("error: datasets[0].obsm:")


# Parquet and Arrow

FRAME = pd.DataFrame({"height": [1.0, 2.0, 3.0, 2.5, 10.0, 11.0, 12.5, 9.5],
                      "weight": [0.5, 0.1, 0.2, 0.3, 5.0, 6.0, 5.5, 4.5],
                      "species": ["a", "a", "a", "a", "b", "b", "b", "b"]},
                     index=pd.Index([f"s{i}" for i in range(8)], name="sample"))


@needs_pyarrow
def test_a_parquet_table_gives_its_numbers_its_labels_column_and_its_index_as_row_names(tmp_path):
    FRAME.to_parquet(tmp_path / "t.parquet")
    spec = spec_of(tmp_path, {"path": "t.parquet", "labels": {"column": "species"}})
    assert np.array_equal(spec.data, FRAME[["height", "weight"]].to_numpy())
    assert spec.row_names == tuple(FRAME.index) and spec.true_k == 2
    assert list(spec.labels) == [0, 0, 0, 0, 1, 1, 1, 1] and spec.classes == ("a", "b")
    assert spec.identity["reader"] == "parquet"
    assert "8 rows x 2 features" in spec.read and "Parquet" in spec.read and "labels 'species'" in spec.read
    assert "a 4, b 4" in spec.read


@needs_pyarrow
def test_a_parquet_text_column_must_be_named_and_a_string_column_can_name_the_rows(tmp_path):
    FRAME.reset_index().to_parquet(tmp_path / "t.parquet")
    line = refused(tmp_path, {"path": "t.parquet", "row_names": "sample"})
    assert "column 'species'" in line and "labels: {column: 'species'}" in line
    spec = spec_of(tmp_path, {"path": "t.parquet", "row_names": "sample", "exclude": ["species"]})
    assert spec.row_names == tuple(FRAME.index) and spec.data.shape == (8, 2)


@needs_pyarrow
def test_an_arrow_file_reads_as_the_same_table(tmp_path):
    FRAME.reset_index(drop=True).to_feather(tmp_path / "t.feather")
    spec = spec_of(tmp_path, {"path": "t.feather", "labels": {"column": "species"}})
    assert np.array_equal(spec.data, FRAME[["height", "weight"]].to_numpy()) and spec.true_k == 2
    assert spec.identity["reader"] == "arrow"


@needs_pyarrow
def test_labels_preprocess_all_rows_and_the_row_bound_apply_to_a_parquet_file(tmp_path):
    FRAME.to_parquet(tmp_path / "t.parquet")
    spec = spec_of(tmp_path, {"path": "t.parquet", "labels": {"column": "species"}, "n": ["all"],
                              "preprocess": [{"standardize": {"axis": "columns"}}]})
    X = FRAME[["height", "weight"]].to_numpy()
    assert spec.n == (8,)
    np.testing.assert_allclose(spec.data, (X - X.mean(0)) / X.std(0), rtol=1e-12)
    line = refused(tmp_path, {"path": "t.parquet", "labels": {"column": "species"}, "n": [9]})
    assert line.startswith("error: datasets[0].n[0]: 9 exceeds the 8 rows") and "use n <= 8" in line
    line = refused(tmp_path, {"path": "t.parquet", "labels": {"column": "kind"}})
    assert line.startswith("error: datasets[0].labels.column: no column 'kind'") and "'species'" in line
    line = refused(tmp_path, {"path": "t.parquet", "header": True, "exclude": ["species"]})
    assert line.startswith("error: datasets[0].header:") and "only CSV files have one" in line


def test_a_reader_whose_package_is_missing_says_what_to_install(tmp_path, monkeypatch):
    (tmp_path / "t.parquet").write_bytes(b"PAR1" + bytes(16) + b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as where pyarrow is not installed: its import fails
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ConfigError, match=r"datasets\[0\]\.path: .*t\.parquet is read by the parquet reader, which "
                                          r"needs pyarrow \(pip install 'ordercube\[parquet\]'\): not installed"):
        spec_of(tmp_path, {"path": "t.parquet"})


# Matrix Market

MTX = """%%MatrixMarket matrix coordinate real general
% a hand-written 8 x 3 matrix
8 3 9
1 1 1.5
2 3 -2.0
3 2 4.25
4 1 7
4 3 0.5
5 1 1
6 2 2
7 3 3
8 1 -1
"""
MTX_DENSE = np.array([[1.5, 0, 0], [0, 0, -2.0], [0, 4.25, 0], [7, 0, 0.5], [1, 0, 0], [0, 2, 0], [0, 0, 3],
                      [-1, 0, 0]])


def test_a_matrix_market_file_gives_the_entries_written_in_it_and_says_its_density_and_memory(tmp_path):
    (tmp_path / "m.mtx").write_text(MTX)
    spec = spec_of(tmp_path, {"path": "m.mtx"})
    assert np.array_equal(spec.data, MTX_DENSE)
    assert spec.identity["reader"] == "mtx" and spec.n == (8,)
    assert "8 rows x 3 features" in spec.read and "Matrix Market (coordinate real general)" in spec.read
    assert "9 stored values, density 37.5%, densified to 192 bytes" in spec.read


def test_scipy_mmwrite_round_trips_through_the_reader(tmp_path):
    matrix = scipy.sparse.random(40, 7, density=0.25, random_state=np.random.default_rng(3), format="coo")
    scipy.io.mmwrite(tmp_path / "r.mtx", matrix)
    assert np.array_equal(spec_of(tmp_path, {"path": "r.mtx"}).data, matrix.toarray())
    symmetric = np.arange(64.0).reshape(8, 8)
    symmetric = symmetric + symmetric.T
    scipy.io.mmwrite(tmp_path / "s.mtx", scipy.sparse.coo_matrix(symmetric), symmetry="symmetric")
    assert "symmetric" in (tmp_path / "s.mtx").read_text().splitlines()[0]
    assert np.array_equal(spec_of(tmp_path, {"path": "s.mtx"}).data, symmetric)
    pattern = "%%MatrixMarket matrix coordinate pattern general\n8 2 8\n" + "".join(
        f"{i} {1 + i % 2}\n" for i in range(1, 9))
    (tmp_path / "p.mtx").write_text(pattern)
    assert np.array_equal(spec_of(tmp_path, {"path": "p.mtx"}).data, [[0, 1], [1, 0]] * 4)


def test_a_matrix_market_file_above_the_memory_bound_or_not_real_is_refused(tmp_path, monkeypatch):
    (tmp_path / "m.mtx").write_text(MTX)
    monkeypatch.setenv("ORDERCUBE_MAX_DENSE_BYTES", "191")  # the dense copy takes 8 x 3 x 8 = 192 bytes
    line = refused(tmp_path, {"path": "m.mtx"})
    assert line.startswith("error: datasets[0].path:") and "sparse 8 x 3 matrix" in line
    assert "192 bytes, above the 191 bytes held at most" in line and "ORDERCUBE_MAX_DENSE_BYTES" in line
    monkeypatch.setenv("ORDERCUBE_MAX_DENSE_BYTES", "192")
    assert spec_of(tmp_path, {"path": "m.mtx"}).data.nbytes == 192
    monkeypatch.delenv("ORDERCUBE_MAX_DENSE_BYTES")
    (tmp_path / "c.mtx").write_text("%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1.0 2.0\n")
    assert "holds complex numbers" in refused(tmp_path, {"path": "c.mtx"})
    (tmp_path / "b.mtx").write_text("%%MatrixMarket matrix coordinate real general\n8 3 9\n1 1 1.5\n")
    assert refused(tmp_path, {"path": "b.mtx"}).startswith("error: datasets[0].path: the mtx reader cannot read")
    (tmp_path / "h.mtx").write_text("4 3 5\n1 1 1.5\n")
    assert "does not begin with a Matrix Market banner" in refused(tmp_path, {"path": "h.mtx"})


# AnnData .h5ad


def write_h5ad(path: Path, X: np.ndarray, *, cell_types: list[str], layer: np.ndarray | None = None,
               embedding: np.ndarray | None = None) -> None:
    """An AnnData file written by hand after AnnData's on-disk format (encoding types and attributes)."""
    import h5py

    strings = h5py.string_dtype()
    with h5py.File(path, "w") as f:
        f.attrs["encoding-type"], f.attrs["encoding-version"] = "anndata", "0.1.0"
        f["X"] = X
        for name, rows, prefix in (("obs", X.shape[0], "cell"), ("var", X.shape[1], "gene")):
            group = f.create_group(name)
            group.attrs.update({"encoding-type": "dataframe", "encoding-version": "0.2.0", "_index": "_index"})
            group.create_dataset("_index", data=np.array([f"{prefix}{i}" for i in range(rows)], dtype=object),
                                 dtype=strings)
        obs = f["obs"]
        obs.attrs["column-order"] = np.array(["cell_type", "depth"], dtype=object).astype(strings)
        classes = sorted(set(cell_types))
        column = obs.create_group("cell_type")
        column.attrs.update({"encoding-type": "categorical", "encoding-version": "0.2.0", "ordered": False})
        column["codes"] = np.array([classes.index(c) for c in cell_types], dtype=np.int8)
        column.create_dataset("categories", data=np.array(classes, dtype=object), dtype=strings)
        obs["depth"] = np.arange(X.shape[0], dtype=np.float64)
        if layer is not None:
            sparse = scipy.sparse.csr_matrix(layer)
            group = f.create_group("layers").create_group("counts")
            group.attrs.update({"encoding-type": "csr_matrix", "encoding-version": "0.1.0", "shape": sparse.shape})
            group["data"], group["indices"], group["indptr"] = sparse.data, sparse.indices, sparse.indptr
        if embedding is not None:
            f.create_group("obsm")["X_pca"] = embedding


X_CELLS = np.array([[1.0, 0.0, 2.0], [1.5, 0.0, 2.5], [9.0, 1.0, 0.0], [8.0, 1.5, 0.5], [1.2, 0.1, 2.2],
                    [1.1, 0.2, 2.0], [8.5, 1.2, 0.2], [9.5, 0.9, 0.1]])
COUNTS = np.array([[0, 3, 0], [1, 0, 0], [0, 0, 7], [2, 0, 0], [0, 5, 1], [0, 0, 0], [4, 0, 0], [0, 0, 2]],
                  dtype=np.float32)
PCA = np.array([[0.1, -1.0], [0.2, -1.1], [3.0, 2.0], [3.1, 2.2], [0.0, -0.9], [0.1, -0.8], [2.9, 2.1], [3.2, 1.9]])
CELL_TYPES = ["B", "B", "T", "T", "B", "B", "T", "T"]


@needs_h5py
def test_an_h5ad_file_gives_x_its_labels_from_obs_and_its_rows_named_by_obs_names(tmp_path):
    write_h5ad(tmp_path / "a.h5ad", X_CELLS, cell_types=CELL_TYPES, layer=COUNTS, embedding=PCA)
    spec = spec_of(tmp_path, {"path": "a.h5ad", "labels": {"column": "cell_type"}})
    assert np.array_equal(spec.data, X_CELLS) and spec.row_names == tuple(f"cell{i}" for i in range(8))
    assert list(spec.labels) == [0, 0, 1, 1, 0, 0, 1, 1] and spec.classes == ("B", "T") and spec.true_k == 2
    assert "matrix X" in spec.read and "labels 'cell_type' from the same table: 2 classes B 4, T 4" in spec.read
    assert spec.identity["reader"] == "h5ad" and "reader_options" not in spec.identity


@needs_h5py
def test_an_h5ad_layer_is_densified_and_an_obsm_embedding_read_and_each_is_the_identity(tmp_path):
    write_h5ad(tmp_path / "a.h5ad", X_CELLS, cell_types=CELL_TYPES, layer=COUNTS, embedding=PCA)
    layer = spec_of(tmp_path, {"path": "a.h5ad", "layer": "counts", "labels": {"column": "cell_type"}})
    assert np.array_equal(layer.data, COUNTS.astype(np.float64))
    assert "layer 'counts'" in layer.read and "sparse: 8 stored values, density 33.3%" in layer.read
    assert layer.identity["reader_options"] == {"layer": "counts"}
    embedding = spec_of(tmp_path, {"path": "a.h5ad", "obsm": "X_pca"})
    assert np.array_equal(embedding.data, PCA) and "obsm 'X_pca'" in embedding.read
    line = refused(tmp_path, {"path": "a.h5ad", "layer": "spliced"})
    assert line.startswith("error: datasets[0].layer: no layer 'spliced' in") and "use one of ['counts']" in line
    line = refused(tmp_path, {"path": "a.h5ad", "layer": "counts", "obsm": "X_pca"})
    assert line.startswith("error: datasets[0].obsm: both 'layer' and 'obsm' are given")
    line = refused(tmp_path, {"path": "a.h5ad", "labels": {"column": "tissue"}})
    assert "no column 'tissue'" in line and "'cell_type'" in line and "'depth'" in line


@needs_h5py
def test_anndata_reads_our_hand_written_file_as_we_do(tmp_path):
    anndata = pytest.importorskip("anndata", reason="anndata is not installed (its releases for Python 3.11 pin "
                                                    "pandas < 3); the file is checked against its format by hand")
    write_h5ad(tmp_path / "a.h5ad", X_CELLS, cell_types=CELL_TYPES, layer=COUNTS, embedding=PCA)
    adata = anndata.read_h5ad(tmp_path / "a.h5ad")
    spec = spec_of(tmp_path, {"path": "a.h5ad", "labels": {"column": "cell_type"}})
    assert np.array_equal(np.asarray(adata.X), spec.data) and tuple(adata.obs_names) == spec.row_names
    assert list(adata.obs["cell_type"]) == [spec.classes[code] for code in spec.labels]


# whatever the reader: identity, paths, shipping


def _write(fmt: str, path: Path, scale: float) -> None:
    X = MTX_DENSE * scale
    if fmt == "parquet":
        pd.DataFrame(X, columns=["a", "b", "c"]).to_parquet(path)
    elif fmt == "h5ad":
        write_h5ad(path, X, cell_types=["x", "y"] * 4)
    else:
        scipy.io.mmwrite(path, scipy.sparse.coo_matrix(X))


FORMATS = [pytest.param("mtx", id="mtx"), pytest.param("parquet", id="parquet", marks=needs_pyarrow),
           pytest.param("h5ad", id="h5ad", marks=needs_h5py)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_files_bytes_are_the_datas_identity_and_a_relative_path_starts_at_the_config(tmp_path, fmt, monkeypatch):
    folder = tmp_path / "study"
    (folder / "data").mkdir(parents=True)
    _write(fmt, folder / "data" / f"x.{fmt}", 1.0)
    monkeypatch.chdir(tmp_path)  # elsewhere than the config's folder
    first = spec_of(folder, {"path": f"data/x.{fmt}"})
    assert np.array_equal(first.data, MTX_DENSE) and Path(first.path) == folder / "data" / f"x.{fmt}"
    again = spec_of(folder, {"path": f"data/x.{fmt}"})
    _write(fmt, folder / "data" / f"x.{fmt}", 2.0)
    edited = spec_of(folder, {"path": f"data/x.{fmt}"})
    assert again.identity == first.identity and edited.identity != first.identity
    assert edited.identity["sha256"] != first.identity["sha256"]


def test_an_edited_file_makes_run_refuse_the_cube_of_the_old_bytes(tmp_path):
    (tmp_path / "m.mtx").write_text(MTX)
    path = write_config(tmp_path / "c.yaml", **config({"name": "d", "kind": "file", "path": "m.mtx"}))
    out = str(tmp_path / "c.zarr")
    done = cli_in_process("run", str(path), "--out", out, "--workers", "0", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    again = cli_in_process("run", str(path), "--out", out, "--workers", "0", "--no-progress", cwd=tmp_path)
    assert again.returncode == 0 and "nothing to compute" in again.stdout + again.stderr
    (tmp_path / "m.mtx").write_text(MTX.replace("4.25", "4.5"))
    edited = cli_in_process("run", str(path), "--out", out, "--workers", "0", "--no-progress", cwd=tmp_path)
    assert edited.returncode == 2, edited.stdout + edited.stderr
    assert "dataset 'd' differs from the one stored in the cube in ['sha256']" in edited.stderr


# a plug-in's reader


def _docs_reader_code() -> str:
    """The reader example of the plug-in guide (docs/guide/plugins.md): its python block that registers one."""
    import re

    from conftest import REPO

    page = (REPO / "docs" / "guide" / "plugins.md").read_text(encoding="utf-8")
    blocks = [block for block in re.findall(r"^```python\n(.*?)^```", page, flags=re.S | re.M)
              if "register_reader" in block]
    assert len(blocks) == 1, "the plug-in guide shows one reader"
    return blocks[0]


def test_a_plugin_reader_from_the_guide_registers_and_reads_its_format(tmp_path):
    from ordercube.tasks.readers import READERS

    namespace: dict = {"__name__": "ordercube_semicolon"}
    exec(compile(_docs_reader_code(), "docs/guide/plugins.md", "exec"), namespace)  # noqa: S102 (the guide's code)
    try:
        reader = READERS["semicolon"]
        assert not reader.builtin and reader.suffixes == (".ssv",)
        (tmp_path / "x.ssv").write_text(textwrap.dedent("""\
            # heights and weights
            id;height;weight;group
            s1;1,5;0,5;a
            s2;2,0;0,25;a
            s3;10,0;5,0;b
            s4;11,5;6,0;b
            s5;1,0;0,75;a
            s6;2,5;0,5;a
            s7;9,0;5,5;b
            s8;12,0;6,5;b
            """))
        spec = spec_of(tmp_path, {"path": "x.ssv", "labels": {"column": "group"}})
        assert np.array_equal(spec.data, [[1.5, 0.5], [2.0, 0.25], [10.0, 5.0], [11.5, 6.0], [1.0, 0.75],
                                          [2.5, 0.5], [9.0, 5.5], [12.0, 6.5]])
        assert spec.row_names == tuple(f"s{i}" for i in range(1, 9)) and list(spec.labels) == [0, 0, 1, 1, 0, 0, 1, 1]
        assert spec.identity["reader"] == "semicolon" and "semicolon-separated" in spec.read
        (tmp_path / "y.ssv").write_text("id;height\n")
        with pytest.raises(ConfigError, match=r"datasets\[0\].path: the semicolon reader \(a plug-in's reader: "
                                              r"ordercube_semicolon\) cannot read .*y.ssv: no data rows"):
            spec_of(tmp_path, {"path": "y.ssv"})
    finally:
        READERS.pop("semicolon", None)


def test_a_reader_registered_twice_or_without_a_dotted_suffix_is_refused():
    from ordercube.plugin import Reader, register_reader

    with pytest.raises(ValueError, match="reader 'csv' is registered already"):
        register_reader(Reader("csv", lambda file: None, (".csv",)))
    with pytest.raises(ValueError, match=r"suffixes are lower case with their dot .* got \['TSV'\]"):
        register_reader(Reader("tsv", lambda file: None, ("TSV",)))


def test_parse_config_reads_a_parquet_file_given_from_python_with_its_base(tmp_path):
    if not HAS_PYARROW:
        pytest.skip("pyarrow is not installed (pip install 'ordercube[parquet]')")
    FRAME.to_parquet(tmp_path / "t.parquet")
    spec = parse_config(config({"name": "d", "kind": "file", "reader": "parquet", "path": "t.parquet",
                                "exclude": ["species"]}), base=tmp_path).datasets[0]
    assert spec.data.shape == (8, 2)


# the readers of the other file kinds


GIBBS = {"name": "gibbs", "algorithm": "correlation_gibbs", "params": {"restarts": 2}, "predictor": "graph_transfer",
         "criteria": ["mtc"]}
EDGES = "source,target,weight\na,b,1\nc,d,1\na,c,-1\nb,d,-0.5\ne,f,1\ne,a,-1\ng,h,1\ng,c,-1\n"


def test_a_kind_named_after_a_reader_reads_as_kind_file_with_that_reader(tmp_path):
    (tmp_path / "edges.csv").write_text(EDGES)
    specs = [load_config(write_config(tmp_path / f"{i}.yaml", **{**config(entry), "methods": [GIBBS]})).datasets[0]
             for i, entry in enumerate([{"name": "g", "kind": "edge_list", "path": "edges.csv"},
                                        {"name": "g", "kind": "file", "reader": "edge_list", "path": "edges.csv"}])]
    assert specs[0].identity == specs[1].identity == {"kind": "edge_list", "sha256": specs[0].identity["sha256"]}
    assert np.array_equal(specs[0].data, specs[1].data) and specs[0].data[0, 1] == 1.0 and specs[0].data[1, 3] == -0.5
    line = refused(tmp_path, {"path": "edges.csv", "reader": "edge_list", "layer": "x"})
    assert line.startswith("error: datasets[0].layer: a 'file' dataset read by the edge_list reader takes no 'layer'")


def test_the_readers_of_the_other_kinds_open_their_files_through_the_registry(tmp_path):
    from ordercube.pipeline.data import formats  # noqa: F401
    from ordercube.pipeline.files.inputfile import read_input
    from ordercube.tasks.readers import get_reader

    (tmp_path / "edges.csv").write_text(EDGES)
    graph = get_reader("edge_list").open(read_input(tmp_path / "edges.csv", "k", expected="edges"), key="g.path")
    assert graph.row_names == tuple("abcdefgh") and graph.values[1, 3] == -0.5 and graph.values[3, 1] == -0.5
    (tmp_path / "grey.csv").write_text("0,10\n20,255\n")
    image = get_reader("image").open(read_input(tmp_path / "grey.csv", "k", expected="an image"), key="g.path")
    assert np.array_equal(image.values, [[0, 10], [20, 255]]) and "peak 255" in image.format
    (tmp_path / "m.csv").write_text("a,b,c\n1,0,1\n0,1,1\n")
    matrix = get_reader("boolean_matrix").open(read_input(tmp_path / "m.csv", "k", expected="0/1"), key="g.path",
                                               format="dense")
    assert np.array_equal(matrix.values, [[1, 0, 1], [0, 1, 1]])


def test_workers_started_elsewhere_receive_the_values_and_compute_the_same_bits(tmp_path):
    import xarray as xr

    study = tmp_path / "study"
    study.mkdir()
    rng = np.random.default_rng(5)
    points = np.vstack([rng.normal(0, 1, (20, 3)), rng.normal(6, 1, (20, 3))])
    scipy.io.mmwrite(study / "points.mtx", scipy.sparse.coo_matrix(points))
    path = write_config(study / "c.yaml", **{**config({"name": "d", "kind": "file", "path": "points.mtx", "n": [30]},
                                                      k=[2, 3]), "resamples": 4})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cubes = []
    for workers in ("0", "1"):  # in this process; on a LocalCluster's worker, whose folder is not the config's
        out = str(tmp_path / f"w{workers}.zarr")
        done = cli_in_process("run", str(path), "--out", out, "--workers", workers, "--no-progress", "--no-dashboard",
                              cwd=elsewhere)
        assert done.returncode == 0 and "0 failed" in done.stdout, done.stdout + done.stderr
        cubes.append(xr.open_zarr(out)["lange"].load())
    assert bool(cubes[0].notnull().all()) and np.array_equal(cubes[0].values, cubes[1].values)


def test_a_boolean_matrix_reads_a_matrix_market_file_and_refuses_one_not_0_1(tmp_path):
    """A Matrix Market file given as a Boolean matrix was read as a CSV ("209 rows x 0 0/1 columns"): it is read as
    the mtx reader reads it (a pattern file's entries are ones), densified, its values checked to be 0 or 1."""
    import scipy.io
    import scipy.sparse

    from ordercube.pipeline.data.matrixfiles import boolean_of
    from ordercube.pipeline.files.inputfile import read_input

    ones = scipy.sparse.random(209, 40, density=0.1, random_state=1, format="coo")
    ones.data[:] = 1.0
    scipy.io.mmwrite(tmp_path / "ones.mtx", ones)
    scipy.io.mmwrite(tmp_path / "pattern.mtx", ones, field="pattern")
    for name in ("ones.mtx", "pattern.mtx"):
        loaded = boolean_of(read_input(tmp_path / name, "d.path", expected="a matrix"), "datasets[0]")
        np.testing.assert_array_equal(loaded.values, ones.toarray())
        assert loaded.read.startswith(f"209 rows x 40 columns, {ones.nnz} ones, Matrix Market (coordinate ")
    real = ones.copy()
    real.data[3] = 0.25
    scipy.io.mmwrite(tmp_path / "real.mtx", real)
    with pytest.raises(ConfigError) as refused:
        boolean_of(read_input(tmp_path / "real.mtx", "d.path", expected="a matrix"), "datasets[0]")
    assert refused.value.key == "datasets[0].path" and "holds 0.25 at row" in str(refused.value)
    assert "(1 values other than 0 and 1)" in str(refused.value) and "0/1 (or pattern)" in str(refused.value)
