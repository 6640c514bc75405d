"""What a process computes with: the code of ``tasks`` and the versions of the libraries it calls.

The driver compares its own with every worker's when it connects to a running scheduler: a worker
with other code or other library versions would write cells that differ from the ones the same
config gives elsewhere (results are reproducible bit for bit only with the same software).
Kept free of heavy imports: workers run it.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import sys
from importlib import metadata
from pathlib import Path

LIBRARIES = ("numpy", "scipy", "scikit-learn", "numba", "dask", "distributed")


def tasks_code_digest() -> str:
    """sha256 (first 12 hex digits) over the source files (Python and Cython) of the ``tasks`` package, by relative
    path."""
    import ordercube.tasks as tasks

    root = Path(tasks.__file__).parent
    digest = hashlib.sha256()
    for path in sorted([*root.rglob("*.py"), *root.rglob("*.pyx")]):  # the compiled kernels' sources too
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def _dist_info_version(name: str) -> str | None:
    """The version in the name of ``name``'s first ``NAME-VERSION.dist-info`` folder on ``sys.path`` (as pip finds
    it: ``metadata.version`` parses the whole METADATA file as an e-mail, 4-5 ms a package, 38 ms of a small
    sweep's start), or None where there is none (then ``metadata.version`` decides)."""
    prefix = re.sub(r"[-_.]+", "_", name).lower() + "-"
    for folder in sys.path:
        try:
            entries = os.listdir(folder or ".")
        except OSError:
            continue
        for entry in entries:
            if entry.endswith(".dist-info") and entry.lower().startswith(prefix):
                return entry[len(prefix):-len(".dist-info")]
    return None


def package_versions(names: tuple[str, ...]) -> dict[str, str]:
    """The installed version of each distribution in ``names`` ("not installed" when absent)."""
    found = {}
    for name in names:
        try:
            found[name] = _dist_info_version(name) or metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def software() -> dict[str, str]:
    """The ``tasks`` code digest, the Python version and the versions of the libraries cells depend on."""
    return {"ordercube tasks code": tasks_code_digest(), "python": platform.python_version(),
            **package_versions(LIBRARIES)}


def skew(here: dict[str, str], workers: dict[str, dict[str, str]]) -> str | None:
    """The first difference between this process's software and a worker's, as one sentence, or None."""
    for address, theirs in sorted(workers.items()):
        for name, version in here.items():
            if theirs.get(name) != version:
                return f"worker {address} has {name} {theirs.get(name)} but this driver has {version}"
    return None
