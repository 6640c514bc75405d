"""Truncated SVD without centring, its rank chosen by transfer cost (Frank, Chehreghani & Buhmann 2011, Sec. 4).

Everything here is read off one SVD per matrix: every rank k of a sweep comes from the same factors.

- Image patches (Sec. 4.1; cut by :mod:`ordercube.tasks.datasets.patches`): ``psnr`` is 10 log10(peak² / MSE),
  and ``denoise_psnrs`` is the oracle curve: the PSNR of every rank-k reconstruction of the full noisy patch matrix against the clean
  patches (for a tiling, the image's MSE is the patches' MSE).
- Eq. (7): ``Rᵀ(k) = (1/N₂) ‖ψ_NN(X⁽¹⁾, X⁽²⁾) ∘ X⁽²⁾ − U⁽¹⁾ₖS⁽¹⁾ₖV⁽¹⁾ₖᵀ‖²``: each row x′ of X⁽²⁾ is
  mapped to its nearest row i of X⁽¹⁾ (Euclidean, Sec. 4.1) and pays ‖x′ − x⁽¹⁾ᵢ VₖVₖᵀ‖² (``svd_transfer_costs``).
  Exact ties go to the lowest index (Sec. 2.2 breaks them at random; for randomly ordered halves that is the same
  in distribution). With q = Vᵀx′, c = Vᵀx⁽¹⁾ᵢ and e = q − c, the cost ‖x′‖² − 2Σ_{j≤k} q_j c_j + Σ_{j≤k} c_j²
  is Σ_{j≤k} e_j² + Σ_{j>k} q_j² + ‖x′ − VVᵀx′‖²: prefix sums of non-negative terms, no cancellation, and
  exactly 0 when x′ = x⁽¹⁾ᵢ and k = d.
- Boolean matrices (Sec. 4.2): Molloy's denoiser g(UₖSₖVₖᵀ), g = 1{· > 0.5}
  (``boolean_denoise``), its error against the clean matrix (``denoise_errors``, the oracle k*), the curves of
  Molloy's 80 % coverage and 0.001 increment rules (``coverage_shares``, ``increments``), and MTC "with nearest-neighbor mapping
  and Hamming distance" (Sec. 4.2): each x′ pays the Hamming distance to g(rank-k reconstruction of its
  Hamming-nearest row of X⁽¹⁾), a choice the paper leaves open (``boolean_svd_transfer_costs``).
- OP-CV, Owen & Perry's bi-cross-validation as the paper runs it (Sec. 4.2): per random row and
  column permutation, ‖A − B Dₖ⁺ C‖²_F with A the held-out top-left p x q block; every k from one SVD of D
  (``opcv_errors``). The rules that read a rank off these curves are criteria's
  (:mod:`ordercube.tasks.criteria.rank_rules`).

A rank k larger than the r = min(n, d) components of a fit means the fit itself (the rank-k truncation of a
matrix of rank <= r is the matrix); in OP-CV, a k above the numerical rank of D is NaN, since Dₖ⁺ is undefined
there. The g(rank-k) matrices are built by adding one rank-one term per component, in order, in every function,
so that entries near 0.5 fall the same side everywhere.

Benchmarks (``benchmarks/bench_lowrank.py``, this project's 2-core machine while other jobs ran, BLAS on one
thread): eq. (7) on halves of 2048 x 64 patches of a smooth 512 x 512 image, k = 1..64: 0.03-0.05 s against
0.09-0.11 s for brute-force nearest neighbours plus one reconstruction per k (2-3x) and 0.14-0.16 s with scipy's
cKDTree (3x); relative difference 4e-16. OP-CV, 20 permutations of a 500 x 347 Boolean matrix, k = 0..100:
0.13-0.16 s against 12.7-13.2 s for ``numpy.linalg.pinv`` of the explicitly truncated D per k (80-95x; 133 s
with BLAS's default threads on the loaded machine); relative difference 4e-15. No kernel needs numba.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ordercube.tasks.datasets.patches import as_boolean, as_matrix

ROWS_PER_BLOCK = 2048  # nearest neighbours in blocks of rows of X2: memory stays O(block x N1)
THRESHOLD = 0.5  # Molloy's g(x) = 1{x > 0.5}


@dataclass(frozen=True)
class LowRank:
    """A thin SVD ``X = U diag(singular) Vt``, no centring; every truncation is read from it.

    Attributes
    ----------
    U : ndarray of shape (n_samples, r)
    singular : ndarray of shape (r,)
        Non-increasing; r = min(n_samples, n_features).
    Vt : ndarray of shape (r, n_features)
    """

    U: NDArray[np.float64]
    singular: NDArray[np.float64]
    Vt: NDArray[np.float64]

    @property
    def rank(self) -> int:
        """The number of components r (numerically zero singular values included)."""
        return int(self.singular.size)

    @property
    def coefficients(self) -> NDArray[np.float64]:
        """``U diag(singular)`` = X V, shape (n_samples, r): the rows' coordinates in the basis ``Vt``."""
        return self.U * self.singular


