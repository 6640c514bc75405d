"""Paired successive elimination with Bonferroni-corrected t intervals at fixed looks (PSE-t), the sequential
rule ordercube uses to stop resampling once k̂ is settled (a rule of its own; none of the papers gives one).

The arms are the k's of one group, a trial gives every arm's value at once (the same sample and split: the
values are paired), and smaller is better. At each look r (a trial-index prefix 0..r-1, never completion
order), for every pair (k, j) still in play, D_t = Y_t(k) - Y_t(j) over the trials where both have a value,
and its interval is mean ± t_{1 - delta'/2, r - 1} s / sqrt(r) with delta' = delta / (P L) (P pairs, L looks):

1. an arm whose difference to some other arm in play is above 0 with confidence is eliminated;
2. one arm left: *decided*;
3. an arm whose every difference's upper bound is <= epsilon: *settled* (the indistinguishable set reported;
   the arm picked by the criterion's tie convention);
4. at the last look: *unsettled*, the smallest mean in play.

Guarantee (asymptotic, by the CLT at each look and a union bound): the returned arm is within epsilon of the
best, or flagged unsettled, with probability >= 1 - delta - o(1).

The o(1) is not small for arms with rare large values (an instability that is 0 in most trials and ~0.9 in a
few): a prefix without such a trial gives a small, confident difference. Mode ``guarded`` trusts an interval only
once its trial count exceeds Cochran's rule for the normal approximation of a mean, r > 25 g1^2 (g1: the sample
skewness of the differences; Cochran 1977, Sampling Techniques, 3rd ed., sec. 2.15): a difference whose prefix
is skewed waits for more trials. It cannot see a tail that no trial of the prefix has reached, so it narrows the
failure without removing it (measured: ``benchmarks/bench_adaptive.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.criteria.rules import at_least, choose_index, mean_curve, tied_with

REASONS = ("decided", "settled", "unsettled")  # and "running": a race given only its first looks


@dataclass(frozen=True)
class Race:
    """The outcome of one race. ``choice`` and ``active`` are arm indices; ``trials[i]``: the trials arm i was
    given (the look at which it left, or the stop); ``eliminated[l]``: the arms that left at look l."""

    choice: int
    reason: str
    stop: int
    active: tuple[int, ...]
    trials: tuple[int, ...]
    eliminated: tuple[tuple[int, ...], ...]

    @property
    def cells(self) -> int:
        return int(sum(self.trials))


def doubling_looks(r_min: int, r_max: int) -> tuple[int, ...]:
    """r_min, 2 r_min, 4 r_min, ... below r_max, then r_max (the default schedule)."""
    looks, r = [], r_min
    while r < r_max:
        looks.append(r)
        r *= 2
    return (*looks, r_max)


def t_quantile(q: float, df: Any) -> Any:
    """Student's t quantile ``q`` with ``df`` degrees of freedom (scipy.special, imported on use)."""
    from scipy.special import stdtrit

    return stdtrit(df, q)


MODES = ("t", "guarded", "strict")  # the config's adaptive.mode
RADII = (*MODES, "hoeffding")  # and the replay's ablation: Hoeffding races (Maron & Moore 1994)
BOUNDED = ("strict", "hoeffding")  # the radii that need each arm's range of values
COCHRAN = 25.0  # Cochran's rule: a mean of r values is near normal once r > 25 g1^2


