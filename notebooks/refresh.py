"""Execute the notebooks in a fresh Jupyter kernel and write their outputs back into the ``.ipynb`` files.

::

    python notebooks/refresh.py                        # every notebook in this folder
    python notebooks/refresh.py 01_quickstart.ipynb    # one of them

Each notebook runs from this folder with ``ORDERCUBE_CUBE`` set to a new temporary folder (its cube is
written there and deleted afterwards), so the outputs never depend on a cube left by an earlier run.
Cell timings are not recorded (``record_timing=False``): the committed files change only when an output
does. ``tests/test_notebook.py`` runs the notebooks the same way and compares their outputs with the
committed ones.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

HERE = Path(__file__).resolve().parent
CELL_TIMEOUT = 300  # seconds per cell; each notebook takes well under a minute on 2 cores


def execute(path: Path, *, timeout: int = CELL_TIMEOUT, cube: Path | None = None) -> nbformat.NotebookNode:
    """The notebook at ``path``, executed in a fresh ``python3`` kernel from its own folder.

    Its cube is written at ``cube`` (default: in a temporary folder, deleted afterwards). Raises
    ``nbclient``'s ``CellExecutionError`` when a cell fails and ``CellTimeoutError`` when one runs
    longer than ``timeout`` seconds.
    """
    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="ordercube-notebook-") as folder:
        env = {**os.environ, "ORDERCUBE_CUBE": str(cube or Path(folder) / f"{path.stem}.zarr"),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))}
        client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", record_timing=False,
                                resources={"metadata": {"path": str(path.parent)}})
        client.execute(env=env)  # the kernel's environment, not this process's
    return notebook


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks of this folder (default: all of them)")
    names = parser.parse_args(argv).notebooks or sorted(path.name for path in HERE.glob("*.ipynb"))
    for name in names:
        path = HERE / name
        start = time.perf_counter()
        try:
            notebook = execute(path)
        except (CellExecutionError, CellTimeoutError) as error:
            print(f"{name}: not written, a cell failed:\n{error}", file=sys.stderr)
            return 1
        nbformat.write(notebook, path)
        print(f"{name}: executed in {time.perf_counter() - start:.0f} s and written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
