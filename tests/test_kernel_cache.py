"""numba's cache of the compiled kernels is put where it can be written (pipeline/system/kernel_cache.py)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from ordercube.pipeline.system import kernel_cache


@pytest.fixture
def no_user_setting(monkeypatch):
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.delenv("ORDERCUBE_CACHE", raising=False)
    yield
    os.environ.pop("NUMBA_CACHE_DIR", None)  # set by the function under test: not for the other tests


def test_a_writable_source_tree_keeps_numbas_own_cache(no_user_setting):
    assert kernel_cache.use_writable_cache() is None  # this checkout is writable: numba caches beside the source
    assert "NUMBA_CACHE_DIR" not in os.environ


def test_a_read_only_install_without_a_home_caches_in_ordercubes_folder_then_in_the_temporary_one(
        no_user_setting, monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"  # nothing can be created below a regular file: unwritable, even for root
    blocker.write_text("")
    monkeypatch.setattr(kernel_cache, "KERNELS", blocker / "site-packages" / "tasks" / "algorithms")
    monkeypatch.setenv("ORDERCUBE_CACHE", str(tmp_path / "cache"))
    assert kernel_cache.use_writable_cache() == str(tmp_path / "cache" / "numba")
    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "cache" / "numba")

    os.environ.pop("NUMBA_CACHE_DIR")
    monkeypatch.setenv("ORDERCUBE_CACHE", str(blocker / "cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "home-cache"))
    chosen = Path(kernel_cache.use_writable_cache() or "")
    assert chosen == Path(tempfile.gettempdir()) / f"ordercube-{os.getuid()}" / "numba" and chosen.is_dir()


def test_the_users_numba_cache_dir_is_left_alone(no_user_setting, monkeypatch, tmp_path):
    monkeypatch.setattr(kernel_cache, "KERNELS", tmp_path / "a-file" / "x")
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    assert kernel_cache.use_writable_cache() is None and os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "mine")
