"""Matrix models whose order is a rank (Frank et al. 2011, Secs. 4-5): every criterion for every k of a trial at once.

Each function is ``f(trial, ranks, rng) -> values of shape (len(ranks),)``: one criterion of one model for every
rank of a trial, registered by the criterion (``Criterion.computations``, :mod:`ordercube.tasks.criteria.matrix`): one SVD
of the training rows gives every rank, one GreConD run gives every number of factors (each k is a prefix of it).

  truncated_svd  real matrices (image patches): ``mtc_matrix`` is eq. (7), each test row against the rank-k
                 reconstruction of its nearest training row (Euclidean); ``psnr`` is the oracle (the whole
                 noisy tiling's rank-k reconstruction against the clean image); ``opcv_half``/``opcv_fifth``.
  boolean_svd    Boolean matrices, Molloy's denoiser g(U_k S_k V_kᵀ), g = 1{> 0.5}: ``mtc_matrix`` maps by
                 Hamming distance and pays the Hamming distance to g(reconstruction) (Sec. 4.2; our reading of the cost);
                 ``coverage_rule`` and ``increment_rule`` are Molloy's two rules on the trial's whole noisy
                 matrix; ``denoise_error`` is the oracle ‖g_k − X*‖₁; ``opcv_half``/``opcv_fifth``.
  boolean_mf     Boolean OR factorisation by GreConD (deviation: the paper fits MAC, which has no public
                 code); ``mtc_matrix`` is the per-user bit cost of Sec. 5 with the Hamming nearest neighbour.

Owen-Perry's bi-cross-validation (Sec. 4.2) scores one random row and column permutation of the whole
noisy matrix per trial (the paper's 20 permutations are 20 trials; its decision, the argmin of the per-k
medians, is the reducer's ``aggregate: median``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ordercube.tasks.algorithms import boolean_mf, lowrank
from ordercube.tasks.datasets.matrices import MatrixTrial

Ranks = NDArray[np.int64]
Values = NDArray[np.float64]


def opcv_half(trial: MatrixTrial, ranks: Ranks, rng: np.random.Generator) -> Values:
    """Owen & Perry's bi-cross-validation, the top-left half of the rows and columns held out."""
    return lowrank.opcv_errors(trial.whole, ranks, rng, permutations=1, fraction=0.5)[0]


def opcv_fifth(trial: MatrixTrial, ranks: Ranks, rng: np.random.Generator) -> Values:
    """Owen & Perry's bi-cross-validation, the top-left fifth of the rows and columns held out."""
    return lowrank.opcv_errors(trial.whole, ranks, rng, permutations=1, fraction=0.2)[0]


def svd_transfer_costs(trial: MatrixTrial, ranks: Ranks, rng: np.random.Generator) -> Values:
    """``mtc_matrix`` of a truncated SVD: eq. (7), Euclidean nearest training row."""
    return lowrank.svd_transfer_costs(trial.first, trial.second, ranks)


def svd_psnr(trial: MatrixTrial, ranks: Ranks, rng: np.random.Generator) -> Values:
    """``psnr``: the whole noisy tiling's rank-k reconstruction against the clean image."""
    return lowrank.denoise_psnrs(trial.whole, trial.clean, ranks, peak=trial.peak)


def boolean_svd_transfer_costs(trial: MatrixTrial, ranks: Ranks, rng: np.random.Generator) -> Values:
    """``mtc_matrix`` of Molloy's SVD denoiser: Hamming nearest training row, Hamming cost to g(reconstruction)."""
    return lowrank.boolean_svd_transfer_costs(trial.first, trial.second, ranks)


def denoise_errors(trial: MatrixTrial, ranks: Ranks, rng: np.random.Generator) -> Values:
    """``denoise_error``: ‖g_k − X*‖₁ of the whole noisy matrix's denoised rank-k SVD."""
    return lowrank.denoise_errors(trial.whole, trial.clean, ranks).astype(float)


def coverage_shares(trial: MatrixTrial, ranks: Ranks, rng: np.random.Generator) -> Values:
    """``coverage_rule``: Molloy's rule (i) on the trial's whole noisy matrix."""
    return lowrank.coverage_shares(trial.whole, ranks)


def increments(trial: MatrixTrial, ranks: Ranks, rng: np.random.Generator) -> Values:
    """``increment_rule``: Molloy's rule (ii) on the trial's whole noisy matrix."""
    return lowrank.increments(trial.whole, ranks)


def greconD_transfer_costs(trial: MatrixTrial, ranks: Ranks, rng: np.random.Generator) -> Values:
    """``mtc_matrix`` of a Boolean OR factorisation: the per-user bit cost with the Hamming nearest neighbour."""
    factors = boolean_mf.greconD(trial.first, int(ranks.max()))
    return boolean_mf.bmf_transfer_costs(trial.first, factors, trial.second, ranks)
