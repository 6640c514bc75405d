"""The pure helpers of benchmarks/first_analyses.py: the design each tool is given, and the loop's criteria."""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "first_analyses.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("first_analyses", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["first_analyses"] = module
    spec.loader.exec_module(module)
    return module


def test_consensus_design_sets_the_shared_design_and_leaves_the_input(bench):
    raw = yaml.safe_load((BENCH.parents[1] / "configs" / "consensus_colon.yaml").read_text())
    before = yaml.safe_dump(raw)
    out = bench.consensus_design(raw, resamples=1000, k_max=10, p_item=0.8)
    assert yaml.safe_dump(raw) == before
    assert out["resamples"] == 1000 and out["k"] == {"from": 2, "to": 10}
    (method,) = out["methods"]
    assert method["scheme_params"] == {"p_item": 0.8, "p_feature": 1.0, "references": 0}
    assert method["criteria"] == ["consensus_area", "pac", "cluster_consensus"]
    assert method["params"] == {"linkage": "average"} and method["algorithm"] == "agglomerative"


@pytest.mark.parametrize("name", ["colon", "yeast", "gaussian3"])
def test_written_config_parses_to_the_design(bench, tmp_path, name):
    from ordercube.pipeline.config.study import parse_config

    path = bench.consensus_config(name, tmp_path, resamples=100)
    raw = yaml.safe_load(path.read_text())
    parsed = parse_config(raw, base=path.parent, out=str(tmp_path / "x.zarr"))
    assert parsed.resamples == 100
    assert [int(k) for k in parsed.k] == list(range(2, 11))
    assert raw["methods"][0]["scheme_params"]["references"] == 0
    assert Path(bench._dataset_path(path)).is_file()


def test_estimate_regex(bench):
    assert bench.estimate_of("data X: ...\nestimated 3.2 s in this process on 1 thread(s) (pilot of 36 cells: 0.5 s)\n") == 3.2
    assert bench.estimate_of("estimated 1.5 min on 2 local worker(s) (cost model)") == 90.0
    assert bench.estimate_of("estimated 2.0 h on 2 local worker(s)") == 7200.0
    assert bench.estimate_of("cells 180, tasks 4") is None


def test_choose_k_script_with_and_without_guard(bench, tmp_path):
    plain = bench.choose_k_script("iris", tmp_path / "x.zarr", tmp_path / "r.json", guard=False)
    guarded = bench.choose_k_script("iris", tmp_path / "x.zarr", tmp_path / "r.json", guard=True)
    assert "__main__" not in plain and 'if __name__ == "__main__":' in guarded
    top = [type(node).__name__ for node in ast.parse(guarded).body]
    assert top[-1] == "If" and "Assign" not in top  # every call under the guard
    assert "ordercube.choose_k(X, seed=0" in ast.unparse(ast.parse(plain))


def test_matched_disagreement_and_strength_by_hand(bench):
    a = np.array([0, 0, 1, 1, 2, 2])
    assert bench._matched_disagreement(a, (a + 1) % 3, 3) == 0.0  # a relabelling: no disagreement
    assert bench._matched_disagreement(a, np.array([0, 0, 1, 1, 2, 0]), 3) == pytest.approx(1 / 6)
    # test cluster 0 (3 points) predicted 0, 0, 1: 2 of its 6 ordered pairs together; cluster 1: 2 of 2
    assert bench._strength(np.array([0, 0, 0, 1, 1]), np.array([0, 0, 1, 1, 1]), 2) == pytest.approx(1 / 3)


def test_loop_finds_three_well_separated_groups(bench):
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(c, 0.3, size=(30, 2)) for c in ((0, 0), (6, 0), (0, 6))])
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # as the benchmark pins its loop
        hats = bench.sklearn_loop(X, jobs=1, resamples=2, ks=range(2, 5), references=5)
    assert hats == {"lange": 3, "prediction_strength": 3, "gap": 3, "silhouette": 3}


def test_unknown_dataset_has_no_r_preprocessing(bench):
    with pytest.raises(ValueError, match="gaussian3"):
        bench.r_preprocess("iris")


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed")
@pytest.mark.parametrize("name", ["colon", "yeast"])
def test_r_preprocessing_gives_ordercubes_matrix(bench, tmp_path, name):
    """R reads and preprocesses the CSV into the very matrix ordercube's reader gives."""
    config = bench.consensus_config(name, tmp_path, resamples=10)
    X = bench.side.matrix_of(config)
    out = tmp_path / "x.csv"
    script = (f"path <- '{bench._dataset_path(config)}'\n{bench.r_preprocess(name)}"
              f"write.table(x, '{out}', sep = ',', row.names = FALSE, col.names = FALSE)\n")
    done = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    np.testing.assert_allclose(np.loadtxt(out, delimiter=","), X, rtol=1e-9, atol=1e-9)