def fit_low_rank(X: ArrayLike) -> LowRank:
    """One thin SVD of ``X`` (n_samples, n_features), uncentred (a choice the paper leaves open)."""
    X = as_matrix(X, "X")
    U, singular, Vt = np.linalg.svd(X, full_matrices=False)
    return LowRank(U=U, singular=singular, Vt=Vt)


def reconstruct(lowrank: LowRank, k: int) -> NDArray[np.float64]:
    """``U_k S_k V_kᵀ``, shape (n_samples, n_features); k >= r gives the fitted matrix."""
    k = min(int(as_ranks([k])[0]), lowrank.rank)
    return lowrank.coefficients[:, :k] @ lowrank.Vt[:k]


def project(X: ArrayLike, lowrank: LowRank, k: int) -> NDArray[np.float64]:
    """Rank-k reconstruction of new rows through a fitted basis, ``X V_k V_kᵀ``, shape (n_samples, n_features)."""
    X = as_matrix(X, "X")
    k = min(int(as_ranks([k])[0]), lowrank.rank)
    return (X @ lowrank.Vt[:k].T) @ lowrank.Vt[:k]


# -------------------------------------------------------------------------------------------- image patches

def psnr(image: ArrayLike, clean: ArrayLike, peak: float = 255.0) -> float:
    """Peak signal-to-noise ratio ``10 log10(peak² / MSE)`` in dB; ``inf`` for identical images."""
    image, clean = np.asarray(image, dtype=np.float64), np.asarray(clean, dtype=np.float64)
    if image.shape != clean.shape:
        raise ValueError(f"psnr: the images' shapes differ: {image.shape} and {clean.shape}")
    return float(_psnr_from_mse(np.array([np.mean((image - clean) ** 2)]), peak)[0])


def denoise_psnrs(noisy_patches: ArrayLike, clean_patches: ArrayLike, ks: Sequence[int] | ArrayLike,
                  peak: float = 255.0) -> NDArray[np.float64]:
    """The oracle (Frank et al. 2011, Fig. 2): PSNR of the rank-k SVD reconstruction of the whole noisy patch matrix, per k.

    Parameters
    ----------
    noisy_patches, clean_patches : array_like of shape (n_patches, size²)
        A non-overlapping tiling (then the patches' MSE is the image's) of the noisy and the clean image.
    ks : sequence of int
        Ranks >= 0.

    Returns
    -------
    ndarray of shape (len(ks),)
        ``10 log10(peak² / MSE_k)``, MSE_k the mean squared difference of the clean patches and
        ``U_k S_k V_kᵀ`` of the noisy ones.
    """
    noisy, clean = as_matrix(noisy_patches, "noisy_patches"), as_matrix(clean_patches, "clean_patches")
    if noisy.shape != clean.shape:
        raise ValueError(f"denoise_psnrs: the patch matrices' shapes differ: {noisy.shape} and {clean.shape}")
    Vt = fit_low_rank(noisy).Vt
    return _psnr_from_mse(_squared_errors_by_rank(clean, noisy, Vt, as_ranks(ks)) / clean.size, peak)


