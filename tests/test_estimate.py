"""The wall time said before a run (ordercube.pipeline.run.estimate) and the progress bar's ETA: the extrapolation
from a pilot of known cell times checked by hand, the pilot's cells stored bit for bit as a run without a pilot
stores them, and the bar in a Jupyter kernel. No timing is asserted: benchmarks/bench_estimate.py measures them."""

from __future__ import annotations

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

import ordercube
from conftest import REPO, small_config
from ordercube.pipeline.cube.grid import estimated_seconds
from ordercube.pipeline.run import estimate as est
from ordercube.pipeline.run.progress import clock, eta_seconds


def two_methods(**overrides) -> dict:
    config = small_config(resamples=8, execution={"trials_per_chunk": 4})
    config["methods"].append({"name": "km1", "algorithm": "kmeans", "predictor": "nearest_centroid",
                              "criteria": ["lange"]})
    config.update(overrides)
    return config


def fake_pilot(plan, times) -> est.Pilot:
    """Every pilot piece (budget unbounded), ``times(piece, modelled)`` as its measured seconds."""
    pilot = est.Pilot(seconds=1.5)
    for piece, modelled in est.pilot_pieces(plan, budget=float("inf")):
        pilot.pieces.append((piece, modelled, times(piece, modelled)))
    return pilot


def test_a_pilot_at_twice_the_model_doubles_the_estimate(tmp_path):
    plan = ordercube.validate(two_methods(), out=tmp_path / "c.zarr")
    pilot = fake_pilot(plan, lambda piece, modelled: 2 * modelled)
    # one piece per (dataset, n, method): 2 x 2 x 2, each one trial of every k (3 cells)
    assert len(pilot.pieces) == 8 and pilot.cells == 24
    guess = est.estimate(plan, pilot)
    assert guess.modelled == pytest.approx(plan.estimated_seconds, rel=1e-12)
    assert guess.work == pytest.approx(2 * plan.estimated_seconds, rel=1e-12)
    assert guess.ratio == pytest.approx(2.0, rel=1e-12)
    assert guess.pilot_work == pytest.approx(2 * sum(m for _, m, _ in pilot.pieces), rel=1e-12)
    assert guess.remaining == pytest.approx(guess.work - guess.pilot_work, rel=1e-12)


def test_each_method_is_rescaled_by_its_own_ratio(tmp_path):
    plan = ordercube.validate(two_methods(), out=tmp_path / "c.zarr")

    def times(piece, modelled):  # method 0 at 3x, method 1 at 0.5x
        return modelled * (3.0 if piece.model == 0 else 0.5)

    pilot = fake_pilot(plan, times)
    guess = est.estimate(plan, pilot)
    timed = {piece: measured for piece, _, measured in pilot.pieces}
    by_model = {0: 0.0, 1: 0.0}
    for chunk in plan.iter_chunks():
        by_model[chunk.model] += estimated_seconds(chunk, plan.coords, plan.cell_costs)
    pilot_modelled = {m: sum(s for p, s, _ in pilot.pieces if p.model == m) for m in (0, 1)}
    expected = (sum(timed.values()) + 3.0 * (by_model[0] - pilot_modelled[0])
                + 0.5 * (by_model[1] - pilot_modelled[1]))
    assert guess.work == pytest.approx(expected, rel=1e-12)


