from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
STUBS = Path(__file__).resolve().parent / "stubs"


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the ``ordercube`` CLI in a subprocess (the way a user does)."""
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)]), **(env or {})}
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout)


def write_config(path: Path, **config) -> Path:
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def small_config(**overrides) -> dict:
    """Two synthetic datasets, k-means with both criteria: a few hundred cells, seconds to run."""
    config = {
        "name": "small",
        "seed": 7,
        "n": [40, 80],
        "k": [2, 3, 4],
        "resamples": 6,
        "datasets": [{"name": "gauss", "kind": "lange_gaussians3"},
                     {"name": "mix", "kind": "shamir_mixture1d", "params": {"mu": 6.0}}],
        "methods": [{"name": "km", "algorithm": "kmeans", "params": {"n_init": 3},
                     "predictor": "nearest_centroid", "criteria": ["lange", "pairwise"]}],
        "execution": {"trials_per_chunk": 4, "task_seconds": 0.01},
    }
    config.update(overrides)
    return config


@pytest.fixture
def shared() -> Path:
    if not (SHARED / "datasets").is_dir():
        pytest.skip("../shared/datasets is not beside the repository")
    return SHARED
