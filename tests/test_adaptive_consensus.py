"""The adaptive rule for criteria reduced from stored clusterings: a bootstrap over resamples at each look.

The pure rule (ordercube.tasks.adaptive.bootstrap_look / bootstrap_race) on hand-made replicate curves: it stops
exactly when the share of replicates choosing k̂ reaches 1 - delta / L, never before the first look; then the
engine on a real zarr cube with the consensus scheme and PAC: an adaptive run against the full run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ordercube.tasks.adaptive import bootstrap_level, bootstrap_look, bootstrap_race, percentile_interval
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


def test_percentile_interval_is_the_replicates_quantiles():
    rng = np.random.default_rng(5)
    replicates = rng.normal(size=(400, 3))
    replicates[:, 2] = np.nan
    low, high = percentile_interval(replicates, 0.9)
    np.testing.assert_allclose(low[:2], np.quantile(replicates[:, :2], 0.05, axis=0))
    np.testing.assert_allclose(high[:2], np.quantile(replicates[:, :2], 0.95, axis=0))
    assert np.isnan(low[2]) and np.isnan(high[2])