def _psnr_from_mse(mse: NDArray[np.float64], peak: float) -> NDArray[np.float64]:
    with np.errstate(divide="ignore"):
        return 10.0 * np.log10(float(peak) ** 2 / mse)


# ------------------------------------------------------------------------------------ transfer cost, eq. (7)

def nearest_rows(X1: ArrayLike, X2: ArrayLike) -> NDArray[np.int64]:
    """The index of the nearest row of ``X1`` (Euclidean) for every row of ``X2``; exact ties to the lowest index.

    Distances come from ‖a‖² − 2a·b + ‖b‖² in blocks of ``ROWS_PER_BLOCK`` rows; every candidate within the
    rounding error of that expansion of the block minimum is measured again by differences, so that ties (equal
    rows, or 0/1 rows, where the squared distance is the Hamming distance) go to the lowest index.

    Parameters
    ----------
    X1 : array_like of shape (n1, n_features)
    X2 : array_like of shape (n2, n_features)

    Returns
    -------
    ndarray of shape (n2,)
    """
    X1, X2 = _pair(X1, X2)
    norms1 = (X1 * X1).sum(axis=1)
    slack = 4.0 * (X1.shape[1] + 4) * np.finfo(np.float64).eps
    nearest = np.empty(X2.shape[0], dtype=np.int64)
    for start in range(0, X2.shape[0], ROWS_PER_BLOCK):
        block = X2[start:start + ROWS_PER_BLOCK]
        norms2 = (block * block).sum(axis=1)
        d2 = block @ X1.T
        d2 *= -2.0
        d2 += norms1[None, :]
        d2 += norms2[:, None]
        nearest[start:start + block.shape[0]] = _refine_ties(block, X1, d2, slack * (norms2 + norms1.max()))
    return nearest


def _refine_ties(block: NDArray[np.float64], X1: NDArray[np.float64], d2: NDArray[np.float64],
                 slack: NDArray[np.float64]) -> NDArray[np.int64]:
    """The argmin of every row of ``d2`` (expanded squared distances, overwritten), rows whose runner-up is within
    ``slack`` of it re-measured by differences: the lowest index among the exact minima."""
    index = np.arange(d2.shape[0])
    nearest = d2.argmin(axis=1)
    bound = d2[index, nearest] + slack
    d2[index, nearest] = np.inf
    ambiguous = np.flatnonzero(d2.min(axis=1) <= bound)  # a runner-up within the slack: look again
    if ambiguous.size:
        d2[index, nearest] = -np.inf  # the argmin stays a candidate
        rows, columns = np.nonzero(d2[ambiguous] <= bound[ambiguous, None])
        rows = ambiguous[rows]
        exact = ((block[rows] - X1[columns]) ** 2).sum(axis=1)
        order = np.lexsort((columns, exact, rows))  # by row, then exact distance, then index
        first = order[np.r_[True, rows[order][1:] != rows[order][:-1]]]
        nearest[rows[first]] = columns[first]
    return nearest


def svd_transfer_costs(X1: ArrayLike, X2: ArrayLike, ks: Sequence[int] | ArrayLike) -> NDArray[np.float64]:
    """Eq. (7) for every rank at once: ``(1/N₂) Σ_{x′ ∈ X2} ‖x′ − X1[ψ(x′)] V_k V_kᵀ‖²``, V from X1's SVD.

    Parameters
    ----------
    X1 : array_like of shape (n1, n_features)
        The fitting half; its SVD is taken uncentred.
    X2 : array_like of shape (n2, n_features)
        The transfer half; ψ(x′) is the Euclidean-nearest row of X1 (ties to the lowest index).
    ks : sequence of int
        Ranks >= 0; a rank above min(n1, n_features) is the full fit.

    Returns
    -------
    ndarray of shape (len(ks),)
    """
    X1, X2 = _pair(X1, X2)
    ks = as_ranks(ks)
    Vt = fit_low_rank(X1).Vt
    return _squared_errors_by_rank(X2, X1[nearest_rows(X1, X2)], Vt, ks) / X2.shape[0]


