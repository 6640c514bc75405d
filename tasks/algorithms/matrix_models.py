"""Matrix models whose order is a rank (Frank et al. 2011, Secs. 4-5): every criterion for every k of a trial at once.

Each model is ``orders(trial, ks, criteria, rng, **params) -> {variable: values of shape (len(ks),)}``,
computing the criteria asked for (and only those) from one fit per trial: one SVD of the training rows
gives every rank, one GreConD run gives every number of factors (each k is a prefix of it).

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

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from tasks.algorithms import boolean_mf, lowrank
from tasks.datasets.matrices import MatrixTrial

Criterion = Callable[[MatrixTrial, NDArray[np.int64], np.random.Generator], NDArray[np.float64]]


def _opcv(fraction: float) -> Criterion:
    def errors(trial: MatrixTrial, ranks: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.float64]:
        return lowrank.opcv_errors(trial.whole, ranks, rng, permutations=1, fraction=fraction)[0]

    return errors


def _greconD_transfer_costs(trial: MatrixTrial, ranks: NDArray[np.int64], rng: np.random.Generator) -> NDArray[np.float64]:
    factors = boolean_mf.greconD(trial.first, int(ranks.max()))
    return boolean_mf.bmf_transfer_costs(trial.first, factors, trial.second, ranks)


OPCV = {"opcv_half": _opcv(0.5), "opcv_fifth": _opcv(0.2)}
# What each model computes, by criterion: f(trial, ranks, rng) -> values of shape (len(ranks),)
TRUNCATED_SVD: dict[str, Criterion] = {
    "mtc_matrix": lambda trial, ranks, rng: lowrank.svd_transfer_costs(trial.first, trial.second, ranks),
    "psnr": lambda trial, ranks, rng: lowrank.denoise_psnrs(trial.whole, trial.clean, ranks, peak=trial.peak),
    **OPCV,
}
BOOLEAN_SVD: dict[str, Criterion] = {
    "mtc_matrix": lambda trial, ranks, rng: lowrank.boolean_svd_transfer_costs(trial.first, trial.second, ranks),
    "denoise_error": lambda trial, ranks, rng: lowrank.denoise_errors(trial.whole, trial.clean, ranks).astype(float),
    "coverage_rule": lambda trial, ranks, rng: lowrank.coverage_shares(trial.whole, ranks),
    "increment_rule": lambda trial, ranks, rng: lowrank.increments(trial.whole, ranks),
    **OPCV,
}
BOOLEAN_MF: dict[str, Criterion] = {"mtc_matrix": _greconD_transfer_costs}


def _orders(model: str, table: dict[str, Criterion], trial: MatrixTrial, ks: Sequence[int], criteria: Sequence[str],
            rng: np.random.Generator) -> dict[str, NDArray[np.float64]]:
    unknown = [name for name in criteria if name not in table]
    if unknown:  # the config check refuses this
        raise ValueError(f"{model} does not compute {unknown}; it computes {sorted(table)}")
    ranks = np.asarray(ks, dtype=np.int64)
    return {name: table[name](trial, ranks, rng) for name in criteria}


def truncated_svd_orders(trial: MatrixTrial, ks: Sequence[int], criteria: Sequence[str],
                         rng: np.random.Generator) -> dict[str, NDArray[np.float64]]:
    """The criteria of a truncated SVD (uncentred, a choice the paper leaves open) for every rank in ``ks``."""
    return _orders("truncated_svd", TRUNCATED_SVD, trial, ks, criteria, rng)


def boolean_svd_orders(trial: MatrixTrial, ks: Sequence[int], criteria: Sequence[str],
                       rng: np.random.Generator) -> dict[str, NDArray[np.float64]]:
    """The criteria of Molloy's SVD denoiser of a Boolean matrix for every rank in ``ks``."""
    return _orders("boolean_svd", BOOLEAN_SVD, trial, ks, criteria, rng)


def boolean_mf_orders(trial: MatrixTrial, ks: Sequence[int], criteria: Sequence[str],
                      rng: np.random.Generator) -> dict[str, NDArray[np.float64]]:
    """The criteria of a Boolean OR factorisation (GreConD, every k a prefix of one run) for every k in ``ks``."""
    return _orders("boolean_mf", BOOLEAN_MF, trial, ks, criteria, rng)
