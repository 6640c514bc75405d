"""A stop asked for is a stop, even when its KeyboardInterrupt is lost (pipeline/system/interrupts.py)."""

from __future__ import annotations

import gc
import signal
import sys

import pytest

from conftest import small_config
from ordercube.pipeline.system import interrupts
from ordercube.pipeline.config.study import parse_config
from ordercube.pipeline.run.sweep import Interrupted, run_sweep
from ordercube.pipeline.cube.owner import Cube


def test_a_ctrl_c_swallowed_by_a_gc_callback_still_stops_the_sweep_and_the_cube_resumes(tmp_path, monkeypatch):
    """Python drops an exception raised in a garbage-collector callback (distributed registers one), so a
    Ctrl-C arriving there used to be lost and the sweep ran to the end; now the recorded request stops it."""
    config = parse_config(small_config(), base=tmp_path, out=str(tmp_path / "c.zarr"))
    lost = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: lost.append(unraisable.exc_type))

    def ctrl_c_during_a_collection(phase: str, info: dict) -> None:
        gc.callbacks.remove(ctrl_c_during_a_collection)
        interrupts.on_signal(signal.SIGINT, None)

    gc.callbacks.append(ctrl_c_during_a_collection)
    try:
        gc.collect()
        assert lost == [KeyboardInterrupt]  # Python swallowed it
        with pytest.raises(Interrupted):
            run_sweep(config, workers=0, show_progress=False, echo=lambda line: None)
    finally:
        interrupts.REQUESTED.clear()
        if ctrl_c_during_a_collection in gc.callbacks:
            gc.callbacks.remove(ctrl_c_during_a_collection)
    summary = run_sweep(config, workers=0, show_progress=False, echo=lambda line: None)
    assert summary.computed == 72 and Cube.open(tmp_path / "c.zarr").count_cells()["ok"] == 72
