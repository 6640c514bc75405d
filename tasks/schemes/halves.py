"""The default scheme: two disjoint halves of a sample, each clustered once per k (Lange, Braun, Roth & Buhmann
2002, Sec. 2; Lange et al. 2004, Sec. 3)."""

from __future__ import annotations

from ordercube.tasks.deferred import Deferred
from ordercube.tasks.schemes.base import Scheme

HALVES = Scheme(
    name="halves",
    description="two disjoint halves of n // 2 items, both clustered per k (stability, transfer)",
    runner=Deferred("ordercube.tasks.clustering:trial_runner"),
    gives=("labels", "assignments"),
    part_roles=lambda params: ("data", "data"),
    fits=lambda params: 1.0,
    citation="Lange, Braun, Roth & Buhmann (2002), Sec. 2",
)
