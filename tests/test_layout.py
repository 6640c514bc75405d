"""The package's walls: one importable name, no import cycle, kernels that never reach up, no private name
borrowed across subpackages.

The import graph is drawn from the source (every ``import`` and ``from ... import`` of every module, those inside
functions and under ``if TYPE_CHECKING:`` included), not from what a run happens to load. A module imports the
module a statement names: ``from a.b import c`` is an arrow to ``a.b.c`` when that is a module, else to ``a.b``.
The check is between modules (stricter than between subpackages).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO




def modules_of(package: str) -> dict[str, tuple[Path, bool]]:
    """{module name: (file, is a package)} of an importable package and its subpackages, from its files."""
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, package
    found = {}
    for root in spec.submodule_search_locations:
        for path in Path(root).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if "__pycache__" in parts:
                continue
            is_package = parts[-1] == "__init__"
            found[".".join((package, *(parts[:-1] if is_package else parts)))] = (path, is_package)
    for root in spec.submodule_search_locations:  # compiled kernels are modules too: sources or builds
        for path in [*Path(root).rglob("*.pyx"), *Path(root).rglob("*.so")]:
            parts = path.relative_to(root).parts
            found.setdefault(".".join((package, *parts[:-1], parts[-1].split(".")[0])), (path, False))
    return found


def import_graph(modules: dict[str, tuple[Path, bool]]) -> tuple[dict[str, set[str]], list[tuple[str, str, str]]]:
    """Arrows between ``modules`` and the names each imports: (importer, source module, name)."""
    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    arrows: dict[str, set[str]] = {}
    names: list[tuple[str, str, str]] = []
    for module, (path, is_package) in modules.items():
        out = arrows.setdefault(module, set())
        if path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                out.update(filter(None, (known(alias.name) for alias in node.names)))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = module.split(".") if is_package else module.split(".")[:-1]
                    base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else known(base)
                    if target:
                        out.add(target)
                        names.append((module, target, alias.name))
        out.discard(module)
    return arrows, names


def cycles(arrows: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(arrows):
        if start in index:
            continue
        work = [(start, iter(sorted(arrows[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(arrows.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def subpackage(module: str, modules: dict[str, tuple[Path, bool]]) -> str:
    """The package a module is in (a package is its own)."""
    return module if modules[module][1] else module.rpartition(".")[0]


def private_imports(modules: dict[str, tuple[Path, bool]], names: list[tuple[str, str, str]]) -> list[str]:
    """``from M import _x`` where M lies in another subpackage than the importer."""
    return [f"{importer} imports {name} from {source}" for importer, source, name in names
            if name.startswith("_") and not name.startswith("__")
            and subpackage(importer, modules) != subpackage(source, modules)]


@pytest.fixture(scope="module")
def ordercube_graph():
    modules = {**modules_of("ordercube"), **modules_of("ordercube.pipeline"), **modules_of("ordercube.tasks")}
    modules["ordercube"] = (Path(importlib.util.find_spec("ordercube").origin), True)
    return modules, *import_graph(modules)


def test_the_graph_covers_every_module_and_their_arrows(ordercube_graph):
    modules, arrows, _ = ordercube_graph
    assert len(modules) >= 100, sorted(modules)
    assert {"ordercube.api", "ordercube.pipeline.cli", "ordercube.pipeline.run.sweep", "ordercube.tasks.cell",
            "ordercube.tasks._hungarian"} <= set(modules)
    assert "ordercube.pipeline.config.study" in arrows["ordercube.commands"]  # a function-level import
    assert "ordercube.pipeline.config.specs" in arrows["ordercube.pipeline.config.limits"]  # under TYPE_CHECKING


def test_no_import_cycle_between_modules(ordercube_graph):
    _, arrows, _ = ordercube_graph
    assert [sorted(cycle) for cycle in cycles(arrows)] == []


def parts_graph(arrows: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The arrows between the parts of ``package`` (its subpackages and the modules beside them: the first three
    names, ``ordercube.pipeline.config``, ``ordercube.tasks.cell``), an arrow for any import between their modules."""
    def part(module: str) -> str:
        return ".".join(module.split(".")[:3])

    between: dict[str, set[str]] = {}
    for module, targets in arrows.items():
        if module.startswith(f"{package}."):
            between.setdefault(part(module), set()).update(
                part(target) for target in targets if target.startswith(f"{package}.") and part(target) != part(module))
    return between


def test_the_pipeline_subpackages_import_one_way(ordercube_graph):
    """Walls between config, data, files, system, cube, run, reduce, report and the CLI: no cycle among them."""
    between = parts_graph(ordercube_graph[1], "ordercube.pipeline")
    assert {"ordercube.pipeline.config", "ordercube.pipeline.data", "ordercube.pipeline.cube"} <= set(between)
    assert "ordercube.pipeline.data" in between["ordercube.pipeline.config"]  # config reads data files, not the reverse
    assert cycles(between) == []


