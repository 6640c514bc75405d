"""ordercube's consensus scheme side by side with the PyPI package consensusclustering 0.2.4.

The slow test runs both on the generated three-group set of ``benchmarks/consensus_side_by_side.py`` at a
modest H and checks that PAC per k (Senbabaoglu et al. 2014) agrees within the stated Monte Carlo error and
that both choose the same k by the smallest PAC. The quick test runs the benchmark script's quick mode as a
user would and checks its figures against the cube it wrote.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "consensus_side_by_side.py"


def _bench():
    spec = importlib.util.spec_from_file_location("consensus_side_by_side", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _peer():
    return pytest.importorskip(
        "consensusclustering",
        reason="consensusclustering is not installed (pip install consensusclustering==0.2.4, in the test extra)")


@pytest.mark.slow
def test_pac_and_k_hat_agree_with_consensusclustering(tmp_path: Path) -> None:
    cc = _peer()
    from sklearn.cluster import AgglomerativeClustering

    import ordercube
    from ordercube.pipeline.reduce.assignments import reduced_scores

    bench = _bench()
    data, labels = bench.write_gaussian3(tmp_path)
    X = np.loadtxt(data, delimiter=",", skiprows=1)
    resamples, ks = 200, list(range(2, 7))
    config = {"name": "peers", "seed": 11, "k": {"from": ks[0], "to": ks[-1]}, "resamples": resamples,
              "datasets": [{"name": "gaussian3", "kind": "file", "path": str(data),
                            "labels": {"path": str(labels), "column": "group"}, "n": ["all"]}],
              "methods": [{"name": "hc", "algorithm": "agglomerative", "params": {"linkage": "average"},
                           "scheme": "consensus", "scheme_params": {"p_item": 0.8}, "criteria": ["pac"]}]}
    cube = ordercube.sweep(config, out=str(tmp_path / "peers.zarr"), workers=0)
    scores = reduced_scores(cube).isel(dataset=0, n=0, model=0)

    theirs = cc.ConsensusClustering(AgglomerativeClustering(linkage="average"), min_clusters=ks[0],
                                    max_clusters=ks[-1], n_resamples=resamples, resample_frac=0.8, rng=5)
    theirs.fit(X)
    pac_theirs = np.array([bench.pac_of(theirs.consensus_k(k)) for k in ks])
    pac_ours = scores["pac"].sel(k=ks).values
    # the bootstrap over resamples gives PAC's standard error; the peer's PAC (same H, same design) has the same one
    se = scores["pac_boot"].sel(k=ks).std("replicate", ddof=1).values
    pairs = X.shape[0] * (X.shape[0] - 1) / 2
    allowed = bench.AGREE * math.sqrt(2.0) * se + 1.0 / pairs
    assert np.all(np.abs(pac_ours - pac_theirs) <= allowed), (pac_ours, pac_theirs, allowed)
    assert ks[int(np.argmin(pac_ours))] == ks[int(np.argmin(pac_theirs))] == 3
    k_hat = ordercube.select_k(cube)["pac"].values.ravel()
    assert k_hat.tolist() == [3]


@pytest.mark.slow  # about 2 min on a loaded 2-core machine: three processes, each importing the stack
def test_benchmark_quick_mode_runs(tmp_path: Path) -> None:
    _peer()
    out = tmp_path / "figures.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--datasets", "gaussian3", "--peer-jobs", "0",
                           "--json", str(out), "--keep", str(tmp_path / "work")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = json.loads(out.read_text())
    ours, theirs = result["ours"], result["theirs"]
    assert ours["ks"] == theirs["ks"] == [2, 3, 4, 5]
    # the reduction's PAC is the one recomputed from the stored assignments with NumPy alone
    np.testing.assert_allclose(ours["pac"], ours["pac_recomputed"], rtol=0, atol=1e-12)
    assert all(lo <= pac <= hi for lo, pac, hi in zip(ours["pac_lo"], ours["pac"], ours["pac_hi"]))
    assert result["seconds"]["theirs"] > 0 and result["seconds"]["ordercube"] > 0
    assert "ratio theirs/ours" in done.stdout
