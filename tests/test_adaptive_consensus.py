"""The adaptive rule for criteria reduced from stored clusterings: a bootstrap over resamples at each look.

The pure rule (ordercube.tasks.adaptive.bootstrap_look / bootstrap_race) on hand-made replicate curves: it stops
exactly when the share of replicates choosing k̂ reaches 1 - delta / L, never before the first look; then the
engine on a real zarr cube with the consensus scheme and PAC: an adaptive run against the full run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ordercube.tasks.adaptive import bootstrap_level, bootstrap_look, bootstrap_race
from ordercube.tasks.criteria import Decision

SMALLEST = Decision(rule="smallest")
LOOKS = (20, 40, 80)


def replicates_choosing(arm: int, count: int, total: int, arms: int = 4, rng_seed: int = 0) -> np.ndarray:
    """``total`` replicate curves (smallest wins) of which exactly ``count`` choose ``arm``; the others choose
    another arm at random."""
    rng = np.random.default_rng(rng_seed)
    curves = rng.uniform(0.3, 0.9, size=(total, arms))
    others = [a for a in range(arms) if a != arm]
    for b in range(total):
        winner = arm if b < count else others[int(rng.integers(len(others)))]
        curves[b, winner] = 0.1 + 0.01 * rng.random()
    return curves[rng.permutation(total)]


def test_the_level_is_delta_split_over_the_looks():
    assert bootstrap_level(0.05, LOOKS) == pytest.approx(1 - 0.05 / 3)
    assert bootstrap_level(0.1, (10, 20)) == pytest.approx(0.95)


@pytest.mark.parametrize("total", [100, 200, 1000])
def test_stops_exactly_when_the_share_choosing_k_hat_reaches_the_level(total):
    level = bootstrap_level(0.05, LOOKS)
    needed = math.ceil(level * total - 1e-9)  # the fewest replicates whose share reaches the level
    curve = np.array([0.5, 0.1, 0.4, 0.6])  # the prefix's curve chooses arm 1
    for count in (needed - 1, needed, total):
        for look in range(len(LOOKS)):
            outcome = bootstrap_look(curve, replicates_choosing(1, count, total), SMALLEST, LOOKS, look, delta=0.05)
            assert outcome.share == pytest.approx(count / total) and outcome.level == pytest.approx(level)
            assert outcome.choice == 1 and outcome.stop == LOOKS[look]
            if count >= needed:
                assert outcome.reason == "decided" and outcome.active == (1,)
            elif look == len(LOOKS) - 1:
                assert outcome.reason == "unsettled" and outcome.active == (0, 1, 2, 3)
            else:  # every k stays in play: a reduced curve needs each k's clusterings
                assert outcome.reason == "running" and outcome.active == (0, 1, 2, 3)
            assert outcome.trials == (LOOKS[look],) * 4 and outcome.cells == 4 * LOOKS[look]


def test_the_share_counts_the_curve_s_choice_not_the_replicates_majority():
    """k̂ is the prefix curve's choice; replicates that all agree on another arm do not settle it."""
    curve = np.array([0.5, 0.1, 0.4, 0.6])
    outcome = bootstrap_look(curve, replicates_choosing(2, 200, 200), SMALLEST, LOOKS, 0)
    assert outcome.choice == 1 and outcome.share == 0.0 and outcome.reason == "running"


def test_never_asked_before_the_first_look_and_stops_at_the_first_look_it_can():
    asked = []
    shares = {20: 150, 40: 190, 80: 200}  # of 200 replicates choosing arm 1: the level (0.9833) first met at 80

    def curves_at(r):
        asked.append(r)
        return np.array([0.5, 0.1, 0.4, 0.6]), replicates_choosing(1, shares[r], 200, rng_seed=r)

    outcome = bootstrap_race(curves_at, LOOKS, SMALLEST)
    assert asked == [20, 40, 80] and outcome.reason == "decided" and outcome.stop == 80
    asked.clear()
    shares[20] = 199  # 199 / 200 = 0.995 >= 0.9833: stops at the minimum, not before
    outcome = bootstrap_race(curves_at, LOOKS, SMALLEST)
    assert asked == [20] and outcome.stop == 20 and outcome.reason == "decided"
    asked.clear()
    shares[40] = 200
    outcome = bootstrap_race(curves_at, (40, 80), SMALLEST)  # a later minimum: nothing looked at before it
    assert asked == [40] and outcome.stop == 40


