"""An install without a C compiler: the compiled kernels are optional, and their numba twins give the same bits.

``setup.py`` skips a kernel it cannot compile; ``tasks/kernels.py`` then loads the twin (``_lloyd_numba`` ...),
or does so everywhere when ``ORDERCUBE_PURE_KERNELS=1``. Checked here: each twin against its compiled kernel
on random, tied and degenerate inputs, bit for bit; a sweep's cube with the twins forced against the compiled
run's; a wheel built with a compiler that fails (no ``.so`` in it) installed into a fresh environment and run;
a wheel from ``python -m build`` running the quickstart outside the repository (slow).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, STUBS, cli, cli_in_process, write_config

KERNELS = ["ordercube.tasks.algorithms._lloyd", "ordercube.tasks.algorithms._annealing", "ordercube.tasks._hungarian"]
SOURCES = ["pyproject.toml", "setup.py", "README.md", "LICENSE", "ordercube", "pipeline", "tasks"]


def pair(name: str):
    """The compiled module ``name`` and its numba twin."""
    return importlib.import_module(name), importlib.import_module(name + "_numba")


def same_bits(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8))


def points(rng: np.random.Generator, n: int, d: int, kind: str) -> np.ndarray:
    """Points of one kind: Gaussian clouds, a small integer grid (ties everywhere), or all at one place."""
    if kind == "clouds":
        return rng.normal(size=(n, d)) + 4.0 * rng.integers(3, size=(n, 1))
    if kind == "grid":
        return rng.integers(3, size=(n, d)).astype(np.float64)
    return np.full((n, d), 1.5)


CASES = [(n, k, d, kind) for n, k, d in [(1, 1, 1), (4, 4, 2), (9, 3, 1), (40, 5, 3), (150, 8, 2), (60, 2, 12)]
         for kind in ("clouds", "grid", "same")]


# -- each twin against its compiled kernel ----------------------------------------------------------------------


@pytest.mark.parametrize("n, k, d, kind", CASES)
def test_kmeans_seeding_and_lloyd_twins_give_the_compiled_bits(n, k, d, kind):
    compiled, twin = pair("ordercube.tasks.algorithms._lloyd")
    rng = np.random.default_rng([n, k, d, len(kind)])
    X = np.ascontiguousarray(points(rng, n, d, kind))
    n_init = 4
    first, u = rng.integers(n, size=n_init), rng.random((k - 1, n_init))
    seeds = [np.zeros((n_init, k, d)) for _ in range(2)]
    compiled.plusplus(X, first, u, seeds[0])
    twin.plusplus(X, first, u, seeds[1])
    same_bits(*seeds)
    threshold = 1e-4 * float(np.mean(np.var(X, axis=0)))
    for max_iter in (1, 300):
        runs = []
        for module in (compiled, twin):
            centers, labels, inertia = seeds[0].copy(), np.zeros((n_init, n), dtype=np.int64), np.zeros(n_init)
            module.lloyd_restarts(X, centers, labels, inertia, max_iter, threshold)
            runs.append((centers, labels, inertia))
        for ours, theirs in zip(*runs):
            same_bits(ours, theirs)


@pytest.mark.parametrize("n, k, d, kind", [case for case in CASES if case[1] > 1])
@pytest.mark.parametrize("schedule", [(0.7, 10, 1e-3), (0.9, 100, 1e-6)])
def test_annealing_twin_gives_the_compiled_bits(n, k, d, kind, schedule):
    compiled, twin = pair("ordercube.tasks.algorithms._annealing")
    cooling, max_iter, tol = schedule
    rng = np.random.default_rng([n, k, d, len(kind), max_iter])
    X = np.ascontiguousarray(points(rng, n, d, kind))
    noise = rng.standard_normal((k, d))
    scale = np.sqrt(max(float(np.var(X, axis=0).sum()), 1e-300))  # as annealing.annealed_centers sets them
    start = 2.2 * float(np.linalg.eigvalsh(np.atleast_2d(np.cov(X.T, bias=True)))[-1]) + 1e-300
    results = []
    for module in (compiled, twin):
        out = np.zeros((k, d))
        found, iterations = module.anneal(X, k, noise, start, cooling, 1e-3 * start, 5, max_iter, tol * scale, scale,
                                          out)
        results.append((found, iterations, out))
    assert results[0][:2] == results[1][:2]
    same_bits(results[0][2], results[1][2])
    if kind == "clouds" and n >= 40:
        assert results[0][0] == k  # the annealing really split (not a comparison of two untouched arrays)


def tables(rng: np.random.Generator, k: int) -> np.ndarray:
    """Confusion-like tables: random counts, counts from {0, 1} (ties between optimal permutations), zeros,
    a constant table, and large values."""
    return np.stack([rng.integers(50, size=(k, k)), rng.integers(2, size=(k, k)), np.zeros((k, k), dtype=np.int64),
                     np.full((k, k), 7), rng.integers(2**40, size=(k, k))]).astype(np.int64)


@pytest.mark.parametrize("k", [0, 1, 2, 3, 5, 8, 13])
def test_hungarian_twin_gives_the_compiled_weights(k):
    compiled, twin = pair("ordercube.tasks._hungarian")
    rng = np.random.default_rng(k)
    stacked = np.ascontiguousarray(np.concatenate([tables(rng, k) for _ in range(20)]))
    weights = [np.full(stacked.shape[0], -1, dtype=np.int64) for _ in range(2)]
    compiled.matched_weights(stacked, weights[0])
    twin.matched_weights(stacked, weights[1])
    same_bits(*weights)
    if k:
        from scipy.optimize import linear_sum_assignment

        rows, columns = linear_sum_assignment(stacked[0], maximize=True)
        assert weights[1][0] == stacked[0][rows, columns].sum()


def test_kmeans_and_annealing_with_the_twins_swapped_in_give_the_same_labels(monkeypatch):
    """The public functions, run once with the compiled kernels and once with the twins in their place."""
    from ordercube.tasks.algorithms import annealing, kmeans

    X = points(np.random.default_rng(3), 120, 2, "clouds")
    before = (kmeans.kmeans(X, 4, np.random.default_rng(1)), annealing.deterministic_annealing(X, 4, np.random.default_rng(1)))
    lloyd, anneal = importlib.import_module(KERNELS[0] + "_numba"), importlib.import_module(KERNELS[1] + "_numba")
    monkeypatch.setattr(kmeans, "plusplus", lloyd.plusplus)
    monkeypatch.setattr(kmeans, "lloyd_restarts", lloyd.lloyd_restarts)
    monkeypatch.setattr(annealing, "anneal", anneal.anneal)
    after = (kmeans.kmeans(X, 4, np.random.default_rng(1)), annealing.deterministic_annealing(X, 4, np.random.default_rng(1)))
    same_bits(before[0].centers, after[0].centers)
    same_bits(before[0].labels, after[0].labels)
    same_bits(before[1], after[1])
    assert len(np.unique(after[1])) == 4


# -- choosing the kernels ---------------------------------------------------------------------------------------


def test_the_environment_variable_chooses_the_twins_and_says_so_once(monkeypatch, caplog):
    from ordercube.tasks import kernels

    monkeypatch.setattr(kernels, "_said", [])
    monkeypatch.delenv(kernels.PURE, raising=False)
    assert kernels.load(KERNELS[2]).__name__ == KERNELS[2]
    monkeypatch.setenv(kernels.PURE, "0")
    assert kernels.load(KERNELS[2]).__name__ == KERNELS[2]
    assert caplog.records == []
    monkeypatch.setenv(kernels.PURE, "1")
    with caplog.at_level(logging.INFO, logger="ordercube"):
        assert [kernels.load(name).__name__ for name in KERNELS] == [name + "_numba" for name in KERNELS]
    assert [record.getMessage().split(":")[0] for record in caplog.records] == ["ORDERCUBE_PURE_KERNELS is set"]



def test_a_kernel_that_was_not_built_loads_its_twin_with_one_warning(monkeypatch, caplog):
    from ordercube.tasks import kernels

    monkeypatch.setattr(kernels, "_said", [])
    monkeypatch.delenv(kernels.PURE, raising=False)
    for name in KERNELS:
        monkeypatch.setitem(sys.modules, name, None)  # what the import system does for a module that must not load
    with caplog.at_level(logging.INFO, logger="ordercube"):
        assert [kernels.load(name).__name__ for name in KERNELS] == [name + "_numba" for name in KERNELS]
    assert [(record.levelno, record.getMessage().split(":")[0]) for record in caplog.records] == [
        (logging.WARNING, "the compiled kernels are not built (no C compiler at install)")]


def test_setup_skips_each_kernel_a_failing_compiler_cannot_build(tmp_path):
    """``setup.py build_ext --inplace`` (what an editable install runs) with every compiler on PATH exiting 1."""
    sources = tmp_path / "src"
    for name in ["setup.py", *(Path(name.replace(".", "/").replace("ordercube/", "") + ".pyx") for name in KERNELS)]:
        (sources / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, sources / name)
    built = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=sources, capture_output=True,
                           text=True, env=failing_compilers(tmp_path / "bin"), timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    lines = [line for line in built.stderr.splitlines() if line.startswith("ordercube:")]
    compiler = sysconfig.get_config_var("CC").split()[0]  # what setuptools calls, found first on PATH: ours, failing
    # the reason is setuptools' own words, which differ between its versions ("gcc returned non-zero exit status 1",
    # "command '.../bin/gcc' failed with exit code 1"): each names our failing compiler and its exit status
    pattern = re.compile(r"ordercube: (\S+) not compiled \((.+)\); its numba version will run instead, same results")
    matched = [pattern.fullmatch(line) for line in lines]
    assert all(matched) and [m.group(1) for m in matched] == list(KERNELS), lines
    for m in matched:
        assert compiler in m.group(2) and re.search(r"\b1\b", m.group(2)), m.group(2)
    assert not list(sources.rglob("*.so")) and len(list(sources.rglob("*.c"))) == len(KERNELS)  # translated, not built

def sweep_config(folder: Path) -> Path:
    """k-means (seeding, Lloyd, the Hungarian method of the stability criteria) and deterministic annealing."""
    return write_config(
        folder / "twins.yaml", name="twins", seed=11, n=[60], k=[2, 3, 4], resamples=3,
        datasets=[{"name": "gauss", "kind": "lange_gaussians3"}],
        methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 3}, "predictor": "nearest_centroid",
                  "criteria": ["lange", "pairwise"]},
                 {"name": "da", "algorithm": "deterministic_annealing", "params": {"n_init": 2},
                  "predictor": "nearest_centroid", "criteria": ["lange"]}])


def run_and_list_modules(config: Path, out: Path, env: dict[str, str]) -> set[str]:
    """``ordercube run CONFIG --workers 0`` in a fresh interpreter; the modules it loaded."""
    code = ("import json, sys\nfrom ordercube.pipeline.cli import main\ncode = main(sys.argv[1:])\n"
            "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}))")
    result = subprocess.run([sys.executable, "-c", code, "run", str(config), "--out", str(out), "--workers", "0",
                             "--no-progress"], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": f"{STUBS}:{REPO}", **env})
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, result.stderr
    return set(report["modules"])


def assert_same_cube(first: Path, second: Path) -> None:
    """Every variable but ``seconds``, bit for bit, and the same coordinates."""
    import xarray as xr

    with xr.open_zarr(first) as a, xr.open_zarr(second) as b:
        assert sorted(a.data_vars) == sorted(b.data_vars) and a.sizes == b.sizes
        assert len(a.data_vars) > 1
        for name in a.data_vars:
            if name != "seconds":
                left, right = a[name].values, b[name].values
                assert left.dtype == right.dtype, name
                if left.dtype.kind in "fiub":
                    same_bits(left, right)
                else:
                    assert left.tolist() == right.tolist(), name
        for name in a.coords:
            assert a[name].values.tolist() == b[name].values.tolist(), name


def test_a_sweep_with_the_twins_forced_gives_the_compiled_cube(tmp_path):
    config = sweep_config(tmp_path)
    compiled = run_and_list_modules(config, tmp_path / "compiled.zarr", {"ORDERCUBE_PURE_KERNELS": "0"})
    twins = run_and_list_modules(config, tmp_path / "twins.zarr", {"ORDERCUBE_PURE_KERNELS": "1"})
    assert set(KERNELS) <= compiled and not {name + "_numba" for name in KERNELS} & compiled
    assert {name + "_numba" for name in KERNELS} <= twins and not set(KERNELS) & twins
    assert_same_cube(tmp_path / "compiled.zarr", tmp_path / "twins.zarr")


# -- installs -----------------------------------------------------------------------------------------------------


def copy_sources(folder: Path) -> Path:
    """The files a build reads, outside the repository (no build/, no .so or .c left by a local build)."""
    folder.mkdir()
    for name in SOURCES:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c", "*.nbi",
                                                                                   "*.nbc"))
        else:
            shutil.copy2(source, folder / name)
    return folder


def failing_compilers(folder: Path) -> dict[str, str]:
    """An environment whose C compilers all exit 1 (first on PATH under every name a build may call)."""
    folder.mkdir()
    names = {"cc", "gcc", "c++", "g++", "clang", "x86_64-linux-gnu-gcc"}
    names |= {Path(str(sysconfig.get_config_var(key) or "cc").split()[0]).name for key in ("CC", "LDSHARED")}
    for name in names:
        script = folder / name
        script.write_text("#!/bin/sh\necho \"$0: no compiler here\" >&2\nexit 1\n")
        script.chmod(0o755)
    env = {key: value for key, value in os.environ.items() if key not in ("CC", "CXX", "LDSHARED", "PYTHONPATH")}
    return {**env, "PATH": f"{folder}{os.pathsep}{env['PATH']}"}


def environment_with(folder: Path, wheel: Path) -> Path:
    """A fresh virtual environment in ``folder`` with ``wheel`` installed; the dependencies are this environment's
    (a .pth line: no download), the package only the wheel's."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                    "--quiet", str(wheel)], check=True, capture_output=True, timeout=300)
    return python


