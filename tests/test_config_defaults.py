"""Config dicts and YAML files: defaults for the keys they omit, every wrong key at once, the data line."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

import ordercube
from conftest import cli_in_process
from ordercube.pipeline.config.defaults import CLUSTERING_CRITERIA, RESAMPLES
from ordercube.pipeline.config.study import load_config, parse_config
from ordercube.pipeline.config.yamlload import read_yaml
from ordercube.tasks.algorithms import ALGORITHMS

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _points(rows: int = 40, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(rows, 2))


def test_a_minimal_dict_gets_every_default():
    config = parse_config({"k": [2, 3], "datasets": [{"name": "x", "data": _points()}],
                           "methods": [{"algorithm": "kmeans"}]})
    method = config.methods[0]
    assert (config.name, config.resamples, config.datasets[0].n) == ("study", RESAMPLES, (40,))
    assert (method.name, method.predictor, method.criteria) == ("kmeans", "nearest_centroid", CLUSTERING_CRITERIA)
    assert 0 <= config.seed < 2**31 and config.defaults["seed"] == config.seed
    assert set(config.defaults) == {"name", "seed", "resamples", "methods[0].name", "methods[0].predictor",
                                    "methods[0].criteria"}
    # the stored config holds what was filled: parsed again it is the same study
    assert config.raw["seed"] == config.seed and config.raw["methods"][0]["predictor"] == "nearest_centroid"
    again = parse_config(dict(config.raw, datasets=[{"name": "x", "data": _points()}]))
    assert again.fingerprint == config.fingerprint and again.defaults == {}
    other = parse_config({"k": [2, 3], "datasets": [{"name": "x", "data": _points()}], "methods": [{"algorithm": "kmeans"}]})
    assert other.seed != config.seed  # drawn, not fixed (a 1 in 2**31 chance of a false failure)


# every algorithm with a matched predictor that clusters points of two features (1-D and graph ones aside)
MATCHED = sorted(name for name, record in ALGORITHMS.items()
                 if record.predictor and record.takes == "points" and record.max_features is None)


@pytest.mark.parametrize("algorithm", MATCHED)
def test_the_predictor_is_the_algorithms_matched_one(algorithm):
    config = parse_config({"seed": 1, "k": [2, 3], "datasets": [{"name": "x", "data": _points()}],
                           "methods": [{"algorithm": algorithm, "criteria": ["lange"]}]})
    assert config.methods[0].predictor == ALGORITHMS[algorithm].predictor
    assert len(MATCHED) >= 5


def test_an_algorithm_without_a_matched_predictor_still_needs_one():
    with pytest.raises(ordercube.ConfigError, match=r"^methods\[0\]\.predictor: missing; add the key 'predictor'"):
        parse_config({"seed": 1, "k": [2, 3], "datasets": [{"name": "x", "data": _points()}],
                      "methods": [{"algorithm": "agglomerative", "criteria": ["lange"]}]})


def test_the_yaml_name_is_its_stem_and_generated_data_still_need_n(tmp_path):
    text = {"seed": 3, "k": [2, 3], "datasets": [{"name": "g", "kind": "lange_gaussians3"}],
            "methods": [{"algorithm": "kmeans", "criteria": ["lange"]}]}
    path = tmp_path / "my study.yaml"
    path.write_text(yaml.safe_dump({**text, "n": [60]}))
    config = load_config(path)
    assert config.name == "my_study" and config.out == "results/my_study.zarr"
    path.write_text(yaml.safe_dump(text))
    with pytest.raises(ordercube.ConfigError) as caught:
        load_config(path)
    assert caught.value.key == "datasets[0].n"
    assert "generated dataset ('lange_gaussians3') has no size" in str(caught.value) and "n: [100, 300]" in str(caught.value)


def test_an_unknown_kind_without_n_is_called_unknown_not_unsized():
    with pytest.raises(ordercube.ConfigError) as caught:
        parse_config({"seed": 3, "k": [2, 3], "datasets": [{"name": "g", "kind": "lange_gausians3"}],
                      "methods": [{"algorithm": "kmeans", "criteria": ["lange"]}]})
    assert caught.value.key == "datasets[0].kind"
    assert "unknown dataset 'lange_gausians3'" in str(caught.value) and "lange_gaussians3" in str(caught.value)


@pytest.mark.parametrize("name", ["quickstart.yaml", "lange2002_table1.yaml", "frank_kmeans.yaml"])
def test_a_config_that_gives_every_key_is_unchanged(name):
    raw = read_yaml(CONFIGS / name)
    config = load_config(CONFIGS / name)
    assert config.defaults == {}
    assert dict(config.raw) == {**raw, "datasets": raw["datasets"]}  # nothing filled in
    assert (config.name, config.seed, config.resamples) == (raw["name"], raw["seed"], raw["resamples"])
    for method, entry in zip(config.methods, raw["methods"]):
        assert (method.name, method.predictor, list(method.criteria)) == (
            entry["name"], entry.get("predictor", "none"), [c if isinstance(c, str) else next(iter(c))
                                                            for c in entry["criteria"]])


THREE_MISTAKES = {"name": "bad", "seed": -1, "k": [2, 3], "resamples": "many",
                  "datasets": [{"name": "g", "kind": "lange_gaussians3", "n": [60]}],
                  "methods": [{"algorithm": "kmeans", "criteria": ["lnage"]}]}


def test_three_independent_mistakes_in_one_error():
    with pytest.raises(ordercube.ConfigErrors) as caught:
        parse_config(THREE_MISTAKES)
    keys = [error.key for error in caught.value.errors]
    assert keys == ["seed", "resamples", "methods[0].criteria[0]"]
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("3 problems") and len(lines) == 4
    assert "got -1" in lines[1] and "'many'" in lines[2] and "'lnage'" in lines[3]
    assert isinstance(caught.value, ordercube.ConfigError) and caught.value.key == "seed"


def test_one_mistake_is_the_plain_error():
    with pytest.raises(ordercube.ConfigError) as caught:
        parse_config({**THREE_MISTAKES, "seed": 1, "resamples": 5})
    assert type(caught.value) is ordercube.ConfigError
    assert str(caught.value).startswith("methods[0].criteria[0]: unknown criterion 'lnage'")


def test_the_cli_prints_every_mistake_and_exits_2(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(THREE_MISTAKES))
    done = cli_in_process("validate", str(path))
    assert done.returncode == 2
    err = done.stderr
    for key in ("seed:", "resamples:", "methods[0].criteria[0]:"):
        assert key in err
    assert "Traceback" not in err


def test_the_cli_prints_the_defaults_and_the_data_line(tmp_path):
    np.savetxt(tmp_path / "points.csv", _points(30), delimiter=",", header="a,b", comments="")
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({
        "k": [2, 3], "datasets": [{"name": "pts", "kind": "file", "path": "points.csv"}],
        "methods": [{"algorithm": "kmeans", "criteria": ["lange"]}]}))
    done = cli_in_process("validate", "mine.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    seed = int(re.search(r"write seed: (\d+) in the config to repeat the run", out).group(1))
    assert f"seed={seed}" in out and "name='mine'" in out and "resamples=20" in out
    assert "data pts: 30 rows x 2 features" in out


def test_sweep_and_validate_give_the_data_line(tmp_path, caplog):
    config = {"name": "s", "seed": 4, "k": [2, 3], "resamples": 3,
              "methods": [{"algorithm": "kmeans", "criteria": ["lange"]}]}
    data = {"pts": _points(30)}
    plan = ordercube.validate(config, data=data, out=tmp_path / "v.zarr")
    assert plan.config.data_lines == ["data pts: 30 rows x 2 features from the array datasets[0].data; true k unknown "
                                      "(failure rates need labels or true_k)"]
    with caplog.at_level(logging.INFO, logger="ordercube"):
        cube = ordercube.sweep({**config, "datasets": []}, data=data, out=tmp_path / "s.zarr", workers=0)
    assert plan.config.data_lines[0] in caplog.messages
    assert "defaults: methods[0].name='kmeans', methods[0].predictor='nearest_centroid'" in caplog.text
    assert int(cube.sizes["trial"]) == 3


def test_the_drawn_seed_is_recorded_in_the_cube(tmp_path):
    config = {"k": [2, 3], "resamples": 2, "methods": [{"algorithm": "kmeans", "criteria": ["lange"]}], "datasets": []}
    cube = ordercube.sweep(config, data={"pts": _points(30)}, out=tmp_path / "a.zarr", workers=0)
    stored = json.loads(cube.attrs["ordercube_config"])
    assert isinstance(stored["seed"], int) and stored["name"] == "study"
    again = ordercube.sweep({**config, "seed": stored["seed"]}, data={"pts": _points(30)}, out=tmp_path / "b.zarr",
                            workers=0)
    assert cube["lange"].values.tobytes() == again["lange"].values.tobytes()
    assert cube["lange_random"].values.tobytes() == again["lange_random"].values.tobytes()