def test_epsilon_settles_replicates_within_it_of_choosing_k_hat():
    """As PSE-t's epsilon: a replicate whose value at k̂ is within epsilon of its best counts (settled, with the
    k's the replicates chose); beyond it, it does not."""
    curve = np.array([0.5, 0.10, 0.11, 0.6])
    rng = np.random.default_rng(3)
    replicates = np.tile(curve, (200, 1)) + rng.normal(0, 1e-4, size=(200, 4))
    replicates[:60, 2] = replicates[:60, 1] - 0.004  # 60 replicates choose arm 2, 0.004 below arm 1
    exact = bootstrap_look(curve, replicates, SMALLEST, LOOKS, 0, epsilon=0.0)
    assert exact.reason == "running" and exact.share == pytest.approx(140 / 200)
    settled = bootstrap_look(curve, replicates, SMALLEST, LOOKS, 0, epsilon=0.005)
    assert settled.reason == "settled" and settled.share == 1.0 and settled.choice == 1 and settled.active == (1, 2)
    short = bootstrap_look(curve, replicates, SMALLEST, LOOKS, 0, epsilon=0.003)
    assert short.reason == "running" and short.share == pytest.approx(140 / 200)


def test_largest_and_threshold_rules():
    largest = Decision(rule="largest")
    curve = np.array([0.2, 0.9, 0.3])
    replicates = np.tile(curve, (50, 1))
    replicates[:2, 2] = 0.95  # 2 of 50 choose arm 2: 0.96 < 1 - 0.05 / 3
    assert bootstrap_look(curve, replicates, largest, LOOKS, 0).reason == "running"
    replicates[:2, 2] = 0.3
    assert bootstrap_look(curve, replicates, largest, LOOKS, 0).reason == "decided"
    above = Decision(rule="largest_above", threshold=0.8)
    curve = np.array([0.95, 0.85, 0.5])
    replicates = np.tile(curve, (100, 1))
    replicates[:10, 1] = 0.79  # 10 of 100 put k index 1 below 0.8: they choose arm 0
    assert bootstrap_look(curve, replicates, above, LOOKS, 0).share == pytest.approx(0.9)
    assert bootstrap_look(curve, replicates, above, LOOKS, 0, epsilon=0.02).reason == "settled"
    none = np.array([0.5, 0.4, 0.3])  # no k above: k̂ "none" (-1), decided when every replicate agrees
    outcome = bootstrap_look(none, np.tile(none, (30, 1)), above, LOOKS, 2)
    assert outcome.choice == -1 and outcome.reason == "decided" and outcome.active == ()


# ------------------------------------------------------------------------------- the engine, on a real zarr cube


def blobs_csv(path, per_cluster: int = 20, centres=((0.0, 0.0), (6.0, 0.0), (3.0, 5.0)), sd: float = 0.4):
    """A 3-cluster CSV: Gaussian blobs in the plane (by default clean: well separated), rows in file order."""
    rng = np.random.default_rng(42)
    rows = np.vstack([np.asarray(centre) + rng.normal(0, sd, size=(per_cluster, 2)) for centre in centres])
    np.savetxt(path, rows, delimiter=",", header="x,y", comments="", fmt="%.6f")
    return path


def consensus_config(csv, **overrides) -> dict:
    config = {
        "name": "adaptive_consensus", "seed": 5, "n": ["all"], "k": [2, 3, 4, 5], "resamples": 40,
        "datasets": [{"name": "blobs", "kind": "file", "path": str(csv)}],
        "methods": [{"name": "cc", "algorithm": "kmeans", "params": {"n_init": 2}, "scheme": "consensus",
                     "scheme_params": {"p_item": 0.8}, "criteria": ["pac"]}],
        "adaptive": {"delta": 0.05, "looks": [10, 20, 40], "replicates": 100},
        "execution": {"task_seconds": 0.05},
    }
    config.update(overrides)
    return config


