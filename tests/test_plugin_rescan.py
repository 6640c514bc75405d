"""Plug-ins on running processes: a name no registry holds rescans the installed entry points once (as xarray's
``refresh_engines``) before it fails, again only after something was installed on the path, and the failure names
the plug-ins loaded and what to do."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO

LATE_PLUGIN = '''
from ordercube.plugin import Reader, TableRead, register_reader

register_reader(Reader("late", lambda file: TableRead(values=[[1.0, 2.0]]), (".late",)))
'''


def test_a_plugin_installed_after_the_first_scan_is_found_by_the_rescan_of_a_lookup(tmp_path):
    site = tmp_path / "site"
    site.mkdir()  # on the path from the start, empty: as a worker's environment before the plug-in is installed
    code = textwrap.dedent(f"""
        from pathlib import Path
        from ordercube.tasks.plugins import load, loaded
        from ordercube.tasks.readers import get_reader
        from ordercube.tasks.datasets import get_synthetic

        assert load() == ()  # the first scan: no plug-in installed
        try:
            get_reader("late")
        except ValueError as error:
            print("before:", error)
        site = Path({str(site)!r})  # now installed while the process runs, as pip writes a distribution
        info = site / "late_reader-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\\nName: late-reader\\nVersion: 0.1\\n")
        (info / "entry_points.txt").write_text("[ordercube.plugins]\\nlate = late_reader\\n")
        (site / "late_reader.py").write_text({LATE_PLUGIN!r})
        reader = get_reader("late")
        print("found:", reader.name, reader.suffixes, [(p.distribution, p.registered) for p in loaded()])
        try:
            get_synthetic("never_installed")
        except ValueError as error:
            print("unknown:", error)
        """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    env.pop("ORDERCUBE_PLUGINS", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    before, found, unknown = done.stdout.splitlines()
    # the miss before the install rescans too, finds nothing, and says so with what to do
    assert before.startswith("before: unknown reader 'late'; expected one of [") and "'csv'" not in before
    assert "plug-ins loaded in this process: none" in before and "restart the workers" in before
    # ordercube's own readers, imported by the plug-in, are not counted as the plug-in's
    assert found == "found: late ('.late',) [('late-reader', ('reader late',))]"
    assert unknown.startswith("unknown: unknown dataset 'never_installed'; expected one of [")
    assert "plug-ins loaded in this process: late-reader (late)" in unknown
    assert "install it in the workers' environment and restart the workers" in unknown
    assert "ORDERCUBE_PLUGINS" in unknown


def test_a_name_still_unknown_rescans_once_not_on_every_lookup(monkeypatch):
    from ordercube.tasks import plugins
    from ordercube.tasks.criteria import get_criterion

    plugins.load()
    scans = []
    declared = plugins.declared
    monkeypatch.setattr(plugins, "declared", lambda: scans.append(1) or declared())
    monkeypatch.setattr(plugins, "_rescanned", {})
    for _ in range(3):
        with pytest.raises(ValueError, match=r"unknown criterion 'no_such_criterion'.*rescanned"):
            get_criterion("no_such_criterion")
    assert len(scans) == 1  # the first miss of the name rescanned; the next ones did not
    with pytest.raises(ValueError, match="unknown criterion 'another_name'"):
        get_criterion("another_name")
    assert len(scans) == 2  # another name rescans once more
    monkeypatch.setattr(plugins, "_path_state", lambda: (("a folder where pip installed something", 1),))
    with pytest.raises(ValueError, match="unknown criterion 'another_name'"):
        get_criterion("another_name")
    assert len(scans) == 3  # the same name after an install on the path: rescanned again
