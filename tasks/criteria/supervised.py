"""Error rates of a classifier of order k (Daudin & Mary-Huard 2008, "the swapping method").

For these criteria the labels are the response: a trial is a labelled sample split into a learning set
(and a test set), and the method's classifier kernel (:mod:`ordercube.tasks.classifiers`) computes every rate for
every k of the trial at once. Each criterion here only declares what is stored and how k̂ follows:
the smallest value, ties to the smallest k (the rates are multiples of 1/n and tie often; the
simpler classifier is the parsimonious choice, one the paper leaves open; ``--decide NAME.ties=largest`` is the
sensitivity variant).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ordercube.tasks.criteria.base import Criterion, Decision
from ordercube.tasks.params import ParamError, choice, number

ERROR_RATE = Decision(rule="smallest", ties="smallest")
READS = "error_rates"  # computed by the classifier's kernel (ordercube.tasks.classifiers.kernels), its options the kernel's
CLASSIFIERS = ("knn", "interval_erm")


def _literal_rule_for_odd_k(options: Mapping[str, Any], ks: tuple[int, ...]) -> None:
    """The paper's literal swap condition is stated for odd k only (Sec. 4.1)."""
    even = [k for k in ks if k % 2 == 0]
    if options.get("swap_rule") == "literal" and even:
        raise ParamError("swap_rule", f"swap_rule: literal is the paper's rule for odd k, and k holds even values "
                         f"{even[:5]}", "use odd k only, or swap_rule: exact")


SUPERVISED_REPORT = ("ordercube.pipeline.report.supervised:section",)  # Daudin & Mary-Huard's Table 1 and Figs. 1-3
SWAPPING = Criterion(
    name="swapping", citation="Daudin & Mary-Huard 2008",
    min_k=1,
    description="swapping method: resubstitution error plus the swapping covariance penalty (Daudin & Mary-Huard 2008, eq. 5)",
    decision=ERROR_RATE,
    outputs=("swapping", "swap_penalty"),
    # n0: the plug-in's prior weight, eq. (4) ("n0 is fixed to 10", Sec. 2); swap_rule: the exact swap
    # condition of the kNN form, or the paper's literal sentence (Sec. 4.1), which also counts minority points
    options={"n0": 10.0, "swap_rule": "exact"},
    ranges={"n0": number(0.0), "swap_rule": choice("exact", "literal")},
    check=_literal_rule_for_odd_k,
    algorithms=CLASSIFIERS,
    reads=READS,
    report_sections=SUPERVISED_REPORT,
)
LOO_CV = Criterion(name="loo_cv", citation="Daudin & Mary-Huard 2008", min_k=1, decision=ERROR_RATE, algorithms=CLASSIFIERS, reads=READS,
                   description="leave-one-out cross-validated error on the learning set ('(n-1,1) cross validation')",
                   report_sections=SUPERVISED_REPORT)
RESUBSTITUTION = Criterion(name="resubstitution", citation="Daudin & Mary-Huard 2008", min_k=1, decision=Decision(rule="none"), algorithms=CLASSIFIERS,
                           reads=READS, description="empirical (resubstitution) error rate on the learning set",
                           report_sections=SUPERVISED_REPORT)
TEST_ERROR = Criterion(name="test_error", citation="Daudin & Mary-Huard 2008", min_k=1, decision=ERROR_RATE, algorithms=("knn",), reads=READS,
                       needs_data=("test_set",),
                       description="error rate on the trial's held-out test set: argmin is the oracle (O)",
                       report_sections=SUPERVISED_REPORT)
TRUE_ERROR = Criterion(name="true_error", citation="Daudin & Mary-Huard 2008", min_k=1, decision=ERROR_RATE, algorithms=("interval_erm",),
                       reads=READS, needs_data=("target",),
                       description="exact true error rate P(phi(X) != Y) under the generator: argmin is the oracle (O)",
                       report_sections=SUPERVISED_REPORT)
CONDITIONAL_ERROR = Criterion(name="conditional_error", citation="Daudin & Mary-Huard 2008", min_k=1, decision=Decision(rule="none"),
                              algorithms=("interval_erm",), reads=READS, needs_data=("target",),
                              description="exact conditional error rate: new labels at the learning points",
                              report_sections=SUPERVISED_REPORT)

SUPERVISED_CRITERIA = (SWAPPING, LOO_CV, RESUBSTITUTION, TEST_ERROR, TRUE_ERROR, CONDITIONAL_ERROR)
