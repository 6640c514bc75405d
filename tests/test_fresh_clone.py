"""The test line of the README (and docs/getting-started/install.md) on a fresh clone: no ``../shared`` beside the
repository, so every test that reads the papers' data skips, each naming what is missing, and none fails or tries a
download.

The repository's tracked files (as they are in the working tree) and its compiled kernels are copied into a
temporary folder with nothing beside it, and pytest runs there in a subprocess over every test marked
``papers_data`` (the ``shared`` fixture marks its users; the others are marked by hand and ask through
``conftest.papers_data`` or ``conftest.catalog_data``). CI, which has ``../shared``, runs the same tests for real.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

SKIP_LINE = re.compile(r"^SKIPPED \[\d+\] (?P<where>\S+): (?P<reason>.*)$")
# Tests that built ../shared paths themselves and failed on a fresh clone before they asked through the helper.
ONCE_FAILED = ("test_colon_cube_equals_the_kernels_on_the_same_trial",
               "test_report_prints_table_one_with_the_published_values",
               "test_classifier_cubes_are_the_same_bits_in_this_process_and_on_two_workers")


def fresh_clone(into: Path) -> Path:
    """The tracked files of the repository as they are now, and the kernels pip compiled, copied to ``into``."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, text=True, timeout=60)
    if listed.returncode != 0:
        pytest.skip(f"not a git checkout ({listed.stderr.strip()}): no clone to make")
    compiled = [path.relative_to(REPO) for path in (REPO / "tasks").rglob("*.so")]
    if not compiled:
        pytest.skip("no compiled kernels (tasks/*.so) in the repository: install it with pip install -e to copy them")
    for name in [*filter(None, listed.stdout.split("\0")), *map(str, compiled)]:
        source = REPO / name
        if source.is_file():  # a tracked file deleted in the working tree is not in the clone either
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def installed_view(clone: Path, into: Path) -> Path:
    """A folder that imports the clone as an install lays it out, for ``PYTHONPATH``: ``ordercube/`` with the
    clone's ``pipeline/`` and ``tasks/`` inside it (links), so that nothing is imported from the repository."""
    package = into / "ordercube"
    package.mkdir(parents=True)
    for entry in (clone / "ordercube").iterdir():
        (package / entry.name).symlink_to(entry)
    for folder in ("pipeline", "tasks"):
        (package / folder).symlink_to(clone / folder, target_is_directory=True)
    return into


@pytest.mark.timeout(420)
def test_without_the_shared_folder_every_test_of_the_papers_data_skips_naming_what_is_missing(tmp_path):
    clone = fresh_clone(tmp_path / "nothing-beside" / "ordercube")
    assert not (clone.parent / "shared").exists()
    env = {key: value for key, value in os.environ.items() if not key.startswith("ORDERCUBE_")}
    # A download attempt fails at once (a closed local port) instead of reaching the network: tests never download.
    env.update(ORDERCUBE_CACHE=str(tmp_path / "empty-cache"), ORDERCUBE_MIRROR="http://127.0.0.1:9",
               PYTHONPATH=str(installed_view(clone, tmp_path / "site")), PYTHONSAFEPATH="1")  # not the clone's own folder
    try:
        result = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-rs", "-m", "papers_data",
                                 "tests"], cwd=clone, env=env, capture_output=True, text=True, timeout=360)
    except subprocess.TimeoutExpired as timeout:
        pytest.fail(f"pytest on the clone did not finish in {timeout.timeout} s: {timeout.stdout}")
    summary = result.stdout.strip().splitlines()[-1]
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "failed" not in summary and "error" not in summary and "passed" not in summary, summary
    skips = [match for line in result.stdout.splitlines() if (match := SKIP_LINE.match(line))]
    skipped = int(re.search(r"(\d+) skipped", summary).group(1))
    assert skipped >= 20 and sum(1 for _ in skips) >= 1, result.stdout[-3000:]
    for skip in skips:
        reason = skip["reason"]
        assert reason.startswith("the papers' data are not on this machine: ") and " missing " in reason, skip.group(0)
        named = reason.removeprefix("the papers' data are not on this machine: ").split(" missing ")[0]
        assert named.startswith(str(clone.parent / "shared")) or named.startswith("catalog:"), skip.group(0)
    assert not (tmp_path / "empty-cache").exists()  # nothing was fetched
    outcomes = dict(re.findall(r"^tests/\S+::(\w+)(?:\[\S*\])? (PASSED|FAILED|SKIPPED|ERROR)", result.stdout, re.M))
    assert all(outcomes.get(name) == "SKIPPED" for name in ONCE_FAILED), outcomes
