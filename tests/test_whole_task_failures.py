"""A task that fails as a whole on a worker (an algorithm the driver knows and the workers do not: a plug-in
registered in the driver's process only) is cut into its smallest pieces, and a piece that still fails is recorded
as failed cells: the sweep ends. For an algorithm that fits every k of a trial at once the smallest piece is a trial
of several cells, and such a piece was cut again into itself, resubmitted without end (27,000 failures in 5 minutes,
the driver never returned)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO

MODULE = textwrap.dedent('''
    import numpy as np
    from ordercube.plugin import Clusterer, register_algorithm

    def cluster_many(X, ks, rng):  # one sort serves every k (as a dynamic programme would)
        order = np.argsort(X[:, 0], kind="stable")
        out = {}
        for k in ks:
            labels = np.empty(len(X), dtype=np.int64)
            labels[order] = np.arange(len(X)) * k // len(X)
            out[k] = labels
        return out

    def cluster(X, k, rng):
        return cluster_many(X, [k], rng)[k]

    register_algorithm(Clusterer("driver_only_slices", cluster, cluster_many=cluster_many))
''')

SCRIPT = textwrap.dedent('''
    import sys
    sys.path.insert(0, "driver-only")  # on the driver's path only: the workers never see the module
    import driver_only  # noqa: F401  (registers the algorithm in this process)
    import ordercube

    config = {"name": "whole", "seed": 3, "n": [60], "k": [2, 3, 4], "resamples": 4,
              "datasets": [{"name": "gauss", "kind": "lange_gaussians3"}],
              "methods": [{"name": "slices", "algorithm": "driver_only_slices", "predictor": "nearest_centroid",
                           "criteria": ["lange"]}],
              "execution": {"trials_per_chunk": 4}}
    cube = ordercube.sweep(config, out="whole.zarr", workers=1, progress=False)
    status = cube["status"].values.ravel()
    reason = str(cube["reason"].values.ravel()[0])
    print("cells", status.size, "failed", int((status == 2).sum()), "reason", reason[:100])
''')


def test_a_trial_of_a_joint_algorithm_failing_on_the_workers_is_recorded_failed_and_the_sweep_ends(tmp_path):
    (tmp_path / "driver-only").mkdir()
    (tmp_path / "driver-only" / "driver_only.py").write_text(MODULE)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("ORDERCUBE_PLUGINS", None)
    try:
        done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("the sweep did not end within 240 s: a piece that cannot be cut smaller is resubmitted")
    assert done.returncode == 0, done.stderr[-2000:]
    line = done.stdout.strip().splitlines()[-1]
    assert line.startswith("cells 12 failed 12 reason "), line  # 3 k x 4 trials, each recorded failed
    assert "unknown algorithm 'driver_only_slices'" in line, line
