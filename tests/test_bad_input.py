"""Bad input: exit code 2, one message naming the key, no traceback, nothing written."""

from __future__ import annotations

import os

import pytest

from conftest import cli, small_config, write_config


def _file_dataset(tmp_path, text: str, **extra) -> dict:
    (tmp_path / "data.csv").write_text(text)
    return {"name": "file", "kind": "file", "path": "data.csv", **extra}


CASES = {
    "unknown dataset": (lambda tmp: small_config(datasets=[{"name": "x", "kind": "gausians3"}]),
                        ["datasets[0].kind", "gausians3", "lange_gaussians3"]),
    "k = 1 for stability": (lambda tmp: small_config(k=[1, 2, 3]), ["k", "'lange'", "k >= 2"]),
    "negative resamples": (lambda tmp: small_config(resamples=-3), ["resamples", "-3", ">= 1"]),
    "zero resamples": (lambda tmp: small_config(resamples=0), ["resamples", "0"]),
    "missing file": (lambda tmp: small_config(datasets=[{"name": "f", "kind": "file", "path": "nope.csv"}]),
                     ["datasets[0].path", "nope.csv", "does not exist"]),
    "unknown top-level key": (lambda tmp: {**small_config(), "resample": 3}, ["resample", "unknown key"]),
    "wrong type": (lambda tmp: small_config(seed="abc"), ["seed", "'abc'", "integer"]),
    "unknown criterion": (lambda tmp: small_config(methods=[{"name": "m", "algorithm": "kmeans",
                          "predictor": "nearest_centroid", "criteria": ["lnage"]}]), ["methods[0].criteria[0]", "lnage"]),
    "unknown algorithm": (lambda tmp: small_config(methods=[{"name": "m", "algorithm": "kmean",
                          "predictor": "nearest_centroid", "criteria": ["lange"]}]), ["methods[0].algorithm", "kmean"]),
    "unknown algorithm parameter": (lambda tmp: small_config(methods=[{"name": "m", "algorithm": "kmeans",
                                    "params": {"ninit": 3}, "predictor": "nearest_centroid", "criteria": ["lange"]}]),
                                    ["methods[0].params", "ninit", "n_init"]),
    "bad algorithm parameter value": (lambda tmp: small_config(methods=[{"name": "m", "algorithm": "agglomerative",
                                      "params": {"linkage": "wardd"}, "predictor": "nearest_centroid",
                                      "criteria": ["lange"]}]), ["methods[0].params", "linkage", "'wardd'", "'single'"]),
    "1-D algorithm on 2-D data": (lambda tmp: small_config(methods=[{"name": "m", "algorithm": "kmeans_1d_exact",
                                  "predictor": "nearest_centroid", "criteria": ["pairwise"]}]),
                                  ["methods[0].algorithm", "'kmeans_1d_exact'", "'gauss' has 2"]),
    "n too small": (lambda tmp: small_config(n=[2]), ["n[0]", ">= 4"]),
    "n = all for synthetic": (lambda tmp: small_config(n=["all"]), ["datasets[0].n", "'all'"]),
    "duplicate dataset names": (lambda tmp: small_config(datasets=[{"name": "a", "kind": "rings3"},
                                                                   {"name": "a", "kind": "rings3"}]), ["datasets", "'a'"]),
    "csv with text": (lambda tmp: small_config(n=[4], datasets=[_file_dataset(tmp, "a,b\n1,2\n3,x\n5,6\n7,8\n9,1\n")]),
                      ["datasets[0].path", "'x'", "column 'b'"]),
    "csv with NaN": (lambda tmp: small_config(n=[4], methods=[{"name": "m", "algorithm": "kmeans",
                                                                "predictor": "nearest_centroid", "criteria": ["lange"]}],
                                              datasets=[_file_dataset(tmp, "a,b\n1,2\n3,\n5,6\n7,8\n9,1\n")]),
                     ["datasets[0].path", "missing", "impute"]),
    "labels of the wrong length": (lambda tmp: (tmp.joinpath("labels.csv").write_text("y\n1\n2\n"), small_config(
        n=[4], datasets=[_file_dataset(tmp, "a,b\n1,2\n3,4\n5,6\n7,8\n", labels="labels.csv")]))[1],
        ["datasets[0].labels", "2 labels", "4 rows"]),
    "n above the file's rows": (lambda tmp: small_config(n=[40], datasets=[_file_dataset(tmp, "a\n1\n2\n3\n4\n5\n")]),
                                ["datasets[0].n[0]", "40", "5 rows"]),
    "pairwise needs twice the rows": (lambda tmp: small_config(n=[4], datasets=[_file_dataset(tmp, "a\n1\n2\n3\n4\n5\n")]),
                                      ["datasets[0].n", "evaluation sample", "n <= 2"]),
    "unknown preprocessing step": (lambda tmp: small_config(n=[4], datasets=[_file_dataset(
        tmp, "a\n1\n2\n3\n4\n5\n6\n7\n8\n9\n", preprocess=["standardise"])]), ["datasets[0].preprocess[0]", "standardize"]),
    "BIC for k-means": (lambda tmp: small_config(methods=[{"name": "m", "algorithm": "kmeans",
                        "predictor": "nearest_centroid", "criteria": ["lange", "bic"]}]),
                        ["methods[0].criteria[1]", "bic", "'gaussian_mixture'", "'kmeans'"]),
    "unknown criterion option": (lambda tmp: small_config(methods=[{"name": "m", "algorithm": "kmeans",
                                 "predictor": "nearest_centroid", "criteria": [{"gap": {"B": 20}}]}]),
                                 ["methods[0].criteria[0].gap", "'B'", "references"]),
    "zero reference sets": (lambda tmp: small_config(methods=[{"name": "m", "algorithm": "kmeans",
                            "predictor": "nearest_centroid", "criteria": [{"gap": {"references": 0}}]}]),
                            ["methods[0].criteria[0].gap", "references = 0", ">= 1"]),
    "bad reference box": (lambda tmp: small_config(methods=[{"name": "m", "algorithm": "kmeans",
                          "predictor": "nearest_centroid", "criteria": [{"clest": {"reference": "gaussian"}}]}]),
                          ["methods[0].criteria[0].clest", "'gaussian'", "'pca'"]),
    "import path outside scikit-learn": (lambda tmp: small_config(methods=[{"name": "m", "algorithm": "os.system",
                                         "predictor": "nearest_centroid", "criteria": ["lange"]}]),
                                         ["methods[0].algorithm", "'os.system'", "only scikit-learn"]),
    "classifier that is not one": (lambda tmp: small_config(methods=[{"name": "m", "algorithm": "kmeans",
                                   "predictor": "sklearn.cluster.KMeans", "criteria": ["lange"]}]),
                                   ["methods[0].predictor", "not a scikit-learn classifier"]),
    "k out of range for every n": (lambda tmp: small_config(k=[2, 30]), ["k", "k = 30", "halves of 40 points",
                                                                        "k <= 20"]),
    "published for an unknown pair": (lambda tmp: {**small_config(), "published": {"gauss/kmeans": {"lange": 3}}},
                                      ["published.gauss/kmeans", "unknown key", "gauss/km"]),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_config_exits_2_naming_the_key(tmp_path, case):
    build, expected = CASES[case]
    path = write_config(tmp_path / "bad.yaml", **build(tmp_path))
    for command in (["validate", str(path)], ["run", str(path), "--out", str(tmp_path / "cube.zarr")]):
        result = cli(*command)
        assert result.returncode == 2, (case, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        assert result.stderr.startswith("error: ")
        for fragment in expected:
            assert fragment in result.stderr, (case, fragment, result.stderr)
    assert not (tmp_path / "cube.zarr").exists()


def test_yaml_syntax_error_names_the_file_and_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: broken\nseed: 1\nk: [2, 3\nresamples: 4\n")
    result = cli("run", str(path), "--out", str(tmp_path / "cube.zarr"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "broken.yaml" in result.stderr and "YAML syntax error at line" in result.stderr
    assert not (tmp_path / "cube.zarr").exists()


def test_missing_config_file_and_bad_options(tmp_path):
    result = cli("run", str(tmp_path / "absent.yaml"))
    assert result.returncode == 2 and "absent.yaml" in result.stderr and "Traceback" not in result.stderr
    config = write_config(tmp_path / "ok.yaml", **small_config())
    result = cli("run", str(config), "--workers", "0")
    assert result.returncode == 2 and "--workers" in result.stderr
    result = cli("run", str(config), "--workers", "two")
    assert result.returncode == 2 and "--workers" in result.stderr
    result = cli("status", str(tmp_path / "not-a-cube.zarr"))
    assert result.returncode == 2 and "not a cube" in result.stderr and "Traceback" not in result.stderr


def test_out_pointing_at_a_folder_that_is_not_a_cube_is_refused_untouched(tmp_path):
    folder = tmp_path / "precious"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    result = cli("run", str(write_config(tmp_path / "ok.yaml", **small_config())), "--out", str(folder))
    assert result.returncode == 2 and "not an ordercube cube" in result.stderr
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]


def test_out_below_a_file_is_refused_before_anything_runs(tmp_path):
    (tmp_path / "results").write_text("a file where a folder should be")
    out = tmp_path / "results" / "cube.zarr"
    result = cli("run", str(write_config(tmp_path / "ok.yaml", **small_config())), "--out", str(out))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "--out" in result.stderr and "is a file, not a folder" in result.stderr
    assert "dask dashboard" not in result.stdout  # refused before a cluster was started
    assert (tmp_path / "results").read_text() == "a file where a folder should be"


def test_unreachable_scheduler_exits_2(tmp_path):
    result = cli("run", str(write_config(tmp_path / "ok.yaml", **small_config())), "--out", str(tmp_path / "c.zarr"),
                 "--scheduler", "tcp://127.0.0.1:1", timeout=120)
    assert result.returncode == 2, result.stderr
    assert "--scheduler" in result.stderr and "Traceback" not in result.stderr


def _tree_bytes(root) -> dict:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def test_out_at_a_cube_of_another_config_is_refused_and_left_untouched(tmp_path):
    first = write_config(tmp_path / "a.yaml", **small_config(resamples=2))
    cube = tmp_path / "c.zarr"
    assert cli("run", str(first), "--out", str(cube), "--no-progress", "--workers", "1").returncode == 0
    before = _tree_bytes(cube)
    for change in ({"seed": 8}, {"methods": [{"name": "km", "algorithm": "kmeans", "params": {"n_init": 4},
                                              "predictor": "nearest_centroid", "criteria": ["lange", "pairwise"]}]}):
        other = write_config(tmp_path / "b.yaml", **small_config(resamples=2, **change))
        result = cli("run", str(other), "--out", str(cube), "--no-progress")
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert "computed with another config" in result.stderr and "--out NEW_PATH" in result.stderr
        assert _tree_bytes(cube) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders: run the suite as a user")
def test_read_only_output_folder_is_refused_before_anything_runs(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        result = cli("run", str(write_config(tmp_path / "ok.yaml", **small_config())), "--out", str(folder / "c.zarr"))
    finally:
        folder.chmod(0o755)
    assert result.returncode == 2 and "not writable" in result.stderr and "Traceback" not in result.stderr
    assert list(folder.iterdir()) == []
