"""The dataset catalog: ``catalog:DATASET/FILE`` found in $ORDERCUBE_DATA, then ../shared, then the cache, else
fetched (from a mirror served on 127.0.0.1 here: no test goes to the internet) and converted, checked by sha256."""

from __future__ import annotations

import hashlib
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import REPO, cli_in_process, write_config
from ordercube.pipeline.data import catalog
from ordercube.pipeline.data.catalog import registry, resolve_path
from ordercube.pipeline.errors import ConfigError


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def no_shared(tmp_path, monkeypatch) -> Path:
    """A machine without ../shared and with an empty cache of its own (a fresh user's)."""
    monkeypatch.setattr(catalog, "SHARED", tmp_path / "no-shared")
    monkeypatch.setenv("ORDERCUBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ORDERCUBE_DATA", raising=False)
    monkeypatch.delenv("ORDERCUBE_MIRROR", raising=False)
    return tmp_path / "cache"


@contextmanager
def mirror(folder: Path) -> Iterator[tuple[str, list[str]]]:
    """``folder`` served over HTTP on 127.0.0.1: (its base URL, the paths requested so far)."""
    requested: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, format, *args):  # noqa: A002 (the signature of the base class)
            requested.append(self.path)

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requested
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def pairs_file(edges_csv: Path, into: Path) -> Path:
    """ConstrainedRM's original format made from the shared CSV: right-aligned 'user permission' lines."""
    rows = edges_csv.read_text().splitlines()[1:]
    into.parent.mkdir(parents=True, exist_ok=True)
    into.write_text("".join(f"{int(u):9d}{int(p):11d}\n" for u, p in (row.split(",") for row in rows)))
    return into


def test_every_catalog_hash_is_that_of_the_shared_file(shared):
    for dataset, entry in registry().items():
        assert {"title", "citation", "licence", "source", "files"} <= set(entry), dataset
        folder = shared / "datasets" / dataset
        assert set(entry["files"]) == {p.name for p in folder.iterdir() if p.suffix in (".csv", ".png")}, dataset
        for name, file in entry["files"].items():
            assert sha(folder / name) == file["sha256"], (dataset, name)
            assert "url" in file or "convert" in file or "manual" in entry, (dataset, name)


def test_resolution_order_ordercube_data_then_shared_then_cache(shared, tmp_path, monkeypatch):
    monkeypatch.setenv("ORDERCUBE_CACHE", str(tmp_path / "cache"))
    name = "catalog:alon_colon/labels.csv"
    monkeypatch.setenv("ORDERCUBE_DATA", str(tmp_path / "mine"))  # set, but without the file: next place
    assert resolve_path(name, Path("/elsewhere"), "k") == str(shared / "datasets" / "alon_colon" / "labels.csv")
    mine = tmp_path / "mine" / "alon_colon" / "labels.csv"
    mine.parent.mkdir(parents=True)
    shutil.copy(shared / "datasets" / "alon_colon" / "labels.csv", mine)
    assert resolve_path(name, Path("/elsewhere"), "k") == str(mine)
    monkeypatch.delenv("ORDERCUBE_DATA")
    monkeypatch.setattr(catalog, "SHARED", tmp_path / "no-shared")
    cached = tmp_path / "cache" / "alon_colon" / "labels.csv"
    cached.parent.mkdir(parents=True)
    shutil.copy(mine, cached)
    assert resolve_path(name, Path("/elsewhere"), "k") == str(cached)
    assert resolve_path("data/x.csv", Path("/base"), "k") == "/base/data/x.csv"  # a plain path is as before


