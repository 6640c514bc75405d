"""The quickstart notebook runs against a freshly computed cube (nbclient, a real kernel)."""

from __future__ import annotations

import nbformat
import yaml
from nbclient import NotebookClient

from conftest import REPO, cli, write_config


def test_quickstart_notebook_executes_on_a_fresh_cube(tmp_path, monkeypatch):
    config = yaml.safe_load((REPO / "configs" / "quickstart.yaml").read_text())
    config.update(n=[100, 300], resamples=10)
    result = cli("run", str(write_config(tmp_path / "quick.yaml", **config)), "--out", str(tmp_path / "cube.zarr"),
                 "--workers", "2", "--no-progress")
    assert result.returncode == 0, result.stderr

    monkeypatch.setenv("ORDERCUBE_CUBE", str(tmp_path / "cube.zarr"))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    notebook = nbformat.read(REPO / "notebooks" / "01_quickstart.ipynb", as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(REPO / "notebooks")}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2
    assert any("k̂ = 3 for gaussians3" in o.get("text", "") for o in outputs)
