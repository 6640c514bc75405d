from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
STUBS = Path(__file__).resolve().parent / "stubs"
# The installed command, run as a user runs it. Not `python -m pipeline.cli`: a KeyboardInterrupt that passed
# through exec() of a string (scipy's array_api_compat imports numpy so), even one that main() caught, makes a
# `python -m` process end by SIGINT (returncode -2) instead of exiting with main()'s 130: CPython's runpy path
# checks a flag that exec() sets and nothing clears (3.11-3.13). A script's sys.exit(130) is kept.
ORDERCUBE = str(Path(sys.executable).with_name("ordercube"))


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the ``ordercube`` CLI in a subprocess (the way a user does)."""
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STUBS), str(REPO)]), **(env or {})}
    return subprocess.run([ORDERCUBE, *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout)


def cli_in_process(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
                   timeout: float | None = None) -> subprocess.CompletedProcess:
    """The ``ordercube`` CLI's ``main`` called in this process, its output captured: for the many checks of
    bad input, which end before a cluster starts (a subprocess costs ~2 s of imports each; this, milliseconds).
    ``tests/test_bad_input.py`` runs a sample of the same cases through real processes.

    What a user's process would do on its way out is kept apart: the signal handlers and warning display
    that ``main`` installs are restored, and ``env`` is set only for the call. An exception that ``main``
    lets through (a traceback, for a user) propagates and fails the test. ``timeout`` is accepted for
    symmetry with :func:`cli` and not enforced.
    """
    from pipeline.cli import main

    if str(STUBS) not in sys.path:  # where a user's PYTHONPATH would find the test plugins
        sys.path.insert(0, str(STUBS))
    out, err = io.StringIO(), io.StringIO()
    saved = warnings.showwarning, signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    saved_env = dict(os.environ)
    os.environ.update(env or {})
    try:
        # Warnings shown as a user sees them (main prints ours as one line), not raised as pytest's config asks.
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.chdir(cwd or Path.cwd()), \
                warnings.catch_warnings():
            warnings.simplefilter("always")
            # ResourceWarnings are off for a user (Python's default); here they would name an earlier test's leak.
            warnings.filterwarnings("ignore", category=ResourceWarning)
            try:
                code = main(list(args))
            except SystemExit as exit_:  # argparse's errors
                code = int(exit_.code or 0)
    finally:
        warnings.showwarning = saved[0]
        signal.signal(signal.SIGINT, saved[1])
        signal.signal(signal.SIGTERM, saved[2])
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


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
