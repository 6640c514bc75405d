"""Bad input: exit code 2, one message naming the key, no traceback, nothing written."""

from __future__ import annotations

import os
import time

import pytest

from conftest import cli, cli_in_process, small_config, write_config
from ordercube.pipeline.config.study import load_config
from ordercube.pipeline.errors import ConfigError


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
                            ["methods[0].criteria[0].gap.references", "got 0", ">= 1"]),
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


def _method(algorithm: str = "kmeans", params: dict | None = None, criteria: list | None = None,
            predictor: str = "nearest_centroid") -> dict:
    return small_config(methods=[{"name": "m", "algorithm": algorithm, "params": params or {}, "predictor": predictor,
                                  "criteria": criteria or ["lange"]}])


def _step(tmp_path, step) -> dict:
    return small_config(n=[4], methods=[{"name": "m", "algorithm": "kmeans", "predictor": "nearest_centroid",
                                         "criteria": ["lange"]}],
                        datasets=[_file_dataset(tmp_path, "a,b\n" + "".join(f"{i},{i % 3}\n" for i in range(1, 13)),
                                                preprocess=[step])])


def _execution(**settings) -> dict:
    return small_config(execution={"trials_per_chunk": 4, "task_seconds": 0.01, **settings})


# Ranges of every kind of parameter: each is checked at config load.
CASES.update({
    "kmeans n_init 0": (lambda tmp: _method(params={"n_init": 0}),
                        ["methods[0].params.n_init", "got 0", "integer >= 1", "n_init: 10 (the default)"]),
    "kmeans max_iter 0": (lambda tmp: _method(params={"max_iter": 0}), ["methods[0].params.max_iter", "got 0"]),
    "kmeans tol NaN": (lambda tmp: _method(params={"tol": float("nan")}), ["methods[0].params.tol", "got nan", "finite"]),
    "kmeans n_init as a float": (lambda tmp: _method(params={"n_init": 2.5}), ["methods[0].params.n_init", "got 2.5"]),
    "kmeans n_init as a boolean": (lambda tmp: _method(params={"n_init": True}), ["methods[0].params.n_init", "got True"]),
    "annealing cooling 1 loops forever": (lambda tmp: _method("deterministic_annealing", {"cooling": 1.0}),
                                          ["methods[0].params.cooling", "got 1.0", "> 0 and < 1", "cooling: 0.7"]),
    "annealing cooling just below 1": (lambda tmp: _method("deterministic_annealing", {"cooling": 0.999999}),
                                       ["methods[0].params.cooling", "6,907,752 temperatures", "more than 10,000"]),
    "annealing final temperature 0": (lambda tmp: _method("deterministic_annealing", {"final_temperature": 0}),
                                      ["methods[0].params.final_temperature", "got 0", "> 0"]),
    "spectral n_neighbors 0": (lambda tmp: _method("spectral", {"n_neighbors": 0}, predictor="nearest_neighbor"),
                               ["methods[0].params.n_neighbors", "got 0"]),
    "mixture n_init 0": (lambda tmp: _method("gaussian_mixture", {"n_init": 0}, predictor="gaussian_posterior"),
                         ["methods[0].params.n_init", "got 0"]),
    "mixture negative reg_covar": (lambda tmp: _method("gaussian_mixture", {"reg_covar": -1e-3},
                                                       predictor="gaussian_posterior"),
                                   ["methods[0].params.reg_covar", "got -0.001", ">= 0"]),
    "mixture covariance type": (lambda tmp: _method("gaussian_mixture", {"covariance_type": "ful"},
                                                    predictor="gaussian_posterior"),
                                ["methods[0].params.covariance_type", "'ful'", "'spherical'"]),
    "gap d_power 3": (lambda tmp: _method(criteria=[{"gap": {"d_power": 3}}]),
                      ["methods[0].criteria[0].gap.d_power", "got 3", "[1, 2]"]),
    "gap references as a string": (lambda tmp: _method(criteria=[{"gap": {"references": "20"}}]),
                                   ["methods[0].criteria[0].gap.references", "got '20'"]),
    "clest splits 0": (lambda tmp: _method(criteria=[{"clest": {"splits": 0}}]),
                       ["methods[0].criteria[0].clest.splits", "got 0", "splits: 20 (the default)"]),
    "pca components 0": (lambda tmp: _step(tmp, {"pca": {"components": 0}}),
                         ["datasets[0].preprocess[0].pca.components", "got 0", "integer >= 1"]),
    "pca typo": (lambda tmp: _step(tmp, {"pca": {"component": 3}}),
                 ["datasets[0].preprocess[0].pca.component", "unknown parameter", "['components']"]),
    "pca without components": (lambda tmp: _step(tmp, "pca"), ["datasets[0].preprocess[0].pca.components", "missing"]),
    "top_variance features 0": (lambda tmp: _step(tmp, {"top_variance": {"features": 0}}),
                                ["datasets[0].preprocess[0].top_variance.features", "got 0"]),
    "log base 1": (lambda tmp: _step(tmp, {"log": {"base": 1}}), ["datasets[0].preprocess[0].log.base", "got 1", "!= 1"]),
    "log base 0": (lambda tmp: _step(tmp, {"log": {"base": 0}}), ["datasets[0].preprocess[0].log.base", "> 0"]),
    "clip floor above ceiling": (lambda tmp: _step(tmp, {"clip": {"floor": 5, "ceiling": 1}}),
                                 ["datasets[0].preprocess[0].clip.floor", "above ceiling = 1", "swap"]),
    "clip floor infinite": (lambda tmp: _step(tmp, {"clip": {"floor": float("-inf")}}),
                            ["datasets[0].preprocess[0].clip.floor", "got -inf", "or null"]),
    "drop_missing negative": (lambda tmp: _step(tmp, {"drop_missing": {"max_missing": -1}}),
                              ["datasets[0].preprocess[0].drop_missing.max_missing", "got -1", ">= 0"]),
    "standardize axis": (lambda tmp: _step(tmp, {"standardize": {"axis": "diagonal"}}),
                         ["datasets[0].preprocess[0].standardize.axis", "'diagonal'", "'rows'"]),
    "step params not a mapping": (lambda tmp: _step(tmp, {"pca": [3]}),
                                  ["datasets[0].preprocess[0].pca", "expected a mapping", "['components']"]),
    "task_seconds NaN": (lambda tmp: _execution(task_seconds=float("nan")), ["execution.task_seconds", "got nan"]),
    "task_seconds 0": (lambda tmp: _execution(task_seconds=0), ["execution.task_seconds", "got 0", "> 0"]),
    "trials_per_chunk 0": (lambda tmp: _execution(trials_per_chunk=0), ["execution.trials_per_chunk", "got 0"]),
    "max_tasks_in_flight 0": (lambda tmp: _execution(max_tasks_in_flight=0), ["execution.max_tasks_in_flight", "got 0"]),
    "trials_per_chunk huge": (lambda tmp: small_config(k={"from": 2, "to": 5001}, n=[20004],
                                                       execution={"trials_per_chunk": 100000}),
                              ["execution.trials_per_chunk", "5,000 k x 100,000 trials", "at most"]),
})