def _squared_errors_by_rank(targets: NDArray[np.float64], sources: NDArray[np.float64], Vt: NDArray[np.float64],
                            ks: NDArray[np.int64]) -> NDArray[np.float64]:
    """``Σ_rows ‖target − source V_k V_kᵀ‖²`` for every k (module docstring: non-negative terms only)."""
    coordinates = targets @ Vt.T
    differences = (targets - sources) @ Vt.T
    rank = Vt.shape[0]
    head = np.concatenate([[0.0], np.cumsum((differences ** 2).sum(axis=0))])
    tail = np.concatenate([np.cumsum((coordinates ** 2).sum(axis=0)[::-1])[::-1], [0.0]])
    outside = float(((targets - coordinates @ Vt) ** 2).sum()) if rank < Vt.shape[1] else 0.0
    clipped = np.minimum(ks, rank)
    return head[clipped] + tail[clipped] + outside


# ---------------------------------------------------------------------------------------- Boolean matrices

def boolean_denoise(X: ArrayLike, lowrank: LowRank | None, k: int) -> NDArray[np.uint8]:
    """Molloy's denoiser ``g(U_k S_k V_kᵀ)``, g = 1{· > 0.5}, shape (n_samples, n_features), 0/1 ``uint8``.

    ``lowrank`` is the SVD of ``X`` (fitted here when None).
    """
    X = as_boolean(X, "X")
    if lowrank is None:
        lowrank = fit_low_rank(X)
    elif lowrank.U.shape[0] != X.shape[0] or lowrank.Vt.shape[1] != X.shape[1]:
        raise ValueError(f"boolean_denoise: lowrank is the SVD of a {lowrank.U.shape[0]} x {lowrank.Vt.shape[1]} "
                         f"matrix, X is {X.shape[0]} x {X.shape[1]}; pass fit_low_rank(X)")
    ((_, denoised),) = _thresholded(lowrank.coefficients, lowrank.Vt, as_ranks([k]))
    return denoised.astype(np.uint8)


def boolean_svd_transfer_costs(X1: ArrayLike, X2: ArrayLike, ks: Sequence[int] | ArrayLike) -> NDArray[np.float64]:
    """MTC for Boolean SVD (Sec. 4.2; our reading of the cost): the mean Hamming distance of x′ to g(rank-k of ψ(x′)).

    Parameters
    ----------
    X1 : array_like of shape (n1, n_features)
        0/1 entries; its SVD is taken uncentred.
    X2 : array_like of shape (n2, n_features)
        0/1 entries; ψ(x′) is the Hamming-nearest row of X1 (ties to the lowest index).
    ks : sequence of int
        Ranks >= 0; a rank above min(n1, n_features) is the full fit.

    Returns
    -------
    ndarray of shape (len(ks),)
        Mismatching bits per row of X2.
    """
    X1, X2 = as_boolean(X1, "X1"), as_boolean(X2, "X2")
    _pair(X1, X2)
    ks = as_ranks(ks)
    lowrank = fit_low_rank(X1)
    used, inverse = np.unique(nearest_rows(X1, X2), return_inverse=True)
    targets = X2 > THRESHOLD
    cost = {k: float(np.count_nonzero(denoised[inverse] != targets)) / X2.shape[0]
            for k, denoised in _thresholded(lowrank.coefficients[used], lowrank.Vt, ks)}
    return np.array([cost[min(int(k), lowrank.rank)] for k in ks])


