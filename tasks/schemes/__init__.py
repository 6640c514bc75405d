"""Resampling schemes of clusterers, registered by name (a config's ``methods[i].scheme``).

``halves`` (the default; Lange, Braun, Roth & Buhmann 2002, 2004) draws a sample, splits it into two disjoint
halves and clusters both once per k; ``consensus`` (Monti, Tamayo, Mesirov & Golub 2003) clusters a share of the
items (and of the features) once per k per resample. The clustering family asks the block's scheme for its trial
runner (:meth:`ordercube.tasks.algorithms.kinds.Clusterer.trial_runner`); the engine never names a scheme.
"""

from __future__ import annotations

from ordercube.tasks.schemes.base import Scheme
from ordercube.tasks.schemes.consensus import CONSENSUS
from ordercube.tasks.schemes.halves import HALVES
from ordercube.tasks.trial import BlockSpec

DEFAULT = HALVES.name
SCHEMES: dict[str, Scheme] = {scheme.name: scheme for scheme in [HALVES, CONSENSUS]}


def get_scheme(name: str) -> Scheme:
    """The registered scheme ``name`` ("" is the default, ``halves``); an unknown name lists the valid ones."""
    try:
        return SCHEMES[name or DEFAULT]
    except KeyError:
        from ordercube.tasks.misses import load_on_miss, unknown_note  # a plug-in's scheme where none is loaded yet (a worker)

        if load_on_miss(f"scheme {name}"):
            return get_scheme(name)
        raise KeyError(f"unknown scheme {name!r}; valid: {sorted(SCHEMES)}{unknown_note()}") from None


def scheme_of(spec: BlockSpec) -> tuple[Scheme, dict[str, object]]:
    """The scheme of a block and its parameters over the scheme's defaults."""
    scheme = get_scheme(spec.scheme)
    return scheme, {**scheme.defaults, **dict(spec.scheme_params)}


__all__ = ["DEFAULT", "SCHEMES", "Scheme", "get_scheme", "scheme_of"]