def _radius(sd: NDArray[np.float64], count: NDArray[np.int64], delta_each: float, mode: str = "t",
            width: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """The half-width of an interval for a mean of ``count`` values with sample sd ``sd``, at level 1 - delta_each.

    ``t`` (and ``guarded``): Student's t, t_{1 - delta_each/2, count-1} sd / sqrt(count) (asymptotic). ``strict``:
    the empirical Bernstein bound of Maurer & Pontil (2009, Thm 4), two-sided, for values in a range of ``width``:
    sqrt(2 V ln(4/delta_each) / count) + 7 width ln(4/delta_each) / (3 (count - 1)) (valid at every count, and
    wide: a pilot run saw it never stop by 200 trials). ``hoeffding``: Hoeffding's bound for that range,
    width sqrt(ln(2/delta_each) / (2 count)) (Maron & Moore's races; no variance term)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        if mode in ("t", "guarded"):
            radius = t_quantile(1 - delta_each / 2, np.maximum(count - 1, 1).astype(float)) * sd / np.sqrt(count)
        elif mode == "strict":
            log_term = math.log(4 / delta_each)
            radius = np.sqrt(2 * sd**2 * log_term / count) + 7 * width * log_term / (3 * (count - 1))
        elif mode == "hoeffding":
            radius = width * np.sqrt(math.log(2 / delta_each) / (2 * count))
        else:
            raise ValueError(f"unknown mode {mode!r}; expected one of {RADII}")
    return np.where(count >= 2, radius, np.inf)


def _too_skewed(spread: NDArray[np.float64], count: NDArray[np.int64]) -> NDArray[np.bool_]:
    """Where a mean of ``count`` values, whose deviations from their mean are ``spread`` (values on axis 0, zeros
    where absent), is not yet near normal by Cochran's rule: count <= 25 g1^2, g1 = m3 / m2^(3/2) the sample
    skewness (0 for values without spread)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        m2 = (spread**2).sum(axis=0) / count
        m3 = (spread**3).sum(axis=0) / count
        skewness = np.where(m2 > 0, m3 / np.where(m2 > 0, m2, 1.0) ** 1.5, 0.0)
    return count <= COCHRAN * skewness**2


def mean_and_radius(block: NDArray[np.float64], delta_each: float, mode: str,
                     width: NDArray[np.float64] | None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The mean over axis 0 of ``block`` (NaN: absent) and its interval's radius by ``mode`` (:func:`_radius`;
    ``guarded``: infinite where Cochran's rule finds too few values, :func:`_too_skewed`)."""
    present = ~np.isnan(block)
    count = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(present, block, 0.0).sum(axis=0) / count
        spread = np.where(present, block - mean, 0.0)
        sd = np.sqrt((spread**2).sum(axis=0) / (count - 1))
    radius = _radius(sd, count, delta_each, mode, width)
    if mode == "guarded":
        radius = np.where(_too_skewed(spread, count), np.inf, radius)
    return mean, radius


def _intervals(values: NDArray[np.float64], delta_pair: float, mode: str = "t",
               ranges: NDArray[np.float64] | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Mean and radius of every pairwise difference D(k, j) = Y(k) - Y(j), shape (a, a); NaN pairs have no interval.
    ``ranges``: each arm's values lie in [0, ranges[k]] (the bounded modes: D(k, j) in a range of ranges[k] +
    ranges[j])."""
    width = None if ranges is None else ranges[:, None] + ranges[None, :]
    return mean_and_radius(values[:, :, None] - values[:, None, :], delta_pair, mode, width)


def _check_mode(mode: str, ranges: Any) -> None:
    if mode not in RADII:
        raise ValueError(f"unknown mode {mode!r}; expected one of {RADII}")
    if mode in BOUNDED and ranges is None:
        raise ValueError(f"mode {mode!r} needs each arm's range of values (ranges)")


def race(values: NDArray[np.float64], looks: Sequence[int], *, delta: float = 0.05, epsilon: float = 0.0,
         ties: str = "largest", upto: int | None = None, mode: str = "t",
         ranges: NDArray[np.float64] | None = None) -> Race:
    """PSE-t on ``values`` of shape (trials, arms), arms in increasing k; ``ties``: the arm picked among equals
    (``largest`` or ``smallest`` index, the criterion's convention). Only ``values[:looks[-1]]`` is read.

    ``upto``: only the looks at most ``upto`` are taken (a race still being run: the trials after are not
    computed yet); if none of them stops the race, it is returned ``running`` after the last of them, with the
    arms still in play (``choice``: the first of them, ``stop``: that look, 0 before the first). ``mode``: the
    intervals (:func:`_radius`): ``t``; ``guarded``, a difference judged only once Cochran's rule holds for it
    (:func:`_too_skewed`); ``strict`` and ``hoeffding`` for arms with values in [0, ranges[k]]."""
    _check_mode(mode, ranges)
    arms = values.shape[1]
    pairs = arms * (arms - 1) // 2
    delta_pair = delta / (max(pairs, 1) * len(looks))
    active = list(range(arms))
    trials = [0] * arms
    eliminated: list[tuple[int, ...]] = []

    def pick(candidates: list[int]) -> int:
        return max(candidates) if ties == "largest" else min(candidates)

    taken = 0
    for look, r in enumerate(looks):
        if upto is not None and r > upto:
            return Race(active[0], "running", taken, tuple(active), tuple(trials), tuple(eliminated))
        taken = r
        mean, radius = _intervals(values[:r][:, active], delta_pair, mode, None if ranges is None else ranges[active])
        worse = ((mean - radius) > 0).any(axis=1)
        gone = tuple(arm for arm, out in zip(active, worse) if out)
        for arm in gone:
            trials[arm] = r
        eliminated.append(gone)
        keep = [i for i, out in enumerate(worse) if not out]
        active = [active[i] for i in keep]
        mean, radius = mean[np.ix_(keep, keep)], radius[np.ix_(keep, keep)]
        if len(active) == 1:
            trials[active[0]] = r
            return Race(active[0], "decided", r, tuple(active), tuple(trials), tuple(eliminated))
        upper = mean + radius
        np.fill_diagonal(upper, -np.inf)
        settled = [arm for arm, row in zip(active, upper) if bool((row <= epsilon).all())]
        last = look == len(looks) - 1
        if settled or last:
            for arm in active:
                trials[arm] = r
            if settled:
                return Race(pick(settled), "settled", r, tuple(active), tuple(trials), tuple(eliminated))
            # exact sums (math.fsum): the same trials in another order give the same means, and the same ties
            block = values[:r][:, active]
            means = np.array([math.fsum(column[~np.isnan(column)]) / max(int((~np.isnan(column)).sum()), 1)
                              for column in block.T])
            best = [arm for arm, tied in zip(active, tied_with(means, np.nanmin(means))) if tied]
            return Race(pick(best) if best else active[0], "unsettled", r, tuple(active), tuple(trials), tuple(eliminated))
    raise ValueError("race: no looks given")


def threshold_race(values: NDArray[np.float64], looks: Sequence[int], *, threshold: float, delta: float = 0.05,
                   epsilon: float = 0.0, upto: int | None = None, mode: str = "t",
                   ranges: NDArray[np.float64] | None = None) -> Race:
    """The sequential form of "the largest k whose mean is at least ``threshold``" (Prediction Strength;
    "Other decision rules"), on ``values`` of shape (trials, arms), arms in increasing k.

    At each look every arm still needed gets a one-sample t interval of its mean, mean ± t_{1 - delta'/2, r - 1}
    s / sqrt(r) with delta' = delta / (arms L): above the threshold with confidence, it is classified above;
    below, below; within ``threshold ± epsilon``, on the side of its mean (settled). Only the arms above the
    largest one classified above are needed (a smaller k cannot be the largest above). Stops *decided* (or
    *settled* if an epsilon classification was used) when no arm is needed; ``choice``: the largest arm above,
    -1 if none. At the last look the arms still needed are classified by their means: *unsettled*.
    ``running``: as :func:`race` with ``upto``; ``mode``, ``ranges``: as :func:`race`.
    """
    _check_mode(mode, ranges)
    arms = values.shape[1]
    delta_arm = delta / (max(arms, 1) * len(looks))
    above: set[int] = set()
    classified: set[int] = set()
    trials = [0] * arms
    eliminated: list[tuple[int, ...]] = []
    settled = False
    taken = 0

    def needed() -> list[int]:
        floor = max(above) if above else -1
        return [arm for arm in range(floor + 1, arms) if arm not in classified]

    def largest_above() -> int:
        return max(above) if above else -1

    for look, r in enumerate(looks):
        active = needed()
        if upto is not None and r > upto:
            return Race(active[0] if active else -1, "running", taken, tuple(active), tuple(trials), tuple(eliminated))
        taken = r
        mean, radius = mean_and_radius(values[:r][:, active], delta_arm, mode,
                                       None if ranges is None else np.asarray(ranges)[active])
        last = look == len(looks) - 1
        for arm, m, rad in zip(active, mean, radius):
            if m - rad >= threshold:
                above.add(arm)
                classified.add(arm)
            elif m + rad < threshold:
                classified.add(arm)
            elif threshold - epsilon <= m - rad and m + rad <= threshold + epsilon:
                settled = True
                classified.add(arm)
                if m >= threshold:
                    above.add(arm)
        remaining = needed()
        gone = tuple(arm for arm in active if arm not in remaining)
        for arm in gone:
            trials[arm] = r
        eliminated.append(gone)
        if not remaining:
            return Race(largest_above(), "settled" if settled else "decided", r, (), tuple(trials), tuple(eliminated))
        if last:
            for arm in remaining:
                trials[arm] = r
            means = {arm: m for arm, m in zip(active, mean)}
            for arm in remaining:
                if at_least(means[arm], threshold):  # the fixed budget's comparison (ordercube.tasks.criteria.rules)
                    above.add(arm)
            return Race(largest_above(), "unsettled", r, tuple(remaining), tuple(trials), tuple(eliminated))
    raise ValueError("threshold_race: no looks given")


SEQUENTIAL_RULES = ("smallest", "largest_above")  # decision rules (on the mean over trials) with a race here


def has_race(rule: Any) -> bool:
    """Whether a decision rule (``ordercube.tasks.criteria.Decision``) has a race here: on the mean, by one of ``SEQUENTIAL_RULES``."""
    return rule.rule in SEQUENTIAL_RULES and rule.aggregate == "mean"


def race_by(rule: Any, values: NDArray[np.float64], looks: Sequence[int], *, delta: float, epsilon: float,
            upto: int | None = None, mode: str = "t", ranges: NDArray[np.float64] | None = None) -> Race:
    """The race of a criterion's decision rule (``ordercube.tasks.criteria.Decision``): :func:`race` for "smallest",
    :func:`threshold_race` for "largest_above" (Prediction Strength); ``mode``, ``ranges``: as :func:`race`."""
    if rule.rule == "largest_above":
        return threshold_race(values, looks, threshold=float(rule.threshold), delta=delta, epsilon=epsilon, upto=upto,
                              mode=mode, ranges=ranges)
    return race(values, looks, delta=delta, epsilon=epsilon, ties=rule.ties, upto=upto, mode=mode, ranges=ranges)


def choice_on_means(rule: Any, values: NDArray[np.float64]) -> int:
    """The column the rule chooses from the means of ``values`` (trials, arms) over the trials with a value, by
    :func:`ordercube.tasks.criteria.rules.choose_index` (ties within its tolerance by the rule's convention); -1 where it
    chooses none (no mean above the threshold, or no value)."""
    threshold = None if rule.threshold is None else float(rule.threshold)
    return choose_index(mean_curve(values), rule.rule, ties=rule.ties, threshold=threshold)