def test_the_tasks_subpackages_import_one_way(ordercube_graph):
    """The kernels' parts (algorithms, criteria, predictors, datasets, consensus and the modules beside them) import
    one way: no cycle among them (algorithms -> criteria -> predictors -> algorithms and algorithms <-> datasets were
    two, through a decision rule and data-making functions kept among the kernels)."""
    between = parts_graph(ordercube_graph[1], "ordercube.tasks")
    assert {"ordercube.tasks.algorithms", "ordercube.tasks.criteria", "ordercube.tasks.datasets"} <= set(between)
    assert "ordercube.tasks.algorithms" in between["ordercube.tasks.criteria"]  # criteria read fits, not the reverse
    assert [sorted(cycle) for cycle in cycles(between)] == []


def test_the_kernels_never_import_the_pipeline_or_the_api(ordercube_graph):
    _, arrows, _ = ordercube_graph
    up = sorted(f"{module} -> {target}" for module, targets in arrows.items() if module.startswith("ordercube.tasks")
                for target in targets if not target.startswith("ordercube.tasks"))
    assert up == []


def test_the_api_never_imports_the_cli(ordercube_graph):
    """The CLI is a layer over the API and the pipeline, never under the API."""
    _, arrows, _ = ordercube_graph
    reached, todo = set(), ["ordercube"]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo.extend(arrows.get(module, ()))
    assert "ordercube.api" in reached and "ordercube.pipeline.cli" not in reached


# What the command may take from the pipeline itself, each for a reason; the work is the API's (ordercube.commands).
CLI_MAY_IMPORT = {
    "ordercube.pipeline.errors": "InputError: a bad input's message and exit 2",
    "ordercube.pipeline.system.interrupts": "the process's signal handlers: Ctrl-C and SIGTERM stop a sweep",
    "ordercube.pipeline.config.plugins": "the installed plug-ins, loaded before a command names them",
    "ordercube.pipeline.cli_print": "the command's own printing of what the API returned",
    "ordercube.pipeline.config.specs": "the Config type, for type checking only",
}


def test_the_cli_is_a_layer_over_the_api(ordercube_graph):
    """``cli.py`` parses arguments, calls one function of the API per command and prints: from the pipeline it
    imports only what :data:`CLI_MAY_IMPORT` lists (at module level, in functions and for type checking)."""
    _, arrows, _ = ordercube_graph
    taken = arrows["ordercube.pipeline.cli"]
    assert sorted(target for target in taken if target.startswith("ordercube.pipeline.") and target not in CLI_MAY_IMPORT) == []
    assert "ordercube.commands" in taken
    printing = {target for target in arrows["ordercube.pipeline.cli_print"] if target.startswith("ordercube.pipeline.")}
    assert not any(target.startswith(("ordercube.pipeline.run", "ordercube.pipeline.cube")) for target in printing), printing


def test_package_inits_import_nothing_heavy(ordercube_graph):
    """A Dask worker imports the packages on the path of a task: their __init__ files stay cheap."""
    modules, _, _ = ordercube_graph
    heavy = ("xarray", "zarr", "distributed", "dask", "pandas", "matplotlib")
    found = []
    for module, (path, is_package) in modules.items():
        if is_package:
            for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module level: what importing it runs
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                found += [f"{module}: {name}" for name in names if name.split(".")[0] in heavy]
    assert found == []


def test_no_private_name_is_imported_across_subpackages(ordercube_graph):
    modules, _, names = ordercube_graph
    assert private_imports(modules, names) == []


