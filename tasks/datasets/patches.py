"""Matrix data made from images and 0/1 matrices (Frank, Chehreghani & Buhmann 2011, Sec. 4): image patches and
flip noise, with the checks of the matrices they take.

- Image patches (Sec. 4.1): ``tile_patches`` cuts the non-overlapping ``size x size`` tiling (512 x 512 into 8 x 8
  gives the paper's N = 4096 rows of D = 64), ``random_patches`` the overlapping variant (ours, a sensitivity
  check), ``untile`` puts a tiling back.
- ``flip_noise``: a symmetric flip noise of ours on a 0/1 matrix (Sec. 4.2 leaves the noise open).
- ``as_matrix`` and ``as_boolean``: a finite non-empty 2-D array, a 0/1 one, or a ValueError naming the argument.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def tile_patches(image: ArrayLike, size: int) -> NDArray[np.float64]:
    """The non-overlapping ``size x size`` tiling of a 2-D image, row-major over tiles and within a tile.

    Parameters
    ----------
    image : array_like of shape (height, width)
    size : int
        The patch side; it must divide both sides.

    Returns
    -------
    patches : ndarray of shape (height * width / size², size²)
    """
    image = _image(image, size)
    height, width = image.shape
    if height % size or width % size:
        raise ValueError(f"tile_patches: size {size} must divide the image's sides, got {height} x {width}; "
                         "crop the image or use random_patches")
    tiles = image.reshape(height // size, size, width // size, size).swapaxes(1, 2)
    return tiles.reshape(-1, size * size).copy()


def untile(patches: ArrayLike, shape: tuple[int, int], size: int) -> NDArray[np.float64]:
    """The inverse of :func:`tile_patches`: patches of shape (height * width / size², size²) → image ``shape``."""
    patches = np.asarray(patches, dtype=np.float64)
    height, width = (int(side) for side in shape)
    if size < 1 or height % size or width % size:
        raise ValueError(f"untile: size {size} must be >= 1 and divide the sides of shape {tuple(shape)}")
    expected = (height // size * (width // size), size * size)
    if patches.shape != expected:
        raise ValueError(f"untile: expected patches of shape {expected} for an image {height} x {width}, "
                         f"got {patches.shape}")
    tiles = patches.reshape(height // size, width // size, size, size).swapaxes(1, 2)
    return tiles.reshape(height, width).copy()


def random_patches(image: ArrayLike, size: int, count: int,
                   rng: np.random.Generator) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """``count`` overlapping patches at uniformly random top-left corners (a sensitivity check; the paper tiles).

    Returns
    -------
    patches : ndarray of shape (count, size²)
        Each patch flattened row-major.
    corners : ndarray of shape (count, 2)
        (row, column) of each patch's top-left pixel.
    """
    image = _image(image, size)
    if int(count) < 1:
        raise ValueError(f"random_patches: count must be >= 1, got {count}")
    height, width = image.shape
    corners = rng.integers(0, [height - size + 1, width - size + 1], size=(int(count), 2))
    offsets = np.arange(size)
    rows = corners[:, 0, None, None] + offsets[None, :, None]
    columns = corners[:, 1, None, None] + offsets[None, None, :]
    return image[rows, columns].reshape(int(count), size * size), corners.astype(np.int64)


def flip_noise(X_star: ArrayLike, nu: float, rng: np.random.Generator) -> NDArray[np.uint8]:
    """A flip noise of ours: m = round(ν ‖X*‖₁) random 1s set to 0 and m random 0s set to 1 (without replacement).

    Returns
    -------
    ndarray of shape X_star.shape, 0/1 ``uint8``
    """
    X_star = as_boolean(X_star, "X_star")
    flat = (X_star > 0.5).ravel()
    ones, zeros = np.flatnonzero(flat), np.flatnonzero(~flat)
    m = round(float(nu) * ones.size)
    if not nu >= 0 or m > ones.size or m > zeros.size:
        raise ValueError(f"flip_noise: nu = {nu} flips m = {m} ones and m zeros, but X_star has {ones.size} ones "
                         f"and {zeros.size} zeros; choose 0 <= nu with m <= both")
    noisy = flat.astype(np.uint8)
    noisy[rng.choice(ones, size=m, replace=False)] = 0
    noisy[rng.choice(zeros, size=m, replace=False)] = 1
    return noisy.reshape(X_star.shape)


def as_matrix(X: ArrayLike, name: str) -> NDArray[np.float64]:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{name}: expected a non-empty 2-D array (n_samples, n_features), got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return X


def as_boolean(X: ArrayLike, name: str, *, ones: bool = False) -> NDArray[np.float64]:
    X = as_matrix(X, name)
    if not np.isin(X, (0.0, 1.0)).all():
        raise ValueError(f"{name}: expected a 0/1 matrix, got values {np.unique(X)[:5]}...; binarise it first")
    if ones and not X.any():
        raise ValueError(f"{name}: has no 1-entries, so shares of ‖X‖₁ are undefined")
    return X


def _image(image: ArrayLike, size: int) -> NDArray[np.float64]:
    if not isinstance(size, int | np.integer):
        raise TypeError(f"size: expected an integer patch side, got {size!r}")
    image = np.asarray(image, dtype=np.float64)
    if image.ndim != 2:
        raise ValueError(f"image: expected a 2-D grey-level array (height, width), got shape {image.shape}")
    if size < 1 or size > image.shape[0] or size > image.shape[1]:
        raise ValueError(f"size: expected 1 <= size <= the image's sides {image.shape}, got {size}")
    return image