def denoise_errors(X_noisy: ArrayLike, X_star: ArrayLike, ks: Sequence[int] | ArrayLike) -> NDArray[np.int64]:
    """``‖g(rank-k SVD of X_noisy) − X*‖₁`` per k (Sec. 4.2; the oracle is k* = argmin), shape (len(ks),)."""
    X_noisy, X_star = as_boolean(X_noisy, "X_noisy"), as_boolean(X_star, "X_star")
    if X_noisy.shape != X_star.shape:
        raise ValueError(f"denoise_errors: X_noisy is {X_noisy.shape}, X_star is {X_star.shape}; they must match")
    ks = as_ranks(ks)
    lowrank = fit_low_rank(X_noisy)
    clean = X_star > THRESHOLD
    errors = {k: np.count_nonzero(denoised != clean) for k, denoised in _thresholded(lowrank.coefficients, lowrank.Vt, ks)}
    return np.array([errors[min(int(k), lowrank.rank)] for k in ks], dtype=np.int64)


def coverage_shares(X: ArrayLike, ks: Sequence[int] | ArrayLike) -> NDArray[np.float64]:
    """The share of the 1-entries of X that g(rank-k of X) keeps at 1 (Molloy's rule (i), Frank et al. 2011, Sec. 4.2)."""
    X = as_boolean(X, "X", ones=True)
    ks = as_ranks(ks)
    lowrank = fit_low_rank(X)
    ones = X > THRESHOLD
    share = {k: np.count_nonzero(denoised & ones) / np.count_nonzero(ones)
             for k, denoised in _thresholded(lowrank.coefficients, lowrank.Vt, ks)}
    return np.array([share[min(int(k), lowrank.rank)] for k in ks])


def increments(X: ArrayLike, ks: Sequence[int] | ArrayLike) -> NDArray[np.float64]:
    """Molloy's approximation increment ``‖g_k − g_{k+1}‖₁ / ‖X‖₁`` per k (0 from k = r = min(n, d) on)."""
    X = as_boolean(X, "X", ones=True)
    ks = as_ranks(ks)
    lowrank = fit_low_rank(X)
    denoised = dict(_thresholded(lowrank.coefficients, lowrank.Vt, np.concatenate([ks, ks + 1])))
    r, total = lowrank.rank, np.count_nonzero(X > THRESHOLD)
    return np.array([np.count_nonzero(denoised[min(int(k), r)] != denoised[min(int(k) + 1, r)]) / total for k in ks])


def _thresholded(coefficients: NDArray[np.float64], Vt: NDArray[np.float64],
                 ks: NDArray[np.int64]) -> Iterator[tuple[int, NDArray[np.bool_]]]:
    """``(k, g(coefficients[:, :k] Vt[:k]))`` for every distinct min(k, r), ascending, one rank-one term at a time."""
    rank = Vt.shape[0]
    reconstruction = np.zeros((coefficients.shape[0], Vt.shape[1]))
    done = 0
    for k in np.unique(np.minimum(ks, rank)):
        for j in range(done, int(k)):
            reconstruction += np.outer(coefficients[:, j], Vt[j])
        done = int(k)
        yield done, reconstruction > THRESHOLD


# ---------------------------------------------------------------------------------------------------- OP-CV