# Bounded inputs (deliverable 5): names, and the size of the grid estimated before anything is allocated.
CASES.update({
    "labels path not a string": (lambda tmp: small_config(n=[4], datasets=[_file_dataset(tmp, "a\n1\n2\n3\n4\n",
                                                                                     labels={"path": 12})]),
                                 ["datasets[0].labels.path", "got 12", "give a string"]),
    "5000-character config name": (lambda tmp: small_config(name="c" * 5000),
                                   ["name", "5,000 characters", "at most 100"]),
    "5000-character dataset name": (lambda tmp: small_config(datasets=[{"name": "d" * 5000, "kind": "rings3"}]),
                                    ["datasets[0].name", "5,000 characters"]),
    "5000-character method name": (lambda tmp: small_config(methods=[{"name": "m" * 5000, "algorithm": "kmeans",
                                   "predictor": "nearest_centroid", "criteria": ["lange"]}]),
                                   ["methods[0].name", "5,000 characters"]),
    "n = 1e12": (lambda tmp: small_config(n=[10**12]), ["datasets[0].n", "n = 1,000,000,000,000", "TiB", "lower n"]),
    "1e12 resamples": (lambda tmp: small_config(resamples=10**12),
                       ["grid", "1,000,000,000,000 resamples", "cells, more than 100,000,000", "lower resamples"]),
    "baseline_draws 1e12": (lambda tmp: small_config(baseline_draws=10**12), ["baseline_draws", "<= 100,000"]),
    "baseline too large for n": (lambda tmp: small_config(n=[1_000_000], baseline_draws=100_000),
                                 ["baseline_draws", "n = 1,000,000", "driver memory", "lower baseline_draws"]),
    "k range of 1e15 values": (lambda tmp: small_config(k={"from": 2, "to": 10**15}), ["k", "at most 10,000"]),
    "grid of 1e8+ cells from many k": (lambda tmp: small_config(n=[40004], k={"from": 2, "to": 10001}, resamples=10001),
                                       ["grid", "cells, more than 100,000,000"]),
})


