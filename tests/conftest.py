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
# The installed command, run as a user runs it. Not `python -m ordercube.pipeline.cli`: a KeyboardInterrupt that passed
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
    from ordercube.pipeline.cli import main

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


# The papers' data are not in the repository: CI has them beside it (../shared/datasets), a fresh clone has not.
# Every test that reads them asks through papers_data / catalog_data (or the ``shared`` fixture), which skip naming
# what is missing, and carries the ``papers_data`` mark (tests/test_fresh_clone.py runs them without the folder).
PAPERS_MARK = "papers_data: reads the papers' data (../shared/datasets); skipped, naming the files, where they are not"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", PAPERS_MARK)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "shared" in getattr(item, "fixturenames", ()):
            item.add_marker("papers_data")


def papers_data(*files: str) -> Path:
    """``SHARED / "datasets"``, after checking that each of ``files`` (``DATASET/FILE``) is in it; else the test is
    skipped, naming every missing file."""
    folder = SHARED / "datasets"
    missing = [str(folder / name) for name in files or ("",) if not (folder / name).exists()]
    if missing:
        pytest.skip(f"the papers' data are not on this machine: {', '.join(missing)} missing (they live in "
                    "../shared/datasets beside the repository)")
    return folder


def catalog_data(config: object) -> object:
    """``config`` (a parsed YAML document), after checking that each ``catalog:`` file it names is on this machine
    ($ORDERCUBE_DATA or ../shared/datasets: a test never downloads); else the test is skipped, naming them."""
    from ordercube.pipeline.data import catalog

    def names(value: object) -> list[str]:
        if isinstance(value, str):
            return [value.removeprefix(catalog.PREFIX)] if catalog.is_catalog(value) else []
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        return [name for item in items for name in names(item)]

    folders = [Path(os.environ["ORDERCUBE_DATA"])] if os.environ.get("ORDERCUBE_DATA") else []
    folders.append(catalog.SHARED)
    missing = [name for name in dict.fromkeys(names(config)) if not any((folder / name).is_file() for folder in folders)]
    if missing:
        pytest.skip(f"the papers' data are not on this machine: {', '.join(catalog.PREFIX + name for name in missing)} "
                    f"missing (looked in {', '.join(map(str, folders))}; tests never download)")
    return config


@pytest.fixture
def shared() -> Path:
    """The folder holding ``datasets/`` (the papers' data), or the test is skipped naming it."""
    return papers_data().parent
