"""Matrix data for matrix models (Frank et al. 2011, Secs. 4-5): a grey image cut into patches, or a Boolean matrix.

A trial draws its noise from the trial's stream (Gaussian noise of sd ``noise`` on the image's pixels, or
flip noise of rate ``noise`` on the Boolean matrix: m = round(ν‖X*‖₁) ones to 0 and as many zeros to 1)
and keeps the clean matrix beside it for the oracle. Its rows (patches, users) are split at random into a
training part and a test part (``train_fraction``: the halves at 1/2, the paper's 80/20 folds at 0.8).

Image rows: ``placement: tiling`` takes n of the image's non-overlapping ``patch x patch`` tiles (all of them
for n = the number of tiles, the paper's 4096 of a 512 x 512 image); ``placement: random`` takes n patches
at random top-left corners (a sensitivity check of ours; the paper uses the tiling). The oracle always reads the whole noisy image
through its tiling, whatever the placement.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.datasets.patches import flip_noise, random_patches, tile_patches

MATRIX_KINDS = ("image", "boolean_matrix")
# What each kind offers besides its rows (ordercube.tasks.capabilities): a clean image to compare with, 0/1 entries.
MATRIX_PROVIDES = {"image": ("image",), "boolean_matrix": ("boolean",)}
PLACEMENTS = ("tiling", "random")


@dataclass(frozen=True)
class MatrixTrial:
    """One trial's matrix.

    Attributes
    ----------
    first, second : ndarray of shape (rows, features)
        The training rows and the test rows (disjoint).
    whole : ndarray of shape (rows, features)
        The whole noisy matrix the oracle and Owen-Perry's bi-cross-validation read: the image's tiling, or
        the trial's n rows of the Boolean matrix.
    clean : ndarray of shape whole.shape
        The same without noise (the clean tiles, X*).
    peak : float
        The largest grey level of an image's format (255 for 8 bits), for the PSNR.
    """

    first: NDArray[np.float64]
    second: NDArray[np.float64]
    whole: NDArray[np.float64]
    clean: NDArray[np.float64]
    peak: float = 255.0


@dataclass(frozen=True)
class MatrixSource:
    """A clean matrix (a grey image, or a Boolean matrix) and how a trial adds noise and splits its rows."""

    clean: NDArray[np.float64]  # None in the recipe a driver sends with the matrix scattered beside it
    kind: str  # "image" or "boolean_matrix"
    noise: float = 0.0
    patch: int = 8
    placement: str = "tiling"
    train_fraction: float = 0.5
    peak: float = 255.0  # an image's largest grey level (its format's), for the PSNR

    @property
    def rows(self) -> int:
        """How many rows a trial can draw (tiles, or the matrix's rows); random patches have no bound."""
        if self.kind == "boolean_matrix":
            return self.clean.shape[0]
        return (self.clean.shape[0] // self.patch) * (self.clean.shape[1] // self.patch)

    @property
    def features(self) -> int:
        return self.patch * self.patch if self.kind == "image" else self.clean.shape[1]

    def draw_matrix(self, n: int, rng: np.random.Generator) -> MatrixTrial:
        """The trial's noise, then its n rows in random order, the first ``round(n * train_fraction)`` for training."""
        if self.kind == "image":
            noisy = self.clean + self.noise * rng.standard_normal(self.clean.shape)
            whole, clean = tile_patches(noisy, self.patch), tile_patches(self.clean, self.patch)
            if self.placement == "tiling":
                rows = whole[rng.permutation(whole.shape[0])[:n]]
            else:
                rows = random_patches(noisy, self.patch, n, rng)[0]
        else:
            order = rng.permutation(self.clean.shape[0])[:n]
            noisy = flip_noise(self.clean, self.noise, rng).astype(np.float64)
            whole, clean = noisy[order], self.clean[order]
            rows = whole
        training = training_rows(n, self.train_fraction)
        return MatrixTrial(first=rows[:training], second=rows[training:n], whole=whole, clean=clean, peak=self.peak)


def training_rows(n: int, train_fraction: float) -> int:
    """How many of a trial's n rows train: ``round(n * train_fraction)``, at least 1 and at most n - 1."""
    return min(max(int(round(n * train_fraction)), 1), n - 1)