def test_the_wall_time_adds_the_pilot_the_writes_and_a_cluster_start(tmp_path):
    guess = est.Estimate(work=10.0, modelled=4.0, chunks=20, pilot_cells=6, pilot_seconds=0.5, pilot_work=1.0)
    speedup = 1 + est.PARALLEL_EFFICIENCY
    here = 0.5 + est.START_SECONDS + 20 * est.WRITE_SECONDS + 9.0 / speedup
    assert guess.wall(2, cluster=False) == pytest.approx(here, rel=1e-12)
    assert guess.wall(2, cluster=True) == pytest.approx(here + est.CLUSTER_START_SECONDS, rel=1e-12)
    busy = est.Estimate(work=10.0, modelled=4.0, chunks=20, pilot_seconds=0.5, pilot_work=1.0, warm_up=0.7,
                        slowdown=3.0)
    assert busy.wall(2, cluster=True) - busy.wall(2, cluster=False) == pytest.approx(
        3.0 * est.CLUSTER_START_SECONDS + 0.7, rel=1e-12)
    assert guess.wall(1, cluster=False) == pytest.approx(here - 9.0 / speedup + 9.0, rel=1e-12)
    assert guess.line(2, cluster=True) == f"estimated {guess.wall(2, cluster=True):.1f} s on 2 local worker(s) " \
                                          "(pilot of 6 cells: 0.5 s)"
    assert "not written" in guess.line(2, cluster=False, written=False)


class FakeClock:
    """``perf_counter`` of the estimate module, moved on by the fake computes below: no real time is measured."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now


@pytest.mark.parametrize(("process", "task", "trial"), [(5.0, 0.004, 0.03), (0.0, 0.005, 0.0006), (2.0, 0.0, 0.4)])
def test_the_pilot_tells_a_processs_set_up_from_a_tasks_and_a_trials(tmp_path, monkeypatch, process, task, trial):
    """A = P + F + c, B1 = F + c, B3 = F + 3c: P once per process (the first piece of a group pays it), F per piece
    (a task), c per trial; the estimate adds F per task, P once to a cluster's start and c per remaining trial."""
    plan = ordercube.validate(two_methods(resamples=40, execution={"trials_per_chunk": 20}), out=tmp_path / "c.zarr")
    clock, built = FakeClock(), set()
    monkeypatch.setattr(est, "time", clock)
    monkeypatch.setattr(est, "PILOT_SECONDS", 100.0)

    def compute(piece, warm_up=False):
        if warm_up:
            return []
        group = (piece.dataset, piece.n, piece.model)
        clock.now += (0.0 if group in built else process) + task + trial * len(piece.trial)
        built.add(group)
        return []

    pilot = est.Pilot()
    first = next(est.pilot_pieces(plan, float("inf")))[0]
    pilot.pieces.append((first, 1.0, process + task + trial))
    built.add((first.dataset, first.n, first.model))
    est._time_fixed_cost(plan, pilot, first, 1.0, process + task + trial, compute, left=100.0)
    assert [len(piece.trial) for piece, _, _ in pilot.pieces] == [1, 1, est.SECOND_PIECE_TRIALS]
    assert pilot.process_set_up[first.model] == pytest.approx(process, abs=1e-12)
    assert pilot.fixed[first.model] == pytest.approx(task, abs=1e-12)
    assert [measured for _, _, measured in pilot.pieces] == pytest.approx([trial, trial, 3 * trial], abs=1e-12)
    guess = est.estimate(plan, pilot)
    assert guess.process_set_up == pytest.approx(process, abs=1e-12)
    assert guess.wall(2, cluster=True) - guess.wall(2, cluster=False) == pytest.approx(
        est.CLUSTER_START_SECONDS * guess.slowdown + process, rel=1e-9)
    # no room for the third piece: F is taken as 0, the second piece's seconds as a trial's
    short = est.Pilot(pieces=[(first, 1.0, process + task + trial)])
    est._time_fixed_cost(plan, short, first, 1.0, process + task + trial, compute, left=0.0)
    assert len(short.pieces) == 2 and short.fixed[first.model] == 0.0
    assert short.process_set_up[first.model] == pytest.approx(process, abs=1e-12)
    assert [measured for _, _, measured in short.pieces] == pytest.approx([task + trial] * 2, abs=1e-12)


def test_the_pilot_stays_within_its_budget_and_skips_a_tiny_plan(tmp_path):
    plan = ordercube.validate(two_methods(), out=tmp_path / "c.zarr")
    budget = plan.estimated_seconds * 0.1
    pieces = list(est.pilot_pieces(plan, budget))
    assert pieces and sum(cost for _, cost in pieces) <= budget
    assert {piece.model for piece, _ in pieces} == {0, 1}  # the methods in turn: both get a piece first
    small = ordercube.validate(small_config(resamples=1, n=[10], k=[2]), out=tmp_path / "s.zarr")
    assert small.estimated_seconds < est.PILOT_MIN_WORK
    assert est.run_pilot(small, lambda piece: pytest.fail("a tiny plan gets no pilot")).pieces == []