def _assert_refused(path, cube, case: str, expected: list[str]) -> None:
    """``validate`` and ``run`` of the config at ``path`` exit 2 with one line holding every ``expected``
    fragment, and no cube is written."""
    for command in (["validate", str(path)], ["run", str(path), "--out", str(cube)]):
        result = cli_in_process(*command)
        assert result.returncode == 2, (case, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr
        assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1, result.stderr
        for fragment in expected:
            assert fragment in result.stderr, (case, fragment, result.stderr)
    assert not cube.exists()


@pytest.mark.parametrize("case", CASES)
def test_bad_config_exits_2_naming_the_key(tmp_path, case):
    build, expected = CASES[case]
    path = write_config(tmp_path / "bad.yaml", **build(tmp_path))
    _assert_refused(path, tmp_path / "cube.zarr", case, expected)


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
    result = cli("run", str(config), "--workers", "-1")
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
                 "--scheduler", "tcp://127.0.0.1:1", "--connect-timeout", "2", timeout=120)  # the default 10 s: test_waits
    assert result.returncode == 2, result.stderr
    assert "--scheduler" in result.stderr and "Traceback" not in result.stderr


def _tree_bytes(root) -> dict:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def test_out_at_a_cube_of_another_config_is_refused_and_left_untouched(tmp_path):
    first = write_config(tmp_path / "a.yaml", **small_config(resamples=2))
    cube = tmp_path / "c.zarr"
    assert cli_in_process("run", str(first), "--out", str(cube), "--no-progress", "--workers", "0").returncode == 0
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


BILLION_LAUGHS = "".join(  # 351 bytes, 9^9 = 387,420,489 'lol's when expanded
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n']
    + [f"{b}: &{b} [{','.join(['*' + a] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi")]) + "name: *i\n"
VALID_HEAD = "seed: 7\nn: [40]\nk: [2, 3]\nresamples: 2\n" \
    "datasets: [{name: g, kind: lange_gaussians3}]\n" \
    "methods: [{name: m, algorithm: kmeans, predictor: nearest_centroid, criteria: [lange]}]\n"

# Bounded YAML (deliverable 5): written as text, since yaml.safe_dump cannot write these.
RAW_CASES = {
    "alias bomb": (BILLION_LAUGHS.encode(), ["bad.yaml, line", "expands to more than 100,000 values", "alias"]),
    "alias cycle": (("name: &x [*x]\n" + VALID_HEAD).encode(), ["bad.yaml, line 1", "*x is inside its own anchor"]),
    "duplicate key": (("name: one\n" + VALID_HEAD + "name: two\n").encode(),
                      ["bad.yaml, line 8", "the key 'name' appears twice", "first at line 1", "keep one"]),
    "duplicate key in a flow mapping": (("name: x\n" + VALID_HEAD.replace("{name: g,", "{name: g, name: h,")).encode(),
                                        ["bad.yaml, line 6", "the key 'name' appears twice"]),
    "not UTF-8": (("name: caf\xe9\n" + VALID_HEAD).encode("latin-1"), ["bad.yaml", "not UTF-8", "0xe9", "line 1"]),
    "5000-digit integer": (("name: x\n" + VALID_HEAD.replace("seed: 7", "seed: " + "9" * 5000)).encode(),
                           ["bad.yaml, line 2", "an integer of 5000 digits", "2^63"]),
    "hexadecimal integer beyond 64 bits": (("name: x\n" + VALID_HEAD.replace("seed: 7", "seed: 0x1" + "0" * 16)).encode(),
                                           ["bad.yaml, line 2", "integers in a config lie within"]),
    "deep nesting": (("name: x\n" + VALID_HEAD + "published: " + "[" * 5000 + "]" * 5000 + "\n").encode(),
                     ["bad.yaml, line 8", "nested deeper than 32 levels"]),
    "file above 1 MiB": (("name: x\n" + VALID_HEAD + "# " + "x" * (1 << 20) + "\n").encode(),
                         ["bad.yaml", "bytes; a config has at most 1,048,576"]),
}


@pytest.mark.parametrize("case", RAW_CASES)
def test_unbounded_yaml_exits_2_naming_the_file(tmp_path, case):
    text, expected = RAW_CASES[case]
    path = tmp_path / "bad.yaml"
    path.write_bytes(text)
    _assert_refused(path, tmp_path / "cube.zarr", case, expected)


