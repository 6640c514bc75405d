"""A plug-in is a package: tests/plugins/ordercube_demo, installed in the test run, adds a family (change points of a
1-D series: its data kind, algorithm, criterion and report section) that runs from a YAML config through the CLI
into a cube and a report; plug-ins that fail are named in an error, exit code 2."""

from __future__ import annotations

import ast
import importlib.util
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from conftest import ORDERCUBE, REPO, write_config
from ordercube.tasks.seeding import Purpose, label_id, stream

DEMO = Path(__file__).resolve().parent / "plugins" / "ordercube_demo"
SEED, N, SEGMENTS, NOISE, JUMP = 11, 120, 4, 0.3, 2.0


def _segmentation():
    """The demo's kernel module alone (importing the package would register its family in this process)."""
    spec = importlib.util.spec_from_file_location("demo_segmentation", DEMO / "ordercube_demo" / "segmentation.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The demo plug-in installed (as a user would, from its pyproject.toml) into a folder of its own."""
    return install_demo(tmp_path_factory.mktemp("site"))


def install_demo(target: Path) -> Path:
    """Install the demo plug-in into the folder ``target`` (offline), as pip does; returns ``target``."""
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
           "--target", str(target), str(DEMO)]
    # Without the network a wheel is built with the environment's setuptools, which needs `wheel` before
    # setuptools 70.1: there the same metadata (from the same pyproject.toml) is written by setuptools' egg_info
    # beside a copy of the package, the layout importlib.metadata reads as an installed distribution.
    metadata = [sys.executable, "-W", "ignore", "-c", "import setuptools; setuptools.setup()", "-q", "egg_info",
                "--egg-base", str(target)]
    try:
        done = subprocess.run(pip, capture_output=True, text=True, timeout=120)
        if done.returncode != 0 and "bdist_wheel" in done.stdout + done.stderr:
            done = subprocess.run(metadata, capture_output=True, text=True, timeout=120, cwd=DEMO)
            shutil.copytree(DEMO / "ordercube_demo", target / "ordercube_demo")
    except subprocess.TimeoutExpired:
        pytest.fail("installing tests/plugins/ordercube_demo took over 120 s (an offline build with setuptools)")
    assert done.returncode == 0, f"tests/plugins/ordercube_demo could not be installed offline:\n{done.stderr}"
    assert list(target.glob("ordercube_demo*-info/entry_points.txt")), "the entry point was not installed"
    return target


