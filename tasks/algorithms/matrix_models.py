"""Matrix models whose order is a rank (seed 004 §2.4-2.6): every criterion for every k of a trial at once.

Each model is ``orders(trial, ks, criteria, rng, **params) -> {variable: values of shape (len(ks),)}``,
computing the criteria asked for (and only those) from one fit per trial: one SVD of the training rows
gives every rank, one GreConD run gives every number of factors (each k is a prefix of it).

  truncated_svd  real matrices (image patches): ``mtc_matrix`` is eq. (7), each test row against the rank-k
                 reconstruction of its nearest training row (Euclidean); ``psnr`` is the oracle (the whole
                 noisy tiling's rank-k reconstruction against the clean image); ``opcv_half``/``opcv_fifth``.
  boolean_svd    Boolean matrices, Molloy's denoiser g(U_k S_k V_kᵀ), g = 1{> 0.5}: ``mtc_matrix`` maps by
                 Hamming distance and pays the Hamming distance to g(reconstruction) (l. 115, spec §2.1 [A]);
                 ``coverage_rule`` and ``increment_rule`` are Molloy's two rules on the trial's whole noisy
                 matrix; ``denoise_error`` is the oracle ‖g_k − X*‖₁; ``opcv_half``/``opcv_fifth``.
  boolean_mf     Boolean OR factorisation by GreConD (deviation: the paper fits MAC, which has no public
                 code); ``mtc_matrix`` is the per-user bit cost of l. 119 with the Hamming nearest neighbour.

Owen-Perry's bi-cross-validation (l. 107-113) scores one random row and column permutation of the whole
noisy matrix per trial (the paper's 20 permutations are 20 trials; its decision, the argmin of the per-k
medians, is the reducer's ``aggregate: median``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from tasks.algorithms import boolean_mf, lowrank
from tasks.datasets.matrices import MatrixTrial

OPCV_FRACTIONS = {"opcv_half": 0.5, "opcv_fifth": 0.2}


def _opcv(trial: MatrixTrial, ks: NDArray[np.int64], name: str, rng: np.random.Generator) -> NDArray[np.float64]:
    return lowrank.opcv_errors(trial.whole, ks, rng, permutations=1, fraction=OPCV_FRACTIONS[name])[0]


def truncated_svd_orders(trial: MatrixTrial, ks: Sequence[int], criteria: Sequence[str],
                         rng: np.random.Generator) -> dict[str, NDArray[np.float64]]:
    """The criteria of a truncated SVD (uncentred, spec §2.4 [A]) for every rank in ``ks``."""
    ranks = np.asarray(ks, dtype=np.int64)
    out: dict[str, NDArray[np.float64]] = {}
    for name in criteria:
        if name == "mtc_matrix":
            out[name] = lowrank.svd_transfer_costs(trial.first, trial.second, ranks)
        elif name == "psnr":
            out[name] = lowrank.denoise_psnrs(trial.whole, trial.clean, ranks, peak=trial.peak)
        elif name in OPCV_FRACTIONS:
            out[name] = _opcv(trial, ranks, name, rng)
        else:
            raise ValueError(f"truncated_svd does not compute {name!r}")
    return out


def boolean_svd_orders(trial: MatrixTrial, ks: Sequence[int], criteria: Sequence[str],
                       rng: np.random.Generator) -> dict[str, NDArray[np.float64]]:
    """The criteria of Molloy's SVD denoiser of a Boolean matrix for every rank in ``ks``."""
    ranks = np.asarray(ks, dtype=np.int64)
    out: dict[str, NDArray[np.float64]] = {}
    for name in criteria:
        if name == "mtc_matrix":
            out[name] = lowrank.boolean_svd_transfer_costs(trial.first, trial.second, ranks)
        elif name == "denoise_error":
            out[name] = lowrank.denoise_errors(trial.whole, trial.clean, ranks).astype(np.float64)
        elif name == "coverage_rule":
            out[name] = lowrank.coverage_shares(trial.whole, ranks)
        elif name == "increment_rule":
            out[name] = lowrank.increments(trial.whole, ranks)
        elif name in OPCV_FRACTIONS:
            out[name] = _opcv(trial, ranks, name, rng)
        else:
            raise ValueError(f"boolean_svd does not compute {name!r}")
    return out


def boolean_mf_orders(trial: MatrixTrial, ks: Sequence[int], criteria: Sequence[str],
                      rng: np.random.Generator) -> dict[str, NDArray[np.float64]]:
    """The criteria of a Boolean OR factorisation (GreConD, every k a prefix of one run) for every k in ``ks``."""
    ranks = np.asarray(ks, dtype=np.int64)
    out: dict[str, NDArray[np.float64]] = {}
    factors = None
    for name in criteria:
        if name == "mtc_matrix":
            factors = factors or boolean_mf.greconD(trial.first, int(ranks.max()))
            out[name] = boolean_mf.bmf_transfer_costs(trial.first, factors, trial.second, ranks)
        else:
            raise ValueError(f"boolean_mf does not compute {name!r}")
    return out
