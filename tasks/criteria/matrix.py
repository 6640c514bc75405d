"""Criteria of a matrix model's order (Frank, Chehreghani & Buhmann 2011, section 2.4-2.6): what each measures, how
k̂ follows, and its computation for every rank of a trial per model (``computations``: functions of
:mod:`ordercube.tasks.algorithms.matrix_models`, imported on their first call)."""

from __future__ import annotations

import math

from ordercube.tasks.criteria.base import Criterion, Decision
from ordercube.tasks.deferred import Deferred

READS = "orders"  # every rank of a trial at once, by the computation registered for the method's model


def _kernel(name: str) -> Deferred:
    return Deferred(f"ordercube.tasks.algorithms.matrix_models:{name}")


OPCV_HALF_ERRORS, OPCV_FIFTH_ERRORS = _kernel("opcv_half"), _kernel("opcv_fifth")

MATRIX_REPORT = ("ordercube.pipeline.report.matrix:section",)  # each criterion's rank against the oracle's, the PSNR crest
MTC_MATRIX = Criterion(
    name="mtc_matrix", citation="Frank et al. 2011", min_k=1, reads=READS,
    computations={"truncated_svd": _kernel("svd_transfer_costs"), "boolean_svd": _kernel("boolean_svd_transfer_costs"),
                  "boolean_mf": _kernel("greconD_transfer_costs")},
    decision=Decision(rule="smallest", ties="smallest", aggregate="median_of_choices"),
    description="minimum transfer cost of a matrix model (Frank et al., eq. 7 and Sec. 4.2): each test row against "
                "the rank-k model of its nearest training row (Euclidean; Hamming for Boolean data), mean per test row; "
                "k̂ the median of the trials' argmins, as the paper",
    report_sections=("ordercube.pipeline.report.transfer:section", "ordercube.pipeline.report.matrix:section"))
OPCV_HALF = Criterion(
    name="opcv_half", citation="Owen & Perry 2009", min_k=1, reads=READS,
    computations={"truncated_svd": OPCV_HALF_ERRORS, "boolean_svd": OPCV_HALF_ERRORS},
    decision=Decision(rule="smallest", ties="smallest", aggregate="median"),
    description="Owen-Perry bi-cross-validation as Frank et al. run it (Sec. 4.2): ‖A - B D_k⁺ C‖²_F of one random "
                "permutation per trial, the top-left ⌊n/2⌋ x ⌊d/2⌋ block held out; k̂ the argmin of the per-k medians; "
                "NaN above the rank of D",
    report_sections=MATRIX_REPORT)
OPCV_FIFTH = Criterion(
    name="opcv_fifth", citation="Owen & Perry 2009", min_k=1, reads=READS,
    computations={"truncated_svd": OPCV_FIFTH_ERRORS, "boolean_svd": OPCV_FIFTH_ERRORS},
    decision=Decision(rule="smallest", ties="smallest", aggregate="median"),
    description="Owen-Perry bi-cross-validation with the small hold-out, the top-left ⌊n/5⌋ x ⌊d/5⌋ block",
    report_sections=MATRIX_REPORT)
COVERAGE_RULE = Criterion(
    name="coverage_rule", citation="Molloy et al. 2009", min_k=1, reads=READS, computations={"boolean_svd": _kernel("coverage_shares")},
    decision=Decision(rule="first_above", threshold=0.8, aggregate="median", threshold_range=(0.0, 1.0)),
    description="Molloy's rule (i): the share of the noisy matrix's 1-entries that g(rank-k SVD) keeps at 1; k̂ the "
                "smallest k covering 80%",
    report_sections=MATRIX_REPORT)
INCREMENT_RULE = Criterion(
    name="increment_rule", citation="Molloy et al. 2009", min_k=1, reads=READS, computations={"boolean_svd": _kernel("increments")},
    decision=Decision(rule="first_below", threshold=0.001, aggregate="median", threshold_range=(0.0, math.inf)),
    description="Molloy's rule (ii): the approximation increment ‖g_k - g_(k+1)‖₁ / ‖X‖₁ of the noisy matrix; k̂ the "
                "smallest k below 0.001",
    report_sections=MATRIX_REPORT)
PSNR = Criterion(
    name="psnr", citation="Frank et al. 2011", min_k=1, reads=READS, oracle=True, computations={"truncated_svd": _kernel("svd_psnr")},
    needs_data=("image",),
    decision=Decision(rule="largest", aggregate="median_of_choices"),
    description="oracle: peak SNR (dB) of the whole noisy image's rank-k reconstruction against the clean image "
                "(Frank et al. Fig. 2); k* its argmax",
    report_sections=MATRIX_REPORT)
DENOISE_ERROR = Criterion(
    name="denoise_error", citation="Frank et al. 2011", min_k=1, reads=READS, oracle=True, computations={"boolean_svd": _kernel("denoise_errors")},
    decision=Decision(rule="smallest", ties="smallest", aggregate="median_of_choices"),
    description="oracle: ‖g(rank-k SVD of the noisy matrix) - X*‖₁, the bits the denoiser gets wrong (Frank et al. "
                "Sec. 4.2); k* its argmin",
    report_sections=MATRIX_REPORT)

MATRIX_CRITERIA = (MTC_MATRIX, OPCV_HALF, OPCV_FIFTH, COVERAGE_RULE, INCREMENT_RULE, PSNR, DENOISE_ERROR)