def cube_values(path):
    cube = ordercube.open_cube(path).load()
    return {name: cube[name].values for name in cube.data_vars if name not in ("seconds",)}


def test_the_pilots_cells_land_in_the_cube_as_a_run_without_pilot_computes_them(tmp_path, monkeypatch, capsys):
    config = two_methods()
    monkeypatch.setattr(est, "PILOT_MIN_WORK", float("inf"))
    ordercube.sweep(config, out=tmp_path / "plain.zarr", workers=0, progress=True)
    assert "(cost model)" in capsys.readouterr().out
    monkeypatch.setattr(est, "PILOT_MIN_WORK", 0.0)
    monkeypatch.setattr(est, "PILOT_SHARE", 0.3)
    ordercube.sweep(config, out=tmp_path / "pilot.zarr", workers=0, progress=True)
    printed = capsys.readouterr().out
    assert "pilot of " in printed, printed
    plain, piloted = cube_values(tmp_path / "plain.zarr"), cube_values(tmp_path / "pilot.zarr")
    assert set(plain) == set(piloted)
    for name in plain:
        np.testing.assert_array_equal(plain[name], piloted[name], err_msg=name)
    assert (piloted["status"] == 1).all()


def test_validate_prints_the_estimate_of_its_pilot_without_writing(tmp_path, monkeypatch, capsys):
    from ordercube.pipeline.cli import main

    monkeypatch.setattr(est, "PILOT_MIN_WORK", 0.0)
    path = tmp_path / "c.yaml"
    import yaml

    path.write_text(yaml.safe_dump(two_methods(out=str(tmp_path / "c.zarr"))))
    assert main(["validate", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "  estimated " in printed and "not written)" in printed, printed
    assert not (tmp_path / "c.zarr").exists()


def test_the_eta_starts_from_the_estimate_and_moves_to_the_pace():
    assert eta_seconds(elapsed=2.0, done=0.0, estimate=30.0) == 28.0
    assert eta_seconds(elapsed=10.0, done=0.5, estimate=30.0) == pytest.approx(0.5 * 20.0 + 0.5 * 10.0)
    assert eta_seconds(elapsed=10.0, done=0.5, estimate=None) == pytest.approx(10.0)
    assert eta_seconds(elapsed=40.0, done=0.0, estimate=30.0) == 40.0  # late: as long again
    assert eta_seconds(elapsed=0.0, done=0.0, estimate=None) is None
    assert clock(75.4) == "0:01:15" and clock(None) == "-:--:--"


def test_a_long_run_draws_the_bar_with_its_eta(tmp_path, monkeypatch, capsys):
    from ordercube.pipeline.run import sweep as sweep_module

    monkeypatch.setattr(sweep_module, "PROGRESS_FROM_SECONDS", 0.0)
    ordercube.sweep(small_config(), out=tmp_path / "c.zarr", workers=0, progress=True)
    drawn = capsys.readouterr().err
    assert "cells" in drawn and "ETA" in drawn and "72/72" in drawn, drawn


NOTEBOOK_BAR = """
import time
from ordercube.pipeline.run.progress import SweepProgress
with SweepProgress(40, enabled=True, estimate=20.0) as bar:
    for _ in range(4):
        bar.advance(10)
        time.sleep(0.3)
"""


def test_the_bar_and_its_eta_show_in_jupyter():
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(NOTEBOOK_BAR)])
    NotebookClient(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    outputs = notebook.cells[0].outputs
    text = "".join(str(output.get("data", {}).get("text/plain", "")) + output.get("text", "") for output in outputs)
    assert "cells " in text and "40/40" in text and "ETA 0:00:" in text, outputs
    assert "ipywidgets" not in text, outputs