def run(tmp_path, name: str, raw: dict):
    from ordercube.pipeline.config.study import parse_config
    from ordercube.pipeline.cube.owner import open_cube
    from ordercube.pipeline.run.sweep import run_sweep

    config = parse_config(raw, base=tmp_path, out=str(tmp_path / name))
    run_sweep(config, show_progress=False, echo=lambda line: None, workers=0)
    return open_cube(tmp_path / name)


def full_k_hat(cube, model: str = "cc") -> int:
    """PAC's k̂ on every stored resample of the group, as the report decides it (the reducers' curve and rule)."""
    from ordercube.pipeline.reduce.assignments import reduced_scores
    from ordercube.pipeline.reduce.select import choose_on_curves
    from ordercube.tasks.criteria import get_criterion

    curves = reduced_scores(cube, replicates=0)[["pac"]].sel(dataset="blobs", n=60, model=model)
    return int(choose_on_curves(curves, "pac", get_criterion("pac").decision))


@pytest.fixture(scope="module")
def cubes(tmp_path_factory):
    """The adaptive run and the full run of one config (the same cube without the adaptive block)."""
    tmp_path = tmp_path_factory.mktemp("adaptive_consensus")
    csv = blobs_csv(tmp_path / "blobs.csv")
    adaptive = run(tmp_path, "adaptive.zarr", consensus_config(csv))
    fixed = run(tmp_path, "fixed.zarr", {key: value for key, value in consensus_config(csv).items() if key != "adaptive"})
    return adaptive.load(), fixed.load()


def test_the_adaptive_run_stops_early_on_the_full_run_s_k_hat_with_the_same_bits(cubes):
    import json

    from ordercube.pipeline.run.rounds import ADAPTIVE_ATTRIBUTE
    from ordercube.tasks.cell import Status

    adaptive, fixed = cubes
    record = json.loads(adaptive.attrs[ADAPTIVE_ATTRIBUTE])["blobs|60|cc"]
    race = record["criteria"]["pac"]
    full_k = full_k_hat(fixed)
    assert full_k == 3
    assert race["reason"] == "decided" and race["k_hat"] == full_k and race["rule"] == "bootstrap"
    r_stop = record["r_stop"]
    assert 10 <= r_stop < 40 and race["r_stop"] == r_stop  # early, never before the first look
    assert race["k_hat_share"] >= race["level"] == pytest.approx(1 - 0.05 / 3)
    status = adaptive["status"].sel(dataset="blobs", n=60, model="cc").transpose("k", "trial").values
    assert (status[:, :r_stop] == Status.OK).all() and (status[:, r_stop:] == Status.SKIPPED).all()
    assert record["cells"] == 4 * r_stop and record["budget"] == 4 * 40
    # the skipped cells say which look stopped them; no value, no assignment
    reasons = adaptive["reason"].sel(dataset="blobs", n=60, model="cc").transpose("k", "trial").values
    assert set(reasons[:, r_stop:].ravel()) == {f"adaptive: stopped at r = {r_stop} (pac decided)"}
    skipped = adaptive["assignment"].sel(dataset="blobs", n=60, model="cc").isel(trial=slice(r_stop, None))
    assert (skipped.values == -1).all()
    # the kept cells: every stored bit equal to the full run's (seconds aside)
    kept = {"trial": slice(0, r_stop)}
    for name in ("status", "reason", "assignment"):
        np.testing.assert_array_equal(adaptive[name].isel(kept).values, fixed[name].isel(kept).values, err_msg=name)
    assert (fixed["status"].values == Status.OK).all()


