"""Config parsing: ranges, per-dataset sample sizes, defaults, identity."""

from __future__ import annotations

import pytest

from conftest import REPO, small_config
from ordercube.pipeline.config.study import load_config, parse_config
from ordercube.pipeline.errors import ConfigError


def test_k_range_and_geometric_n_grid():
    config = parse_config(small_config(k={"from": 2, "to": 10, "step": 4}, n={"from": 64, "to": 1024, "factor": 4}))
    assert config.k == (2, 6, 10)
    assert config.datasets[0].n == (64, 256, 1024)
    assert parse_config(small_config(n={"from": 64, "to": 131072})).datasets[0].n[-1] == 131072  # factor 2


def test_per_dataset_n_overrides_the_global_one_and_defaults_apply():
    raw = small_config()
    raw["datasets"][1]["n"] = [12]
    config = parse_config(raw)
    assert [d.n for d in config.datasets] == [(40, 80), (12,)]
    assert config.out == "results/small.zarr" and config.baseline_draws == 200
    assert parse_config(raw, out="elsewhere.zarr").out == "elsewhere.zarr"


def test_identity_ignores_execution_settings_but_not_parameters():
    base = parse_config(small_config())
    assert parse_config(small_config(execution={"trials_per_chunk": 2})).fingerprint == base.fingerprint
    changed = small_config()
    changed["methods"][0]["params"] = {"n_init": 4}
    assert parse_config(changed).fingerprint != base.fingerprint


@pytest.mark.parametrize("name", ["quickstart", "shamir_tishby2007_fig1"])
def test_shipped_configs_are_valid(name):
    config = load_config(REPO / "configs" / f"{name}.yaml")
    assert all(d.true_k == 3 for d in config.datasets)


def test_shipped_real_data_config_is_valid(shared):
    config = load_config(REPO / "configs" / "yeast_cdc28.yaml")
    assert config.datasets[0].n == (100, 200, 300, 400, 600, 796) and config.datasets[0].true_k == 5


def test_errors_carry_the_key_path():
    with pytest.raises(ConfigError) as error:
        parse_config(small_config(n={"from": 64, "to": 32}))
    assert error.value.key == "n.to"


def test_shipped_figure2_config_is_valid():
    config = load_config(REPO / "configs" / "shamir_tishby2007_fig2.yaml")
    assert {d.name: d.true_k for d in config.datasets} == {"gaussians5": 5, "gaussians5_isolated": 5, "rings2": 2}
    assert {m.name: m.predictor for m in config.methods} == {"kmeans": "nearest_centroid", "spectral": "nearest_neighbor"}


@pytest.mark.parametrize(("change", "key"), [
    ({"methods": [{"name": "m", "algorithm": "kmeans", "params": {"n_init": 0}, "predictor": "nearest_centroid",
                   "criteria": ["lange"]}]}, "methods[0].params.n_init"),
    ({"methods": [{"name": "m", "algorithm": "kmeans", "predictor": "nearest_centroid",
                   "criteria": ["lange", {"gap": {"d_power": 3}}]}]}, "methods[0].criteria[1].gap.d_power"),
    ({"methods": [{"name": "m", "algorithm": "sklearn.cluster.Birch", "params": {"threshold": "/tmp"},
                   "predictor": "nearest_centroid", "criteria": ["lange"]}]}, "methods[0].params.threshold"),
    ({"execution": {"task_seconds": float("nan")}}, "execution.task_seconds"),
    ({"baseline_draws": 100_001}, "baseline_draws"),
])
def test_range_errors_carry_the_parameter_path(change, key):
    with pytest.raises(ConfigError) as error:
        parse_config(small_config(**change))
    assert error.value.key == key


def test_checked_step_parameters_are_stored_as_given_so_cube_identities_do_not_change(tmp_path):
    """Validating a step must not fill in its defaults: the dataset's identity (and every existing cube's) stays."""
    (tmp_path / "d.csv").write_text("a,b\n" + "".join(f"{i},{i % 5}\n" for i in range(1, 41)))
    raw = small_config(methods=[{"name": "m", "algorithm": "kmeans", "predictor": "nearest_centroid",
                                 "criteria": ["lange"]}],
                       datasets=[{"name": "f", "kind": "file", "path": "d.csv",
                                  "preprocess": ["standardize", {"clip": {"floor": -1}}]}], n=[16])
    config = parse_config(raw, base=tmp_path)
    assert config.datasets[0].identity["preprocess"] == [["standardize", {}], ["clip", {"floor": -1}]]
