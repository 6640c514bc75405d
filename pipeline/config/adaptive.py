"""The config's ``adaptive:`` block: stop spending resamples once k̂ is settled (:mod:`ordercube.tasks.adaptive`).

Opt-in, for the whole sweep (top level) or per method (``methods[i].adaptive``: its keys replace the top
level's, ``adaptive: off`` turns it off for that method). Every criterion of an adaptive method must have a
sequential rule: those decided by the smallest mean over the trials (Lange, pairwise, the transfer costs,
BIC/AIC, the supervised errors: PSE-t) and Prediction Strength (the largest k above its threshold: each k
classified above or below with the same t intervals), all in :mod:`ordercube.tasks.adaptive`, at fixed looks:
trial-index prefixes that are multiples of the cube's trials per chunk, the last the config's ``resamples``.
A criterion reduced from stored clusterings (``Criterion.reduce``: one curve over k, no per-trial values) is
raced by a bootstrap over the resamples of the prefix instead (``bootstrap_look``): settled once the share of
``replicates`` choosing the prefix's k̂ reaches 1 - delta / (the number of looks).

    adaptive:
      delta: 0.05      # error probability of the decision (0 < delta < 1)
      epsilon: 0.0     # indifference zone in the criterion's units (>= 0): k's closer than this may tie
      r_min: 20        # looks r_min, 2 r_min, 4 r_min, ... then resamples; or
      looks: [20, 40, 80, 200]   # explicit looks, increasing, the last = resamples
      mode: t          # Student-t intervals (asymptotic guarantee); guarded: each t interval trusted
                       # only once Cochran's rule holds for it (trials > 25 skewness^2: for arms with rare large
                       # values; more cells); strict: empirical Bernstein (criteria with values in [0, 1] only;
                       # valid at every trial count, stops late)
      replicates: 100  # bootstrap replicates over resamples at each look, for criteria reduced from stored
                       # clusterings (>= 10)

The block is not part of the cube's identity: a cube computed with it is the same cube with fewer cells,
which a later run (more resamples, adaptive off) extends.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ordercube.pipeline.errors import ConfigError
from ordercube.tasks.adaptive import MODES, REPLICATES, doubling_looks, has_curve_race, has_race
from ordercube.tasks.criteria import get_criterion, is_reduced
from ordercube.tasks.params import show

KEYS = ("delta", "epsilon", "r_min", "looks", "mode", "replicates")
OFF = (False, "off", None)
# Criteria whose stored values lie in [0, 1] (disagreement fractions, prediction strength, error rates): mode
# strict's empirical Bernstein bound needs the range (Lange's score divided by its baseline: [0, 1 / baseline]).
UNIT_RANGE = ("lange", "pairwise", "prediction_strength", "test_error", "true_error", "loo_cv")


@dataclass(frozen=True)
class AdaptiveSpec:
    """The rule of one method: PSE-t with these parameters at these looks (``replicates``: the bootstrap over
    resamples of its criteria reduced from stored clusterings, recorded with their stops)."""

    delta: float
    epsilon: float
    looks: tuple[int, ...]
    mode: str = "t"
    replicates: int = REPLICATES

    def record(self) -> dict[str, Any]:
        return {"rule": "PSE-t", "mode": self.mode, "delta": self.delta, "epsilon": self.epsilon, "looks": list(self.looks)}


def sequential(criterion: str) -> bool:
    """Whether ``criterion`` has a sequential rule here: decided by the smallest mean over the trials, or by the
    largest k whose mean is above a threshold (Prediction Strength): ordercube.tasks.adaptive.race_by; reduced from
    stored clusterings and decided on its curve by a rule of ``ordercube.tasks.adaptive.CURVE_RULES``: the
    bootstrap over resamples, ordercube.tasks.adaptive.bootstrap_look."""
    record = get_criterion(criterion)
    if is_reduced(criterion):
        return has_curve_race(record.decision)
    return has_race(record.decision)


def score_ranges(criterion: str, baseline: np.ndarray | None, count: int) -> np.ndarray:
    """Mode strict: the upper ends of the ``count`` arms' score ranges [0, r_k]: 1 for values in [0, 1], 1 / the
    random-labeling baseline for Lange's normalised score (``baseline``: that n's baseline at the arms' k's, or None)."""
    if get_criterion(criterion).normalised_by_random_labels and baseline is not None:
        return 1.0 / np.asarray(baseline, dtype=float)
    return np.ones(count)


def _number(block: Mapping[str, Any], name: str, key: str, default: float, *, low: float, high: float | None,
            fix: str) -> float:
    value = block.get(name, default)
    good = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    if not good or value < low or (high is not None and not low < value < high):
        bounds = f"> {low:g} and < {high:g}" if high is not None else f">= {low:g}"
        raise ConfigError(f"{key}.{name}", f"expected a number {bounds}, got {show(value)}", fix)
    return float(value)


def _looks(block: Mapping[str, Any], key: str, resamples: int) -> tuple[int, ...]:
    if "looks" in block and "r_min" in block:
        raise ConfigError(f"{key}.looks", "both looks and r_min are given", "keep one: looks lists them, r_min doubles")
    if "looks" not in block:
        r_min = block.get("r_min", 20)
        if isinstance(r_min, bool) or not isinstance(r_min, int) or not 2 <= r_min:
            raise ConfigError(f"{key}.r_min", f"expected an integer >= 2, got {show(r_min)}",
                              "e.g. r_min: 20 (the default: the t intervals need about 20 trials)")
        return doubling_looks(min(r_min, resamples), resamples)
    looks = block["looks"]
    if not isinstance(looks, Sequence) or isinstance(looks, str) or not looks or any(
            isinstance(r, bool) or not isinstance(r, int) for r in looks):
        raise ConfigError(f"{key}.looks", f"expected a list of trial counts, got {show(looks)}", "e.g. looks: [20, 40, 80, 200]")
    if looks[0] < 2 or any(b <= a for a, b in zip(looks, looks[1:])):
        raise ConfigError(f"{key}.looks", f"expected increasing trial counts from 2, got {show(list(looks))}",
                          "list each look once, in increasing order, e.g. [20, 40, 80, 200]")
    if looks[-1] != resamples:
        raise ConfigError(f"{key}.looks", f"the last look is {looks[-1]} but resamples = {resamples}",
                          f"end the looks at {resamples}: the last look spends the whole budget")
    return tuple(int(r) for r in looks)


def parse_block(block: Any, key: str, resamples: int, inherited: Mapping[str, Any] | None = None) -> AdaptiveSpec | None:
    """The rule a block gives (``inherited``: the top level's keys, which the block's own replace)."""
    if block in OFF:
        return None
    if block is True or block == "on":
        block = {}
    if not isinstance(block, Mapping):
        raise ConfigError(key, f"expected a mapping or off, got {show(block)}", "e.g. adaptive: {delta: 0.05, r_min: 20}")
    unknown = sorted(set(map(str, block)) - set(KEYS))
    if unknown:
        raise ConfigError(f"{key}.{unknown[0]}", "unknown key", f"expected one of {list(KEYS)}")
    merged = dict(inherited or {})
    if "looks" in block:
        merged.pop("r_min", None)
    if "r_min" in block:
        merged.pop("looks", None)
    merged.update(block)
    mode = merged.get("mode", "t")
    if mode not in MODES:
        raise ConfigError(f"{key}.mode", f"expected one of {list(MODES)}, got {show(mode)}",
                          "use mode: t (Student-t intervals, asymptotic), guarded (t intervals once Cochran's rule holds: "
                          "for criteria with rare large values) or strict (empirical Bernstein, valid at every number of "
                          "trials, and rarely stopping early at R <= 1000)")
    replicates = merged.get("replicates", REPLICATES)
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 10:
        raise ConfigError(f"{key}.replicates", f"expected an integer >= 10, got {show(replicates)}",
                          f"e.g. replicates: {REPLICATES} (the default: bootstrap replicates over resamples at each "
                          "look, for criteria reduced from stored clusterings)")
    return AdaptiveSpec(
        delta=_number(merged, "delta", key, 0.05, low=0.0, high=1.0, fix="e.g. delta: 0.05 (a 5% error probability)"),
        epsilon=_number(merged, "epsilon", key, 0.0, low=0.0, high=None,
                        fix="e.g. epsilon: 0 (no indifference zone) or 0.005 for instabilities in [0, 1]"),
        looks=_looks(merged, key, resamples), mode=mode, replicates=replicates)


def parse_adaptive(raw: Mapping[str, Any], methods: Sequence[Any], resamples: int,
                   trials_per_chunk: int | None) -> dict[str, AdaptiveSpec]:
    """The rule of every adaptive method, by method name; refuses (ConfigError: exit 2, nothing written) a
    block that is wrong, a method with a criterion that has no sequential rule, and looks that are not
    multiples of ``execution.trials_per_chunk``."""
    top = raw.get("adaptive")
    top_spec = parse_block(top, "adaptive", resamples)
    specs = {}
    for i, (method, entry) in enumerate(zip(methods, raw["methods"])):
        key = f"methods[{i}].adaptive"
        spec = parse_block(entry["adaptive"], key, resamples, top if isinstance(top, Mapping) else None) \
            if "adaptive" in entry else top_spec
        if spec is None:
            continue
        where = key if "adaptive" in entry else "adaptive"
        for j, criterion in enumerate(method.all_criteria):  # in the config's order: j is the entry's index
            if not sequential(criterion):
                rule = get_criterion(criterion).decision
                raise ConfigError(f"methods[{i}].criteria[{j}]", f"{criterion!r} chooses k by its {rule.rule!r} rule "
                                  f"(on the {rule.aggregate}), which has no sequential rule here; {where} needs one",
                                  f"set 'adaptive: off' on methods[{i}] ({method.name}), or give this criterion a method "
                                  "of its own without adaptive")
        if spec.mode == "strict":
            for j, criterion in enumerate(method.all_criteria):
                if is_reduced(criterion):
                    raise ConfigError(f"methods[{i}].criteria[{j}]", f"{where}.mode strict bounds per-trial values "
                                      f"and {criterion!r} is reduced from stored clusterings (no per-trial values; "
                                      "its rule is a bootstrap over resamples)",
                                      f"use mode: t for methods[{i}] ({method.name})")
                if criterion not in UNIT_RANGE:
                    raise ConfigError(f"methods[{i}].criteria[{j}]", f"{where}.mode strict needs values in a known range "
                                      f"and {criterion!r} has none", f"use mode: t, or only the criteria {list(UNIT_RANGE)}")
        if trials_per_chunk is not None and any(r % trials_per_chunk for r in spec.looks):
            raise ConfigError(f"{where}.looks", f"the looks {list(spec.looks)} are not all multiples of "
                              f"execution.trials_per_chunk = {trials_per_chunk}",
                              "use looks (or r_min and resamples) that are multiples of it, or leave trials_per_chunk "
                              "out (it is then the looks' greatest common divisor)")
        specs[method.name] = spec
    return specs


def chunk_trials(specs: Mapping[str, AdaptiveSpec]) -> int | None:
    """The trials per chunk that every look is a multiple of (their greatest common divisor, at most 100)."""
    if not specs:
        return None
    divisor = math.gcd(*(r for spec in specs.values() for r in spec.looks))
    return max(d for d in range(1, min(divisor, 100) + 1) if divisor % d == 0)


def check_looks(config: Any, trials_per_chunk: int) -> None:
    """A cube's trials per chunk (fixed when it was created) must divide every look of the config's rules."""
    for name, spec in config.adaptive.items():
        if any(r % trials_per_chunk for r in spec.looks):
            raise ConfigError("adaptive.looks", f"the looks {list(spec.looks)} of method {name!r} are not all multiples "
                              f"of the cube's {trials_per_chunk} trials per chunk",
                              f"use looks (or r_min and resamples) that are multiples of {trials_per_chunk}")