def test_the_recorded_share_is_the_bootstrap_over_the_stored_resamples(cubes):
    """Recomputed here from the stored clusterings: the kernels' bootstrap weights and PAC on each replicate."""
    import json
    from dataclasses import replace

    from ordercube.pipeline.reduce.assignments import BOOTSTRAP_KEY, clusterings_of, reduced_scores
    from ordercube.pipeline.run.rounds import ADAPTIVE_ATTRIBUTE
    from ordercube.tasks.consensus import bootstrap_weights
    from ordercube.tasks.criteria import get_criterion

    adaptive, fixed = cubes
    race = json.loads(adaptive.attrs[ADAPTIVE_ATTRIBUTE])["blobs|60|cc"]["criteria"]["pac"]
    r_stop = race["r_stop"]
    clusterings = clusterings_of(fixed.isel(trial=slice(0, r_stop)), "blobs", 60, "cc")
    assert np.unique(clusterings.trials).tolist() == list(range(r_stop))
    pac = get_criterion("pac")
    weights = bootstrap_weights(clusterings.trials, clusterings.rng(BOOTSTRAP_KEY), 100)
    curves = np.array([pac.reduce(replace(clusterings, weights=w), **pac.options)["pac"] for w in weights])
    curve = pac.reduce(clusterings, **pac.options)["pac"]
    np.testing.assert_allclose(race["curve"], curve)
    choices = np.array(clusterings.ks)[np.argmin(curves, axis=1)]
    assert race["k_hat_share"] == pytest.approx(np.mean(choices == 3))
    shift = np.median(curves, axis=0) - curve  # the replicates' median bias, which the interval is moved by
    np.testing.assert_allclose(race["lo"], np.quantile(curves, 0.025, axis=0) - shift)
    np.testing.assert_allclose(race["hi"], np.quantile(curves, 0.975, axis=0) - shift)
    # PAC's resampling error as the report states it: the same bootstrap on the adaptive cube's kept resamples
    reduced = reduced_scores(adaptive, replicates=100).sel(dataset="blobs", n=60, model="cc")
    np.testing.assert_allclose(reduced["pac"].values, curve)
    np.testing.assert_allclose(reduced["pac_lo"].values, race["lo"])
    np.testing.assert_allclose(reduced["pac_hi"].values, race["hi"])
    assert float(reduced["pac_k_hat_share"]) == pytest.approx(race["k_hat_share"])
    assert (reduced["pac_lo"] <= reduced["pac"]).all() and (reduced["pac"] <= reduced["pac_hi"]).all()
    assert float(reduced["pac_hi"].sel(k=3)) < float(reduced["pac_lo"].drop_sel(k=3).min())  # k = 3 apart


def test_the_report_states_pac_s_interval_and_the_replay_the_cells_saved(cubes):
    from ordercube.pipeline.report.replay import Setting, reduced_groups, replay
    from ordercube.pipeline.report.write import adaptive_groups

    adaptive, fixed = cubes
    table = adaptive_groups(adaptive)  # the report's adaptive.csv
    row = table[table["criterion"] == "pac"].iloc[0]
    assert row["reason"] == "decided" and row["k_hat"] == 3 and row["k_hat_share"] >= row["level"]
    assert row["score_low"] <= row["score_at_k_hat"] <= row["score_high"] < 0.05
    # the replay on the full cube: in index order, the live run's stop and k̂; fewer cells than the budget
    setting = Setting(delta=0.05, r_min=10, permutations=3, replicates=100)
    groups = reduced_groups(fixed, setting)
    assert [(g.dataset, g.n, g.method, g.criterion) for g in groups] == [("blobs", 60, "cc", "pac")]
    replayed = replay(None, setting, seed=5, groups=groups).iloc[0]
    assert replayed["fixed_k_hat"] == 3 and replayed["in_order_k"] == 3
    assert replayed["in_order_stop"] == row["r_stop"] and replayed["in_order_reason"] == "decided"
    assert replayed["orders"] == 4 and replayed["agreement"] == 1.0 and replayed["wrong"] == 0
    assert replayed["cells_mean"] < 1.0