def clean_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items()
            if key not in ("PYTHONPATH", "ORDERCUBE_PURE_KERNELS", "VIRTUAL_ENV")}


KMEANS_BITS = ("import json, numpy as np\n"
               "import ordercube, ordercube.pipeline, ordercube.tasks.assignment as assignment\n"
               "from ordercube.tasks.algorithms import annealing, kmeans\n"
               "X = np.random.default_rng(3).normal(size=(80, 2))\n"
               "X += 5.0 * np.repeat([[0, 0], [1, 0], [0, 1]], [30, 30, 20], axis=0)\n"
               "fit = kmeans.kmeans(X, 3, np.random.default_rng(4))\n"
               "labels = annealing.deterministic_annealing(X, 3, np.random.default_rng(4))\n"
               "tables = np.random.default_rng(5).integers(9, size=(30, 4, 4))\n"
               "print(json.dumps({'file': ordercube.__file__, 'centers': fit.centers.tobytes().hex(),\n"
               "                  'labels': labels.tolist(), 'weights': assignment.matched_weights(tables).tolist(),\n"
               "                  'kernel': kmeans.plusplus.__module__}))\n")


@pytest.mark.slow
def test_pip_installs_with_a_failing_compiler_and_the_twins_give_the_same_bits(tmp_path):
    sources = copy_sources(tmp_path / "src")
    env = failing_compilers(tmp_path / "bin")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                            "--verbose", "--wheel-dir", str(tmp_path / "wheels"), str(sources)],
                           capture_output=True, text=True, env=env, timeout=600)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    skipped = [line for line in (built.stdout + built.stderr).splitlines() if "not compiled" in line]
    assert len(skipped) == len(KERNELS) and all("numba version will run instead" in line for line in skipped), skipped
    wheel, = (tmp_path / "wheels").glob("ordercube-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [name for name in names if name.endswith((".so", ".pyd"))]
    assert {name.replace(".", "/") + "_numba.py" for name in KERNELS} <= set(names)

    python = environment_with(tmp_path / "venv", wheel)
    ran = subprocess.run([str(python), "-c", KMEANS_BITS], capture_output=True, text=True, cwd=tmp_path,
                         env=clean_env(), timeout=600)
    assert ran.returncode == 0, ran.stderr
    installed = json.loads(ran.stdout)
    assert installed["file"].startswith(str(tmp_path / "venv"))
    assert installed["kernel"] == KERNELS[0] + "_numba"
    told = [line for line in ran.stderr.splitlines() if "compiled kernels are not built" in line]
    assert len(told) == 1, ran.stderr  # once, though three kernels were loaded

    here = subprocess.run([sys.executable, "-c", KMEANS_BITS], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env(), timeout=300)
    assert json.loads(here.stdout)["kernel"] == KERNELS[0], here.stderr  # the compiled kernels, in this environment
    assert {**json.loads(here.stdout), "file": "", "kernel": ""} == {**installed, "file": "", "kernel": ""}


# -- the image ------------------------------------------------------------------------------------------------------


def test_the_images_install_check_runs_here_and_refuses_the_twins():
    """The Dockerfile's check after ``pip install .`` (the whole package imports; the kernels compiled; the
    version), run against this install: it passes with the compiled kernels and fails with the twins forced."""
    from test_compose import dockerfile_instructions

    install, = [arguments for keyword, arguments in dockerfile_instructions() if keyword == "RUN" and "pip install" in arguments]
    check = install[install.index("python -c"):]
    assert "import ordercube, ordercube.pipeline, ordercube.tasks" in check and "ordercube --version" in check
    env = {**clean_env(), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    passed = subprocess.run(["sh", "-c", check], capture_output=True, text=True, cwd=REPO.parent, env=env, timeout=300)
    assert passed.returncode == 0, passed.stderr
    assert passed.stdout.splitlines()[-1] == f"ordercube {importlib.metadata.version('ordercube')}"
    refused = subprocess.run(["sh", "-c", check], capture_output=True, text=True, cwd=REPO.parent, timeout=300,
                             env={**env, "ORDERCUBE_PURE_KERNELS": "1"})
    assert refused.returncode != 0 and "kernels not compiled" in refused.stderr, refused.stderr


# -- the version ----------------------------------------------------------------------------------------------------


def test_version_prints_the_installed_distribution_version():
    from importlib.metadata import version

    result = cli_in_process("--version")
    assert (result.returncode, result.stdout, result.stderr) == (0, f"ordercube {version('ordercube')}\n", "")
    assert version("ordercube").split(".")[0].isdigit()


# -- a wheel from python -m build, outside the repository -------------------------------------------------------


def quickstart_cut_down(folder: Path) -> Path:
    """configs/quickstart.yaml on a smaller grid: the same datasets, method and criteria."""
    import yaml

    config = yaml.safe_load((REPO / "configs" / "quickstart.yaml").read_text())
    config.update(n=[100], k={"from": 2, "to": 4}, resamples=3)
    return write_config(folder / "quickstart.yaml", **config)


@pytest.mark.slow
def test_a_built_wheel_runs_the_quickstart_outside_the_repository(tmp_path):
    sources = copy_sources(tmp_path / "src")
    built = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp_path / "dist"),
                            str(sources)], capture_output=True, text=True, env=clean_env(), timeout=900)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    sdist, = (tmp_path / "dist").glob("ordercube-*.tar.gz")  # the wheel was built from it: the sdist is complete
    wheel, = (tmp_path / "dist").glob("ordercube-*.whl")
    compiled = [name for name in zipfile.ZipFile(wheel).namelist() if name.endswith(".so")]
    assert len(compiled) == len(KERNELS), compiled  # a compiler was there: the kernels are in the wheel

    python = environment_with(tmp_path / "venv", wheel)
    digest = "from ordercube.pipeline.system.software import tasks_code_digest; print(tasks_code_digest())"
    digests = [subprocess.run([str(interpreter), "-c", digest], capture_output=True, text=True, env=clean_env(),
                              cwd=tmp_path, timeout=120).stdout for interpreter in (python, sys.executable)]
    assert digests[0] == digests[1] and len(digests[0].strip()) == 12  # the same sources, .pyx included
    work = tmp_path / "work"
    work.mkdir()
    config = quickstart_cut_down(work)
    ordercube = str(python.with_name("ordercube"))
    version = subprocess.run([ordercube, "--version"], capture_output=True, text=True, env=clean_env(), timeout=120)
    assert version.stdout.strip() == f"ordercube {importlib.metadata.version('ordercube')}", version.stderr
    ran = subprocess.run([ordercube, "run", "quickstart.yaml", "--workers", "1", "--no-progress"], cwd=work,
                         capture_output=True, text=True, env=clean_env(), timeout=900)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "compiled kernels" not in ran.stderr
    cube = work / "results" / "quickstart.zarr"
    report = subprocess.run([ordercube, "report", str(cube)], cwd=work, capture_output=True, text=True,
                            env=clean_env(), timeout=900)
    assert report.returncode == 0, report.stdout + report.stderr
    assert any((work / "results").glob("quickstart*report*/*.png"))

    here = cli("run", str(config), "--out", str(tmp_path / "here.zarr"), "--workers", "0", "--no-progress")
    assert here.returncode == 0, here.stderr
    assert_same_cube(cube, tmp_path / "here.zarr")
