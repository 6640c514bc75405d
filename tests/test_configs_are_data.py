"""A config cannot run code or write outside --out: scikit-learn parameters are plain data the class documents.

The attack this guards against: ``sklearn.cluster.AgglomerativeClustering`` with ``params: {memory: DIR}`` made joblib
write pickles to DIR, and a swapped pickle was executed on the next run. One test per refused kind, each
through the real CLI: exit 2, one line naming the key, the value and the fix, and nothing written.
"""

from __future__ import annotations

import json

import pytest

from conftest import cli_in_process, write_config

AGGLOMERATIVE = "sklearn.cluster.AgglomerativeClustering"


def _config(tmp_path, algorithm: str, params: dict) -> dict:
    return {"name": "data", "seed": 3, "n": [40], "k": [2, 3], "resamples": 2,
            "datasets": [{"name": "g", "kind": "lange_gaussians3"}],
            "methods": [{"name": "m", "algorithm": algorithm, "params": params, "predictor": "nearest_centroid",
                         "criteria": ["lange"]}],
            "execution": {"task_seconds": 0.01}}


# kind -> (algorithm, params given DIR, fragments of the message)
REFUSED = {
    "joblib memory path": (AGGLOMERATIVE, lambda cache: {"memory": str(cache)},
                           ["methods[0].params.memory", "DIR", "joblib pickles", "outside --out", "remove it"]),
    "joblib memory as a mapping": (AGGLOMERATIVE, lambda cache: {"memory": {"location": str(cache)}},
                                   ["methods[0].params.memory", "'location'", "remove it"]),
    "a string that is not a documented choice": (AGGLOMERATIVE, lambda cache: {"linkage": str(cache)},
                                                 ["methods[0].params.linkage", "DIR", "not one of the documented "
                                                  "choices ['average', 'complete', 'single', 'ward']"]),
    "a nested list object": (AGGLOMERATIVE, lambda cache: {"connectivity": [[0, 1], [1, 0]]},
                             ["methods[0].params.connectivity", "[[0, 1], [1, 0]]", "not plain data", "remove it"]),
    "a nested mapping object": ("sklearn.cluster.KMeans", lambda cache: {"init": {"__class__": "os.system"}},
                                ["methods[0].params.init", "'__class__'", "not plain data",
                                 "use one of ['k-means++', 'random']"]),
    "a callable-ish string": (AGGLOMERATIVE, lambda cache: {"metric": "os.system"},
                              ["methods[0].params.metric", "'os.system'", "documented choices"]),
    "a free string where the class documents none": ("sklearn.cluster.Birch", lambda cache: {"threshold": str(cache)},
                                                     ["methods[0].params.threshold", "DIR", "a free string",
                                                      "documents no choices"]),
    "parallel jobs": ("sklearn.cluster.SpectralClustering", lambda cache: {"n_jobs": 4},
                      ["methods[0].params.n_jobs", "4", "memory-mapped files outside --out", "use null or 1"]),
    "random_state": ("sklearn.cluster.KMeans", lambda cache: {"random_state": 42},
                     ["methods[0].params.random_state", "42", "cell's random stream"]),
}


@pytest.mark.parametrize("kind", REFUSED)
def test_estimator_parameter_that_is_not_data_is_refused_and_nothing_is_written(tmp_path, kind):
    algorithm, params, expected = REFUSED[kind]
    cache, cube = tmp_path / "DIR", tmp_path / "cube.zarr"
    config = write_config(tmp_path / "attack.yaml", **_config(tmp_path, algorithm, params(cache)))
    for command in (["validate", str(config)], ["run", str(config), "--out", str(cube), "--workers", "1"]):
        result = cli_in_process(*command)
        assert result.returncode == 2, (kind, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr and "dask dashboard" not in result.stdout
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        for fragment in expected:
            assert fragment in lines[0], (kind, fragment, lines[0])
    assert not cache.exists() and not cube.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attack.yaml"]


def test_documented_values_still_run(tmp_path):
    """The allow-list is not a ban: documented choices, numbers, booleans and null reach the estimator."""
    params = {"linkage": "average", "metric": "manhattan", "compute_full_tree": "auto", "distance_threshold": None,
              "compute_distances": False}
    config = write_config(tmp_path / "ok.yaml", **_config(tmp_path, AGGLOMERATIVE, params))
    cube = tmp_path / "cube.zarr"
    result = cli_in_process("run", str(config), "--out", str(cube), "--workers", "0", "--no-progress")
    assert result.returncode == 0, result.stderr
    status = cli_in_process("status", str(cube), "--json")
    assert json.loads(status.stdout) == {"total": 4, "ok": 4, "failed": 0, "infeasible": 0, "crashed": 0, "pending": 0,
                                         "skipped": 0}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cube.zarr", "ok.yaml"]