def test_the_config_accepts_a_reduced_criterion_and_refuses_what_does_not_apply(tmp_path):
    from ordercube.pipeline.config.study import parse_config
    from ordercube.pipeline.errors import ConfigError

    csv = blobs_csv(tmp_path / "blobs.csv")
    config = parse_config(consensus_config(csv), base=tmp_path, out=str(tmp_path / "c.zarr"))
    spec = config.adaptive["cc"]
    assert spec.replicates == 100 and spec.looks == (10, 20, 40)
    for block, key, words in (({"replicates": 5}, "adaptive.replicates", "integer >= 10"),
                              ({"replicates": True}, "adaptive.replicates", "integer >= 10"),
                              ({"mode": "strict"}, "methods[0].criteria[0]", "reduced from stored clusterings")):
        with pytest.raises(ConfigError) as error:
            parse_config(consensus_config(csv, adaptive={"looks": [10, 20, 40], **block}), base=tmp_path,
                         out=str(tmp_path / "c.zarr"))
        assert str(error.value).startswith(key) and words in str(error.value), str(error.value)


def test_a_method_racing_per_trial_and_reduced_criteria_keeps_each_stop_and_the_full_run_s_bits(tmp_path):
    """The two halves with Lange's instability (PSE-t) and PAC on the halves' stored clusterings (the bootstrap),
    on two close blobs and a far one: PAC decides at the first look and its stop stands while Lange's race goes
    on to the budget; every cell kept equals the full run's."""
    import json

    from ordercube.pipeline.cube.attrs import BASELINE
    from ordercube.pipeline.run.rounds import ADAPTIVE_ATTRIBUTE
    from ordercube.tasks.adaptive import race_by
    from ordercube.tasks.cell import Status
    from ordercube.tasks.criteria import get_criterion

    csv = blobs_csv(tmp_path / "blobs.csv", centres=((0.0, 0.0), (2.0, 0.0), (9.0, 0.0)), sd=0.5)
    raw = consensus_config(csv, methods=[{"name": "km", "algorithm": "kmeans", "params": {"n_init": 2},
                                          "predictor": "nearest_centroid", "criteria": ["lange", "pac"]}])
    adaptive = run(tmp_path, "a.zarr", raw).load()
    fixed = run(tmp_path, "f.zarr", {key: value for key, value in raw.items() if key != "adaptive"}).load()
    record = json.loads(adaptive.attrs[ADAPTIVE_ATTRIBUTE])["blobs|60|km"]
    pac, lange = record["criteria"]["pac"], record["criteria"]["lange"]
    assert pac["reason"] == "decided" and pac["r_stop"] == 10 < record["r_stop"] == 40
    assert pac["k_hat"] == full_k_hat(fixed, "km") and pac["k_hat_share"] >= pac["level"]
    assert pac["eliminated"] == [[]]  # one look: the stop at the first, not recomputed at the later looks
    status = adaptive["status"].sel(dataset="blobs", n=60, model="km").transpose("k", "trial").values
    assert (status[:, : pac["r_stop"]] == Status.OK).all()  # no k left before PAC stopped
    kept = status == Status.OK
    assert kept.sum() == record["cells"] < record["budget"]
    for name in ("lange", "assignment", "reason"):
        a = adaptive[name].sel(dataset="blobs", n=60, model="km").transpose("k", "trial", ...).values
        f = fixed[name].sel(dataset="blobs", n=60, model="km").transpose("k", "trial", ...).values
        np.testing.assert_array_equal(a[kept], f[kept], err_msg=name)
    # Lange's race is today's, on the stored values
    values = adaptive["lange"].sel(dataset="blobs", n=60, model="km").transpose("trial", "k").values
    values = values / adaptive[BASELINE].sel(n=60).values[None, :]  # the score the rule races (Roth et al. 2002)
    ks = [k for k, column in zip(adaptive["k"].values, values[:10].T) if not np.isnan(column).all()]
    columns = [list(adaptive["k"].values).index(k) for k in ks]
    expected = race_by(get_criterion("lange").decision, values[:, columns], (10, 20, 40), delta=0.05, epsilon=0.0,
                       upto=record["r_stop"])
    assert (lange["reason"], lange["r_stop"], lange["k_hat"]) == (expected.reason, expected.stop, ks[expected.choice])