def test_a_changed_file_in_ordercube_data_exits_2_naming_the_file_both_hashes_and_the_fix(shared, tmp_path):
    mine = tmp_path / "mine" / "alon_colon" / "labels.csv"
    mine.parent.mkdir(parents=True)
    mine.write_bytes((shared / "datasets" / "alon_colon" / "labels.csv").read_bytes().replace(b"tumor", b"tumour"))
    config = write_config(tmp_path / "c.yaml", name="c", seed=1, k=[2, 3], resamples=2, datasets=[
        {"name": "tissues", "kind": "file", "path": "catalog:alon_colon/expression_2000genes.csv", "n": ["all"],
         "labels": {"path": "catalog:alon_colon/labels.csv", "column": "tissue"}}],
        methods=[{"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["lange"]}])
    result = cli_in_process("validate", str(config), env={"ORDERCUBE_DATA": str(tmp_path / "mine")})
    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"error: datasets[0].labels.path: {mine} is not the catalog's catalog:alon_colon/labels.csv: "
        f"its sha256 is {sha(mine)}, the catalog's {registry()['alon_colon']['files']['labels.csv']['sha256']}; "
        "replace it with the catalog's file (sources: http://genomics-pubs"), lines
    assert "give its path instead of catalog:alon_colon/labels.csv" in lines[0]
    assert sha(mine) != registry()["alon_colon"]["files"]["labels.csv"]["sha256"]


def test_access_control_matrices_are_downloaded_in_their_original_format_and_converted(shared, no_shared, tmp_path,
                                                                                     monkeypatch):
    """hc.txt in ConstrainedRM's format, served on 127.0.0.1, becomes hc_edges.csv and then hc_dense.csv:
    both byte for byte the project's files; a second resolution reads the cache without a request."""
    served = tmp_path / "served"
    pairs_file(shared / "datasets" / "rbac_hp_labs" / "hc_edges.csv", served / "rbac_hp_labs" / "hc.txt")
    config = write_config(tmp_path / "c.yaml", name="c", seed=1, k=[2, 3], resamples=2, datasets=[
        {"name": "hc", "kind": "file", "path": "catalog:rbac_hp_labs/hc_dense.csv", "n": [40]}],
        methods=[{"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["lange"]}])
    with mirror(served) as (url, requested):
        monkeypatch.setenv("ORDERCUBE_MIRROR", url)
        result = cli_in_process("validate", str(config))
        assert result.returncode == 0, result
        assert requested == ["/rbac_hp_labs/hc.txt"]
    for name in ("hc_edges.csv", "hc_dense.csv"):
        assert sha(no_shared / "rbac_hp_labs" / name) == sha(shared / "datasets" / "rbac_hp_labs" / name), name
    assert "dataset hc: file" in result.stdout
    monkeypatch.setenv("ORDERCUBE_MIRROR", "http://127.0.0.1:1")  # nothing there: the cache must do
    assert cli_in_process("validate", str(config)).returncode == 0


def test_the_test_image_is_downloaded_and_its_csv_made_from_it(shared, no_shared, tmp_path, monkeypatch):
    served = tmp_path / "served" / "images"
    served.mkdir(parents=True)
    shutil.copy(shared / "datasets" / "images" / "camera_512.png", served / "camera.png")  # the source's file name
    with mirror(served.parent) as (url, requested):
        monkeypatch.setenv("ORDERCUBE_MIRROR", url)
        path = Path(resolve_path("catalog:images/camera_512.csv", Path(), "datasets[0].path"))
    assert requested == ["/images/camera.png"]
    assert path == no_shared / "images" / "camera_512.csv"
    assert sha(path) == sha(shared / "datasets" / "images" / "camera_512.csv")


def test_a_mirror_serving_another_file_exits_2_and_nothing_is_kept(shared, no_shared, tmp_path, monkeypatch):
    served = tmp_path / "served" / "rbac_hp_labs"
    pairs_file(shared / "datasets" / "rbac_hp_labs" / "hc_edges.csv", served / "hc.txt")
    (served / "hc.txt").write_text((served / "hc.txt").read_text().replace("        1          1\n", "", 1))
    with mirror(served.parent) as (url, _):
        monkeypatch.setenv("ORDERCUBE_MIRROR", url)
        with pytest.raises(ConfigError) as error:
            resolve_path("catalog:rbac_hp_labs/hc_edges.csv", Path(), "datasets[0].path")
    message = str(error.value)
    expected = registry()["rbac_hp_labs"]["files"]["hc_edges.csv"]["sha256"]
    assert message.startswith(f"datasets[0].path: catalog:rbac_hp_labs/hc_edges.csv converted by pairs_to_edges from "
                              f"{url}/rbac_hp_labs/hc.txt has sha256 ") and f"the catalog's {expected}" in message
    assert not (no_shared / "rbac_hp_labs" / "hc_edges.csv").exists()
    assert not (no_shared / "sources" / "rbac_hp_labs" / "hc.txt").exists()  # downloaded again next time


def test_a_dataset_only_published_as_r_data_says_what_to_download_and_where_to_put_it(no_shared, tmp_path):
    config = write_config(tmp_path / "c.yaml", name="c", seed=1, k=[2, 3], resamples=2, datasets=[
        {"name": "yeast", "kind": "file", "path": "catalog:spellman_yeast_cdc28/cdc28_800x17.csv", "n": [100]}],
        methods=[{"name": "km", "algorithm": "kmeans", "predictor": "nearest_centroid", "criteria": ["lange"]}])
    result = cli_in_process("validate", str(config), env={"ORDERCUBE_MIRROR": "http://127.0.0.1:1"})
    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: datasets[0].path: catalog:spellman_yeast_cdc28/cdc28_800x17.csv is not on this machine (looked for "
        f"{tmp_path / 'no-shared' / 'spellman_yeast_cdc28' / 'cdc28_800x17.csv'}, "
        f"{no_shared / 'spellman_yeast_cdc28' / 'cdc28_800x17.csv'}); "), lines
    assert "download https://github.com/cran/kohonen/raw/" in lines[0] and "ORDERCUBE_DATA" in lines[0]
    assert not no_shared.exists()


@pytest.mark.parametrize(("given", "problem"), [
    ("catalog:golub/x.csv", "unknown catalog dataset 'golub' in 'catalog:golub/x.csv'; expected catalog:DATASET/FILE"),
    ("catalog:alon_colon/I2000.txt", "'catalog:alon_colon/I2000.txt' names no file of the catalog dataset alon_colon; "
                                     "expected one of ['catalog:alon_colon/expression_2000genes.csv'"),
])
def test_an_unknown_catalog_name_lists_the_known_ones(given, problem):
    with pytest.raises(ConfigError) as error:
        resolve_path(given, Path(), "datasets[1].path")
    assert str(error.value).startswith(f"datasets[1].path: {problem}")


def test_no_config_or_readme_points_at_the_shared_folder_or_says_seed():
    """A user has no ../shared, and "seed 000" means nothing to a reader: the paper is cited instead."""
    for path in [*(REPO / "configs").glob("*.yaml"), REPO / "README.md", *(REPO / "docs").glob("*/*.md")]:
        text = path.read_text()
        assert "../shared" not in text and not re.search(r"seeds? 00\d", text), path
    references = (REPO / "docs" / "guide" / "references.md").read_text()
    for cited in ("Stability-based model selection", "Stability-based validation of clustering solutions",
                  "Cluster stability for finite samples",
                  "A resampling approach to cluster validation", "the swapping method",
                  "The minimum transfer cost principle", *(entry["citation"].split(")", 1)[0].split(",")[0]
                                                          for entry in registry().values())):
        assert cited in references, cited
    assert (REPO / "LICENSE").read_text().startswith("BSD 3-Clause License\n\nCopyright (c) 2026, the ordercube developers")