def test_alias_bomb_is_refused_in_well_under_two_seconds(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(BILLION_LAUGHS)
    started = time.perf_counter()
    with pytest.raises(ConfigError, match="expands to more than"):
        load_config(path)
    assert time.perf_counter() - started < 2.0


def test_anchors_within_the_bound_still_work(tmp_path):
    """configs/lange2002_table1.yaml shares one criteria list between methods with an anchor."""
    text = VALID_HEAD.replace("methods: [{name: m, algorithm: kmeans, predictor: nearest_centroid, criteria: [lange]}]",
                              "methods:\n  - {name: m, algorithm: kmeans, predictor: nearest_centroid, "
                              "criteria: &c [lange, pairwise]}\n  - {name: s, algorithm: spectral, "
                              "predictor: nearest_neighbor, criteria: *c}")
    path = tmp_path / "ok.yaml"
    path.write_text("name: anchors\n" + text)
    config = load_config(path)
    assert [m.criteria for m in config.methods] == [("lange", "pairwise"), ("lange", "pairwise")]


def test_an_oversized_grid_never_reaches_the_planning_code(tmp_path, monkeypatch):
    """1e12 cells: refused by parse_config, so neither planned_mask nor preview_plan can be given a Config."""
    import ordercube.pipeline.cube.grid
    import ordercube.pipeline.run.sweep

    def never(*args, **kwargs):
        raise AssertionError("planning code reached")

    monkeypatch.setattr(ordercube.pipeline.cube.grid, "planned_mask", never)
    monkeypatch.setattr(ordercube.pipeline.run.sweep, "planned_mask", never)
    path = write_config(tmp_path / "huge.yaml", **small_config(resamples=10**12))
    with pytest.raises(ConfigError) as error:
        ordercube.pipeline.run.sweep.preview_plan(load_config(path))
    assert error.value.key == "grid" and "12,000,000,000,000 cells" in str(error.value)
    started = time.perf_counter()
    result = cli("validate", str(path), timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr and "cells, more than" in result.stderr
    assert time.perf_counter() - started < 30  # the refused grid allocates nothing (it used to take 978 GiB)


@pytest.mark.parametrize("case", ["unknown criterion", "k out of range for every n", "estimator memory"])
def test_a_sample_of_the_bad_configs_through_a_real_process(tmp_path, case):
    """The cases above call the CLI's ``main`` in the test's process; a few go through a real process too:
    the exit code, the single stderr line and no traceback are those a user's shell sees."""
    config = CASES[case][0](tmp_path) if case in CASES else small_config(methods=[{
        "name": "m", "algorithm": "sklearn.cluster.AgglomerativeClustering", "params": {"memory": str(tmp_path / "DIR")},
        "predictor": "nearest_centroid", "criteria": ["lange"]}])
    path = write_config(tmp_path / "bad.yaml", **config)
    result = cli("run", str(path), "--out", str(tmp_path / "cube.zarr"))
    assert result.returncode == 2 and result.stdout == "", (result.stdout, result.stderr)
    assert result.stderr.startswith("error: ") and len(result.stderr.splitlines()) == 1, result.stderr
    assert not (tmp_path / "cube.zarr").exists() and not (tmp_path / "DIR").exists()


@pytest.mark.parametrize(("variable", "value", "expected"), [
    ("ORDERCUBE_SHARD_CELLS", "nan", "a positive whole number of cells, got 'nan'"),
    ("ORDERCUBE_SHARD_CELLS", "text", "a positive whole number of cells, got 'text'"),
    ("ORDERCUBE_SHARD_CELLS", "0", "a positive whole number of cells, got '0'"),
    ("ORDERCUBE_FLUSH_SECONDS", "text", "a non-negative number of seconds, got 'text'"),
    ("ORDERCUBE_FLUSH_SECONDS", "inf", "a non-negative number of seconds, got 'inf'"),
    ("ORDERCUBE_MAX_INPUT_BYTES", "2.5", "a positive whole number of bytes, got '2.5'"),
    ("ORDERCUBE_LOCK_LEASE_SECONDS", "0", "a positive number of seconds, got '0'"),
    ("ORDERCUBE_STORE_TIMEOUT_SECONDS", "-1", "a positive number of seconds, got '-1'"),
])
def test_a_bad_environment_variable_exits_2_naming_it_before_any_cube_is_made(tmp_path, variable, value, expected):
    """Every numeric environment variable read is checked as a config key is (they ended in tracebacks, one of them
    after the cube was created): exit 2, one line naming the variable, its value and the fix; nothing written."""
    config = write_config(tmp_path / "c.yaml", **small_config(n=[40], k=[2], resamples=2))
    done = cli("run", str(config), "--out", str(tmp_path / "c.zarr"), "--workers", "0", env={variable: value})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == f"error: {variable}: expected {expected}; unset it " + done.stderr.split("unset it ")[1].strip()
    assert f"give e.g. {variable}=" in done.stderr and not (tmp_path / "c.zarr").exists()