def opcv_errors(X: ArrayLike, ks: Sequence[int] | ArrayLike, rng: np.random.Generator, *,
                permutations: int = 20, fraction: float = 0.5) -> NDArray[np.float64]:
    """Owen-Perry bi-cross-validation as Frank et al. (2011, Sec. 4.2) run it: one held-out block per random permutation.

    Per permutation (rows ``rng.permutation(n)``, then columns ``rng.permutation(d)``), with p = ⌊n·fraction⌋ and
    q = ⌊d·fraction⌋, A = the top-left p x q block, B = top-right, C = bottom-left, D = bottom-right:
    ``error_k = ‖A − B D_k⁺ C‖²_F``, D_k⁺ = V_k S_k⁻¹ U_kᵀ from one SVD of D. With b_j = B v_j / s_j and
    c_j = u_jᵀ C, B D_k⁺ C = Σ_{j≤k} b_j c_jᵀ, so every k comes from prefix sums of ⟨A, b_j c_jᵀ⟩ and of the
    Gram products (b_j·b_l)(c_j·c_l).

    Parameters
    ----------
    X : array_like of shape (n_samples, n_features)
    ks : sequence of int
        Ranks >= 0 (k = 0 predicts A by 0). A k above the numerical rank of D (``numpy.linalg.matrix_rank``'s
        tolerance; at most min(n − p, d − q)) gives NaN in that permutation.
    rng : numpy.random.Generator
    permutations : int
        The paper's 20.
    fraction : float
        Share of the rows and of the columns held out: 1/2 (Owen-Perry's 2 x 2, "large") or 1/5 ("small").

    Returns
    -------
    ndarray of shape (permutations, len(ks))
    """
    X = as_matrix(X, "X")
    ks = as_ranks(ks)
    n, d = X.shape
    p, q = int(np.floor(n * fraction)), int(np.floor(d * fraction))
    if not (1 <= p < n and 1 <= q < d):
        raise ValueError(f"opcv_errors: fraction {fraction} holds out p = {p} of n = {n} rows and q = {q} of d = {d} "
                         "columns; expected 1 <= p < n and 1 <= q < d")
    if int(permutations) < 1:
        raise ValueError(f"opcv_errors: permutations must be >= 1, got {permutations}")
    errors = np.empty((int(permutations), ks.size))
    for t in range(int(permutations)):
        shuffled = X[rng.permutation(n)][:, rng.permutation(d)]
        errors[t] = _holdout_errors(shuffled[:p, :q], shuffled[:p, q:], shuffled[p:, :q], shuffled[p:, q:], ks)
    return errors


def _holdout_errors(A: NDArray[np.float64], B: NDArray[np.float64], C: NDArray[np.float64], D: NDArray[np.float64],
                    ks: NDArray[np.int64]) -> NDArray[np.float64]:
    """``‖A − B D_k⁺ C‖²_F`` for every k, NaN above the numerical rank of D."""
    U, singular, Vt = np.linalg.svd(D, full_matrices=False)
    tolerance = singular[0] * max(D.shape) * np.finfo(np.float64).eps if singular.size else 0.0
    rank = int(np.count_nonzero(singular > tolerance))
    left = (B @ Vt[:rank].T) / singular[:rank]  # b_j, shape (p, rank)
    right = U[:, :rank].T @ C  # c_j, shape (rank, q)
    cross = np.einsum("ij,ij->j", left, A @ right.T)  # ⟨A, b_j c_jᵀ⟩
    gram = np.cumsum(np.cumsum((left.T @ left) * (right @ right.T), axis=0), axis=1)
    squared = np.concatenate([[0.0], np.diagonal(gram)])  # ‖Σ_{j<k} b_j c_jᵀ‖²
    by_rank = np.maximum(float((A * A).sum()) - 2.0 * np.concatenate([[0.0], np.cumsum(cross)]) + squared, 0.0)
    return np.where(ks <= rank, by_rank[np.minimum(ks, rank)], np.nan)


# ------------------------------------------------------------------------------------------------- checks

def _pair(X1: ArrayLike, X2: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    X1, X2 = as_matrix(X1, "X1"), as_matrix(X2, "X2")
    if X1.shape[1] != X2.shape[1]:
        raise ValueError(f"X1 has {X1.shape[1]} features, X2 has {X2.shape[1]}; the halves must share the columns")
    return X1, X2


def as_ranks(ks: Sequence[int] | ArrayLike) -> NDArray[np.int64]:
    array = np.asarray(ks)
    if array.ndim != 1 or array.size == 0 or array.dtype.kind not in "iu" or (array < 0).any():
        raise ValueError(f"ks: expected a non-empty 1-D sequence of integers >= 0, got {ks!r}")
    return array.astype(np.int64)


