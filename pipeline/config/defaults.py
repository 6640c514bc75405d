"""What a config that omits a key gets: the defaults a user of model-order selection expects.

The same for a YAML file, a dict given to :func:`ordercube.sweep` and :func:`ordercube.choose_k`:

- ``name``: the YAML file's stem (characters a name may not hold replaced by ``_``), else ``"study"``;
- ``seed``: drawn from the operating system's entropy, recorded in the config (and so in the cube) and
  printed, so that the run can be repeated by passing it;
- ``resamples``: :data:`RESAMPLES`, 20, as Lange et al. (2002, Sec. 4: "we average over 20 resamples for
  k = 2, ..., 10", the k's :func:`ordercube.choose_k` takes by default) and Roth et al. (2002, Sec. 3: "we
  average over 20 random splits of the data") did;
- ``n``: every row (``"all"``) for a file or an array; a generated dataset has no size and keeps requiring it;
- per method ``name``: its algorithm's name; ``predictor``: the predictor matched to the algorithm's principle,
  from its record (``BaseAlgorithm.predictor``: nearest centroid for k-means, Lange et al. 2002, Sec. 3);
  ``criteria``: :data:`CLUSTERING_CRITERIA` for a clustering algorithm (those of them defined for it).

Why this set of criteria: one of each family NbClust and the papers compare, each cheap beside the fits or
worth its price. The stability of Lange et al. (2004, eq. 5) and Prediction Strength (Tibshirani & Walther 2005)
read the halves' fits every criterion of the trial shares (a predictor and a matching: small beside the fits);
the silhouette (Rousseeuw 1987) reads the halves' own solutions (O(m^2) distances on at most 2,000 points
per half); the Gap statistic (Tibshirani, Walther & Hastie 2001) is clusGap's answer, the one a user of R
compares with, and the costly one: one fit of the whole sample per trial, and its 20 reference sets 20 fits
of the whole sample made once per worker process for every trial whose sample has the same box (every trial
when n is every row: Tibshirani et al.'s E* is then one estimate for the data, as clusGap makes it). Clest refits splits of splits
(Dudoit & Fridlyand 2002: 20 splits by default, tens of times the Gap's cost); BIC and AIC need a mixture;
Shamir & Tishby's pairwise criterion needs an independent evaluation sample of n points, which data of n rows
lack: none is in the default set, each is one name away (``criteria=[...]``).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ordercube.tasks.algorithms.kinds import BaseAlgorithm
from ordercube.tasks.capabilities import why_not
from ordercube.tasks.criteria import CRITERIA

RESAMPLES = 20
CLUSTERING_CRITERIA = ("lange", "prediction_strength", "gap", "silhouette")
STUDY_NAME = "study"
SEED_BITS = 31  # a seed a reader copies: up to ten digits, and an integer every YAML reader keeps exactly


def default_name(path: Path | None) -> str:
    """A study's name when its config gives none: the YAML file's stem, made a valid name, else ``study``."""
    if path is None:
        return STUDY_NAME
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem)[:100]
    return name if name.strip("_.-") else STUDY_NAME


def draw_seed() -> int:
    """A root seed from the operating system's entropy (printed and stored, so the run can be repeated)."""
    return secrets.randbits(SEED_BITS)


def default_criteria(algorithm: BaseAlgorithm) -> tuple[str, ...]:
    """The default criteria of a method of ``algorithm``: those of :data:`CLUSTERING_CRITERIA` defined for it, for a
    clustering algorithm; none (the config must name them) for another kind."""
    if not algorithm.needs_predictor:
        return ()
    return tuple(name for name in CLUSTERING_CRITERIA if why_not(None, algorithm, CRITERIA[name]) is None)


def fitting_criteria(algorithm: BaseAlgorithm) -> list[str]:
    """Every registered criterion defined for a method of ``algorithm`` (for the message of a missing list)."""
    return sorted(name for name, criterion in CRITERIA.items() if why_not(None, algorithm, criterion) is None)


def describe_defaults(defaults: Mapping[str, Any]) -> str:
    """The line that says which keys were filled by default, with the seed to give to repeat the run (empty when
    none was): ``defaults: seed=1234, resamples=20; write seed: 1234 in the config to repeat the run``."""
    if not defaults:
        return ""
    shown = ", ".join(f"{key}={value!r}" for key, value in defaults.items())
    repeat = f"; write seed: {defaults['seed']} in the config to repeat the run" if "seed" in defaults else ""
    return f"defaults: {shown}{repeat}"
