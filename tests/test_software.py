"""What a process computes with (pipeline/system/software.py): the versions read from the dist-info folders' names are the
ones importlib.metadata reads from the files, and the code digest covers the compiled kernels' sources."""

from __future__ import annotations

from importlib import metadata

from ordercube.pipeline.system.software import package_versions, tasks_code_digest
from ordercube.pipeline.cube.layout import PACKAGES


def test_versions_from_the_folder_names_equal_importlib_metadata():
    names = (*PACKAGES, "numba", "pyyaml", "PyYAML", "scikit_learn", "no-such-distribution")
    expected = {}
    for name in names:
        try:
            expected[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            expected[name] = "not installed"
    assert package_versions(names) == expected
    assert expected["no-such-distribution"] == "not installed" and expected["numpy"] != "not installed"


def test_the_code_digest_changes_with_a_cython_kernel(tmp_path, monkeypatch):
    import shutil
    from pathlib import Path

    import ordercube.tasks as tasks

    copy = tmp_path / "tasks"
    shutil.copytree(Path(tasks.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.c"))
    monkeypatch.setattr(tasks, "__file__", str(copy / "__init__.py"))
    before = tasks_code_digest()
    kernel = copy / "algorithms" / "_lloyd.pyx"
    kernel.write_bytes(kernel.read_bytes() + b"\n# an edit\n")
    assert tasks_code_digest() != before
    (copy / "algorithms" / "_lloyd.cpython-311-x86_64-linux-gnu.so").write_bytes(b"built")  # a build is not code
    kernel.write_bytes(kernel.read_bytes()[: -len(b"\n# an edit\n")])
    assert tasks_code_digest() == before