def test_the_checks_find_a_cycle_and_a_private_import_when_there_is_one(tmp_path):
    """The walker on a package made for it: a -> b -> c -> a, and a private name borrowed across subpackages."""
    root = tmp_path / "made"
    for name, text in {"__init__.py": "", "a.py": "def f():\n    from made.sub import b\n",
                       "sub/__init__.py": "", "sub/b.py": "from ..c import _hidden\n",
                       "c.py": "import made.a\n_hidden = 1\n", "d.py": "from made import a, c\n"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    modules = {"made": (root / "__init__.py", True), "made.a": (root / "a.py", False), "made.c": (root / "c.py", False),
               "made.d": (root / "d.py", False), "made.sub": (root / "sub/__init__.py", True),
               "made.sub.b": (root / "sub/b.py", False)}
    arrows, names = import_graph(modules)
    assert arrows["made.d"] == {"made.a", "made.c"}
    assert cycles(arrows) == [{"made.a", "made.sub.b", "made.c"}]
    assert private_imports(modules, names) == ["made.sub.b imports _hidden from made.c"]


def test_installing_adds_only_ordercube_to_import(tmp_path):
    code = ("import importlib.util, json\n"
            "import ordercube.tasks._hungarian, ordercube.tasks.algorithms._lloyd, ordercube.pipeline.data.catalog\n"
            "print(json.dumps([importlib.util.find_spec(name) is None for name in ('pipeline', 'tasks')]))")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[true, true]"


USER_FOLDER = {
    "tasks.py": "raise RuntimeError('the user\\'s tasks.py was imported')\n",
    "pipeline/__init__.py": "raise RuntimeError('the user\\'s pipeline package was imported')\nstore = 'junk'\n",
    "tiny.yaml": textwrap.dedent("""\
        name: tiny
        seed: 3
        n: [40]
        k: [2, 3]
        resamples: 2
        execution: {in_process_seconds: 0}
        datasets: [{name: gauss, kind: lange_gaussians3}]
        methods: [{name: km, algorithm: kmeans, params: {n_init: 1}, predictor: nearest_centroid, criteria: [lange]}]
        """),
    "sweep.py": textwrap.dedent("""\
        import ordercube

        if __name__ == "__main__":
            cube = ordercube.sweep("tiny.yaml", out="tiny.zarr", workers=1)
            print("cells", int((cube.status == 1).sum()))  # 1: ok
            print("k", int(ordercube.select_k(cube)["lange"].values.ravel()[0]))
        """),
}


@pytest.mark.timeout(400)
def test_a_tasks_py_and_a_pipeline_package_in_the_working_folder_change_nothing(tmp_path):
    """invoke's tasks.py and a package named pipeline beside the user's script: the sweep on a LocalCluster
    (whose worker imports the kernels by name), ``ordercube status`` and the API all run."""
    for name, text in USER_FOLDER.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH" and not key.startswith("ORDERCUBE_")}

    def run(*args: str) -> str:
        result = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        return result.stdout

    swept = run("sweep.py")
    assert "cells 4" in swept and "k " in swept, swept  # 2 k x 2 trials of 1 dataset, n and method: all computed
    status = run("-m", "ordercube.pipeline.cli", "status", "tiny.zarr")
    assert status.startswith("total: 4  ok: 4  failed: 0"), status
    chosen = run("-c", "import ordercube; print(ordercube.select_k(ordercube.open_cube('tiny.zarr'))['lange'].values.ravel()[0])")
    assert chosen.strip() == swept.split("k ")[-1].strip()


def test_every_package_folder_is_listed_for_the_wheel():
    """A wheel holds only the packages pyproject.toml lists (an editable install finds the rest, so no other default
    test notices): every folder of ordercube/, pipeline/ and tasks/ with an __init__.py must be there."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    folders = {name: root / folder for name, folder in setuptools["package-dir"].items()}
    found = {name + "".join(f".{part}" for part in init.parent.relative_to(folder).parts)
             for name, folder in folders.items() for init in folder.rglob("__init__.py")
             if not any(part.startswith((".", "_")) or part == "build" for part in init.parent.relative_to(folder).parts)}
    assert found - listed == set(), f"add to pyproject.toml's [tool.setuptools] packages: {sorted(found - listed)}"
    assert "ordercube.tasks.schemes" in found and len(found) >= 15, sorted(found)


# The engine asks an algorithm what it can do (BaseAlgorithm's facts: runs_schemes, partitions, gives,
# shares_fit_across_k), never which kind it is. The family checks still in the engine's folders are registered by
# kind (their one isinstance asserts what their registration guarantees); they move beside their kernels with the
# built-in families as packages.
KINDS = ("BaseAlgorithm", "Clusterer", "Classifier", "MatrixModel")
FAMILY_CHECKS_BY_KIND = {"pipeline/config/familychecks.py", "pipeline/config/supervision.py"}


def test_the_engine_never_tests_an_algorithms_kind():
    """No ``isinstance(..., Clusterer)`` (or another algorithm kind) in ``pipeline/`` or ``ordercube/`` but the
    family checks registered by kind: a plug-in kind gets what a built-in one gets, by its facts."""
    found = []
    for path in sorted([*(REPO / "pipeline").rglob("*.py"), *(REPO / "ordercube").rglob("*.py")]):
        relative = path.relative_to(REPO).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
                kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
                named = [getattr(kind, "id", getattr(kind, "attr", None)) for kind in kinds]
                if any(name in KINDS for name in named) and relative not in FAMILY_CHECKS_BY_KIND:
                    found.append(f"{relative}:{node.lineno}")
    assert found == []
