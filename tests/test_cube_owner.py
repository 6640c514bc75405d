"""One object owns the cube: outside the cube's own modules, code reaches a cube through ``ordercube.pipeline.cube.owner.Cube``
(and the readers ``open_cube``/``load_cube`` over it), never through the modules that implement it."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from conftest import REPO

# The Cube's implementation: its layout and creation, growth journal, region writes, metadata checks, checksums and
# manifest, lock. Only the cube's own modules (these, ordercube.pipeline.cube.owner and ordercube.pipeline.cube.metadata) import them.
IMPLEMENTATION = ("ordercube.pipeline.cube.layout", "ordercube.pipeline.cube.growth", "ordercube.pipeline.cube.writes", "ordercube.pipeline.cube.checks",
                  "ordercube.pipeline.cube.integrity", "ordercube.pipeline.cube.lock", "ordercube.pipeline.cube.assignments")
OWN = {*IMPLEMENTATION, "ordercube.pipeline.cube.owner", "ordercube.pipeline.cube.metadata"}


def _module(path: Path) -> str:
    """The dotted name ``path`` imports as: pipeline/ and tasks/ live inside the ordercube package."""
    parts = path.relative_to(REPO).with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    return ".".join(parts if parts[0] == "ordercube" else ("ordercube", *parts))


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at its top or inside a function (``from ordercube.pipeline.cube import x`` as ordercube.pipeline.cube.x)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def test_the_cube_implementation_exists_and_is_imported_only_by_the_cube_itself():
    for name in IMPLEMENTATION:  # renamed or moved: this test must follow, or it would check nothing
        importlib.import_module(name)
    reaching = {}
    for path in sorted([*(REPO / "pipeline").rglob("*.py"), *(REPO / "ordercube").rglob("*.py")]):
        module = _module(path)
        if module in OWN:
            continue
        used = sorted(_imports(path) & set(IMPLEMENTATION))
        if used:
            reaching[module] = used
    assert reaching == {}, f"modules that bypass ordercube.pipeline.cube.owner.Cube: {reaching}"
    assert "ordercube.pipeline.cube.owner" in _imports(REPO / "pipeline" / "run" / "sweep.py")  # the walk sees imports: run opens cubes