def _run(*args: str, site: Path, cwd: Path, extra: tuple[Path, ...] = ()) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (*extra, site, REPO))}
    env.pop("ORDERCUBE_PLUGINS", None)
    return subprocess.run([ORDERCUBE, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


def _config(folder: Path, seed: int = SEED) -> Path:
    return write_config(folder / "steps.yaml", name="steps", seed=seed, n=[N], k={"from": 1, "to": 6}, resamples=4,
                        datasets=[{"name": "steps", "kind": "piecewise_constant",
                                   "params": {"segments": SEGMENTS, "jump": JUMP, "noise": NOISE}}],
                        methods=[{"name": "dp", "algorithm": "dp_segments", "criteria": ["heldout_sse"]}])


def test_segmentation_kernel_by_hand():
    kernel = _segmentation()
    y = np.array([0.0, 0.0, 5.0, 5.0, 5.0, 1.0])
    # one segment: no start; two: [0, 0 | 5, 5, 5, 1] costs 12 (against 30 for [0, 0, 5, 5, 5 | 1]); three: exact
    assert {k: list(v) for k, v in kernel.segment_all(y, 3).items()} == {1: [], 2: [2], 3: [2, 5]}
    t = np.arange(6.0)
    # means 0 and 4 with the cut at t = 1.5: test points at t = 1 (y 1) and t = 4 (y 2) err by 1 and 2
    assert kernel.heldout_error(t, y, np.array([2]), np.array([1.0, 4.0]), np.array([1.0, 2.0])) == pytest.approx(2.5)


def _brute_force_starts(y: np.ndarray, k: int) -> tuple[int, ...]:
    """The least-squares segmentation into k segments by trying every one (ties: the first in lexicographic order,
    as the dynamic programme's earliest split)."""
    best, where = np.inf, ()
    for starts in itertools.combinations(range(1, len(y)), k - 1):
        cost = sum(float(((part - part.mean()) ** 2).sum()) for part in np.split(y, starts))
        if cost < best - 1e-9:
            best, where = cost, starts
    return where


def test_segmentation_kernel_matches_brute_force():
    kernel = _segmentation()
    rng = np.random.default_rng(3)
    for _ in range(5):
        y = np.repeat(rng.normal(0, 2, 3), 4) + rng.normal(0, 0.5, 12)
        found = kernel.segment_all(y, 4)
        for k in range(1, 5):
            assert tuple(found[k]) == _brute_force_starts(y, k)


def _heldout_by_hand(seed: int, trial: int, k: int) -> float:
    """One cell recomputed from the cube's seed: the trial's draw as the plug-in documents it, its split, the least
    squares fit by trying every segmentation, and the test half's error about the fitted means."""
    rng = stream(seed, Purpose.DRAW, label_id("steps"), N, trial)
    t = rng.uniform(0.0, 1.0, N)
    segment = np.minimum((t * SEGMENTS).astype(int), SEGMENTS - 1)
    y = JUMP * (segment % 2) + NOISE * rng.standard_normal(N)
    order = rng.permutation(N)
    fit, test = order[: N // 2], order[N // 2:]
    fit = fit[np.argsort(t[fit], kind="stable")]
    starts = list(_brute_force_starts(y[fit], k))
    edges = [0, *starts, len(fit)]
    error = 0.0
    for i in test:
        cuts = [(t[fit][s - 1] + t[fit][s]) / 2 for s in starts]
        j = sum(t[i] >= c for c in cuts)
        error += (y[i] - y[fit][edges[j]:edges[j + 1]].mean()) ** 2
    return error / len(test)


def test_a_plugin_family_runs_from_a_config_through_the_cli_into_a_cube_and_a_report(site, tmp_path):
    config = _config(tmp_path)
    checked = _run("validate", str(config), site=site, cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert "plug-ins: ordercube-demo (changepoint:" in checked.stdout
    assert "criterion heldout_sse" in checked.stdout
    done = _run("run", str(config), "--out", "steps.zarr", "--workers", "1", "--no-progress", "--no-dashboard",
                site=site, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    status = _run("status", "steps.zarr", site=site, cwd=tmp_path)
    assert status.returncode == 0 and "ok: 24" in status.stdout, status.stdout + status.stderr  # 6 k x 4 trials
    # status loads no plug-in up front, yet reads the plug-in's variable truly: with its chunk deleted, the 24 cells
    # count as pending (the lookup of a criterion no registry holds loads the plug-in)
    shutil.copytree(tmp_path / "steps.zarr", tmp_path / "lost.zarr")
    chunks = sorted(path for path in (tmp_path / "lost.zarr" / "heldout_sse" / "c").rglob("*") if path.is_file())
    assert len(chunks) == 1, chunks
    chunks[0].unlink()
    lost = _run("status", "lost.zarr", "--json", site=site, cwd=tmp_path)
    assert json.loads(lost.stdout)["pending"] == 24, lost.stdout + lost.stderr

    cube = xr.open_zarr(tmp_path / "steps.zarr")
    values = cube["heldout_sse"].sel(dataset="steps", n=N, model="dp")
    assert bool(values.notnull().all())
    for k in (1, 2, 4):  # the cube's value is the held-out error recomputed independently, to rounding
        assert float(values.sel(k=k, trial=1)) == pytest.approx(_heldout_by_hand(SEED, 1, k), rel=1e-12)
    # on this clean a series the planted number of segments has the smallest mean held-out error
    assert int(values.mean("trial").idxmin("k")) == SEGMENTS

    report = _run("report", "steps.zarr", "--out", "report", site=site, cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    table = pd.read_csv(tmp_path / "report" / "selection.csv")
    row = table[table["criterion"] == "heldout_sse"]
    assert list(row["k_hat"]) == [SEGMENTS]
    if importlib.util.find_spec("ordercube.pipeline.report.section") is None:
        pytest.skip("criteria's report sections (ordercube.pipeline.report.section) are not in this tree: the demo's section "
                    "is declared but not drawn")
    sections = pd.read_csv(tmp_path / "report" / "changepoints.csv")
    assert sorted(sections["k"]) == [1, 2, 3, 4, 5, 6] and set(sections["k_hat"]) == {SEGMENTS}
    assert "Change points: held-out squared error\nsteps, n = 120, dp: k̂ = 4 segments, planted 4" in report.stdout
    assert "Change points: held-out squared error" in (tmp_path / "report" / "index.html").read_text()


def test_a_process_that_loaded_no_plugin_finds_one_on_its_first_lookup_of_an_unknown_name(site, tmp_path):
    # as a worker of any cluster does: no preload, no ORDERCUBE_PLUGINS; the first miss loads every plug-in once
    code = ("from ordercube.tasks.plugins import loaded\nfrom ordercube.tasks.criteria import get_criterion\nassert loaded() == ()\n"
            "print(get_criterion('heldout_sse').reads, [p.distribution for p in loaded()])\n"
            "try:\n    get_criterion('no_such_criterion')\nexcept ValueError as error:\n    print(error)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    env.pop("ORDERCUBE_PLUGINS", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    found, unknown = done.stdout.splitlines()
    assert found == "segmentations ['ordercube-demo']"
    assert unknown.startswith("unknown criterion 'no_such_criterion'") and "'heldout_sse'" in unknown


def test_the_cube_is_reproduced_bit_for_bit_and_moves_with_the_seed(site, tmp_path):
    for folder, seed in (("a", SEED), ("b", SEED), ("c", SEED + 1)):
        (tmp_path / folder).mkdir()
        done = _run("run", str(_config(tmp_path / folder, seed)), "--out", "steps.zarr", "--workers", "0",
                    "--no-progress", site=site, cwd=tmp_path / folder)
        assert done.returncode == 0, done.stderr
    a, b, c = (xr.open_zarr(tmp_path / folder / "steps.zarr")["heldout_sse"].values for folder in "abc")
    assert np.array_equal(a, b) and not np.allclose(a, c)


def _distribution(folder: Path, name: str, module: str, code: str) -> Path:
    """An installed distribution as importlib.metadata finds one: its dist-info folder with an entry point."""
    info = folder / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[ordercube.plugins]\nbad = {module}\n")
    (folder / f"{module}.py").write_text(code)
    return folder


@pytest.mark.parametrize("code, says", [
    ("import a_module_nobody_installed\n", "ModuleNotFoundError: No module named 'a_module_nobody_installed'"),
    ("from dataclasses import replace\nfrom ordercube.tasks.criteria import CRITERIA\n"
     "CRITERIA['lange'] = replace(CRITERIA['lange'])\n", "registers criterion 'lange', a name already taken by ordercube itself"),
    ("from dataclasses import replace\nfrom ordercube.tasks.criteria import CRITERIA\n"
     "CRITERIA['heldout_sse'] = replace(CRITERIA['heldout_sse'])\n", "plug-in 'ordercube-demo'"),
    ("from dataclasses import replace\nfrom ordercube.tasks.criteria import get_criterion\n"
     "from ordercube.tasks.registry import register_criterion\nregister_criterion(replace(get_criterion('heldout_sse')))\n",
     "criterion 'heldout_sse' is registered already"),
    ("from ordercube.tasks.algorithms import ALGORITHMS\nALGORITHMS['odd'] = 'not a record'\n",
     "registers algorithm 'odd': expected a ordercube.tasks.algorithms.kinds.BaseAlgorithm, got a str"),
    ("from ordercube.tasks.criteria import Criterion\nfrom ordercube.tasks.registry import register_criterion\n"
     "register_criterion(Criterion('odd', 1, 'no range', options={'q': 1}))\n", "lack a declared range"),
], ids=["import fails", "a built-in name", "another plug-in's name", "registered twice", "not a record",
        "an invalid record"])
def test_a_plugin_that_fails_is_named_with_exit_code_2(site, tmp_path, code, says):
    # "zz-" sorts the bad plug-in after the demo: the demo's names are taken when it loads
    extra = _distribution(tmp_path / "bad", "zz-bad-plugin", "zz_bad_plugin", code)
    done = _run("validate", str(_config(tmp_path)), site=site, cwd=tmp_path, extra=(extra,))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "plug-in 'zz-bad-plugin' (entry point bad = zz_bad_plugin of group ordercube.plugins)" in done.stderr
    assert says in done.stderr and "pip uninstall zz-bad-plugin" in done.stderr
    assert "Traceback" not in done.stderr


# ordercube.plugin: the one module a plug-in imports from

HEAVY = ("xarray", "zarr", "dask", "distributed", "pandas", "matplotlib")


def _ordercube_imports(source: str) -> set[str]:
    """The ``ordercube`` modules a piece of Python imports from, and the names it takes from ``ordercube.plugin``
    (as ``ordercube.plugin:NAME``)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "ordercube"}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] == "ordercube":
            found.add(node.module)
            if node.module == "ordercube.plugin":
                found |= {f"ordercube.plugin:{alias.name}" for alias in node.names}
    return found


def _plugin_page_code() -> str:
    """The python code blocks of the docs' page "Writing a plug-in" (docs/guide/plugins.md)."""
    section = (REPO / "docs" / "guide" / "plugins.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", section, flags=re.S | re.M)
    assert blocks, "docs/guide/plugins.md ('Writing a plug-in') has no python code block"
    return "\n".join(blocks)


def test_every_name_the_plugin_module_lists_resolves():
    import ordercube.plugin as plugin

    assert len(plugin.__all__) == len(set(plugin.__all__))
    missing = [name for name in plugin.__all__ if getattr(plugin, name, None) is None]
    assert missing == []
    assert plugin.SectionResult(title="t").title == "t" and plugin.TrialOutcome(values={}).failed == {}
    assert set(plugin.__all__) <= set(dir(plugin))
    with pytest.raises(AttributeError, match="'ordercube.plugin' has no attribute 'CRITERIA'"):
        plugin.CRITERIA  # noqa: B018  (a registry itself is not the API: register_* is)


def test_the_demo_plugin_and_the_readme_import_only_ordercube_plugin():
    import ordercube.plugin as plugin

    # the check itself tells an internal import from a public one
    assert _ordercube_imports("from ordercube.tasks.trial import scattered\nimport ordercube.plugin\n") == {
        "ordercube.tasks.trial", "ordercube.plugin"}
    public = {"ordercube.plugin", *(f"ordercube.plugin:{name}" for name in plugin.__all__)}
    sources = {str(path.relative_to(DEMO)): path.read_text(encoding="utf-8") for path in sorted(DEMO.rglob("*.py"))}
    sources["docs/guide/plugins.md"] = _plugin_page_code()
    for where, source in sources.items():
        imports = _ordercube_imports(source)
        assert imports - public == set(), f"{where} imports {sorted(imports - public)}, not from ordercube.plugin"
    for where in ("ordercube_demo/__init__.py", "ordercube_demo/family.py", "ordercube_demo/report.py",
                  "docs/guide/plugins.md"):
        assert "ordercube.plugin" in _ordercube_imports(sources[where]), where


def test_importing_the_plugin_module_loads_nothing_heavy(tmp_path):
    code = ("import sys\nimport ordercube.plugin\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
            "ordercube.plugin.SectionContext\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("ORDERCUBE_PLUGINS", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    before, after = done.stdout.splitlines()
    assert before == "[]"
    assert "pandas" in after and "xarray" in after  # the report's section types, resolved on first use


def test_a_plugin_that_failed_raises_a_new_error_each_time(monkeypatch):
    """A worker asks on every task: the same exception object raised again would carry every earlier raise in its
    traceback, until it cannot be pickled back to the client."""
    from ordercube.tasks import plugins

    monkeypatch.setenv(plugins.VARIABLE, "ordercube_no_such_plugin_module")
    errors = []
    try:
        for _ in range(3):
            with pytest.raises(plugins.PluginError, match="ordercube_no_such_plugin_module") as raised:
                plugins.load()
            errors.append(raised.value)
    finally:
        for key in [key for key in plugins._failed if key[1] == "ordercube_no_such_plugin_module"]:
            del plugins._failed[key]
    assert len({id(error) for error in errors}) == 3 and len({str(error) for error in errors}) == 1
    depth = [len(traceback.extract_tb(error.__traceback__)) for error in errors]
    assert depth[2] == depth[1], depth  # the third raise carries no more frames than the second
