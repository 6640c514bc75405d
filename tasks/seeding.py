"""Random streams addressed by cell coordinates.

Every stream is ``SeedSequence(root_seed, spawn_key=(purpose, *ids))``: the key is a fixed-length
tuple per purpose (an entropy list ignores trailing zeros, a fixed length keeps keys distinct), and
labels are turned into integers with a stable hash, never Python's salted ``hash()``.  Because keys
are built from coordinate *values*, adding cells to a grid never changes the stream of an old cell.
"""

from __future__ import annotations

import hashlib
from enum import IntEnum

import numpy as np


class Purpose(IntEnum):
    """What a stream is used for; part of every key so that streams never collide."""

    DRAW = 1  # the trial's sample and its split into halves: shared by every method and k
    EVAL = 2  # the independent evaluation sample of the pairwise criterion
    PAIRING = 3  # the random pairing of the evaluation sample
    FIT = 4  # the clustering algorithm's own randomness (initialisation)
    BASELINE = 5  # random labelings for the normalisation of the Lange stability
    REFERENCE = 6  # reference data of the Gap statistic and Clest, and their splits: shared by every method
    SAMPLE_FIT = 7  # a method's fits on a trial's whole sample and on reference data
    PARTITION = 8  # the partition at k̂ of a whole dataset (and a synthetic dataset's sample for it)
    REPLAY = 9  # the trial orders of an adaptive rule's replay on a stored cube
    SUBSAMPLE = 10  # a consensus resample's items and features (Monti et al. 2003): shared by every method and k
    NULL_DATA = 11  # reference data sets that keep the data's feature correlation (John et al. 2020, M3C)
    BOOTSTRAP = 12  # resampling the stored resamples to state a reduction's Monte Carlo error
    SHARED_REFERENCE = 13  # reference data addressed without the trial: the same for every trial of a (dataset, n)
    SHARED_FIT = 14  # a method's fits on such reference data: the same for every trial of a (dataset, n)


def label_id(label: str) -> int:
    """A stable 64-bit integer for a string label (blake2b, identical in every process)."""
    digest = hashlib.blake2b(label.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def stream(root_seed: int, purpose: Purpose, *ids: int) -> np.random.Generator:
    """The generator of one purpose at one coordinate tuple.

    Parameters
    ----------
    root_seed : int
        The config's seed.
    purpose : Purpose
        Which kind of randomness is drawn.
    *ids : int
        Non-negative integers naming the coordinates (dataset id, n, trial, ...). Callers use a
        fixed number of ids for each purpose.
    """
    return np.random.default_rng(np.random.SeedSequence(root_seed, spawn_key=(int(purpose), *ids)))
