"""``ordercube run CONFIG --report``: the first analysis in one process, its report the same as ``ordercube report``
writes after ``run``, and neither imports dask.array (:mod:`ordercube.pipeline.system.duck_arrays`)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd

from conftest import cli

CONFIG = """
name: small
seed: 7
k: {from: 2, to: 4}
resamples: 10
datasets: [{name: g, kind: file, path: points.csv}]
methods:
  - {name: hc, algorithm: agglomerative, params: {linkage: average}, scheme: consensus,
     scheme_params: {p_item: 0.8, references: 0}, criteria: [pac, consensus_area]}
"""


def points_config(tmp_path):
    rng = np.random.default_rng(0)
    points = np.vstack([rng.normal(centre, 0.3, size=(15, 2)) for centre in (0.0, 3.0, 6.0)])
    np.savetxt(tmp_path / "points.csv", points, delimiter=",", header="x,y", comments="")
    (tmp_path / "small.yaml").write_text(CONFIG)
    return tmp_path / "small.yaml"


def test_run_with_report_writes_what_report_writes_after_run(tmp_path):
    config = points_config(tmp_path)
    one = cli("run", str(config), "--out", str(tmp_path / "one.zarr"), "--workers", "0", "--report", timeout=240)
    assert one.returncode == 0, one.stderr
    assert "report written to " + str(tmp_path / "one-report") in one.stdout  # the default folder, beside the cube
    two = cli("run", str(config), "--out", str(tmp_path / "two.zarr"), "--workers", "0", timeout=240)
    assert two.returncode == 0 and "report written" not in two.stdout, two.stderr
    after = cli("report", str(tmp_path / "two.zarr"), "--out", str(tmp_path / "after"), timeout=240)
    assert after.returncode == 0, after.stderr
    for table in ("selection.csv", "curves.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "one-report" / table), pd.read_csv(tmp_path / "after" / table))
    drawn = sorted(path.name for path in (tmp_path / "one-report").iterdir() if path.suffix == ".png")
    assert drawn == sorted(path.name for path in (tmp_path / "after").iterdir() if path.suffix == ".png")
    assert "consensus_g_45_hc_heatmaps.png" in drawn and "consensus_g_45_hc_pac.png" in drawn
    page = (tmp_path / "one-report" / "index.html").read_text()
    assert 'id="consensus_g_45_hc_heatmaps"' in page and "<!--ordercube-figure:" not in page  # placeholders resolved
    # a report folder that cannot be written is refused before the sweep: nothing computed, no cube
    (tmp_path / "taken").write_text("a file, not a folder")
    refused = cli("run", str(config), "--out", str(tmp_path / "three.zarr"), "--report", str(tmp_path / "taken"),
                  timeout=60)
    assert refused.returncode == 2 and refused.stderr.startswith("error: --report: "), refused.stderr
    assert "not a folder" in refused.stderr and not (tmp_path / "three.zarr").exists()
    # a config that cannot run writes no report, and says why as any run does
    bad = cli("run", str(tmp_path / "missing.yaml"), "--report", timeout=60)
    assert bad.returncode == 2 and "missing.yaml" in bad.stderr and not (tmp_path / "missing-report").exists()


def test_a_report_never_imports_dask_array(tmp_path):
    """The whole report of a small consensus cube (heat maps included), as ``ordercube report`` makes it, in a
    process of its own: dask.array is never imported there (0.4 s of it)."""
    config = points_config(tmp_path)
    cube, folder = tmp_path / "small.zarr", tmp_path / "report"
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from ordercube.pipeline.cli import main

        assert main(["run", {str(config)!r}, "--out", {str(cube)!r}, "--workers", "0"]) == 0
        assert main(["report", {str(cube)!r}, "--out", {str(folder)!r}]) == 0
        print("dask.array imported:", "dask.array" in sys.modules)
    """)], capture_output=True, text=True, timeout=240)
    assert done.stdout.splitlines()[-1] == "dask.array imported: False", done.stdout + done.stderr
    assert (folder / "index.html").is_file() and (folder / "consensus_g_45_hc_heatmaps.png").is_file()


def test_the_resume_command_of_a_stopped_run_asks_for_its_report_again():
    """A run stopped mid-sweep prints the command that resumes it; with --report, that command writes the report."""
    import argparse

    from ordercube.pipeline.cli import _parser, _resume

    def resumed(*given: str) -> str:
        args = _parser().parse_args(["run", "c.yaml", *given])
        assert isinstance(args, argparse.Namespace)
        return _resume(args, "out.zarr")

    assert resumed("--report") == "ordercube run c.yaml --out out.zarr --report"
    assert resumed("--report", "my report", "--workers", "2") == \
        "ordercube run c.yaml --out out.zarr --workers 2 --report 'my report'"
    assert resumed() == "ordercube run c.yaml --out out.zarr"
