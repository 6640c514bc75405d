"""Error rates of a classifier of order k (seed 003, Daudin & Mary-Huard, "the swapping method").

For these criteria the labels are the response: a trial is a labelled sample split into a learning set
(and a test set), and the method's classifier kernel (:mod:`tasks.classifiers`) computes every rate for
every k of the trial at once. Each criterion here only declares what is stored and how k̂ follows:
the smallest value, ties to the smallest k (the rates are multiples of 1/n and tie often; the
simpler classifier is the parsimonious choice, spec §1.2 [A]; ``--decide NAME.ties=largest`` is the
sensitivity variant).
"""

from __future__ import annotations

from tasks.criteria.base import Criterion, Decision
from tasks.params import choice, number

ERROR_RATE = Decision(rule="smallest", ties="smallest")
CLASSIFIERS = ("knn", "interval_erm")

SUPERVISED_REPORT = ("pipeline.report_supervised:section",)  # Daudin & Mary-Huard's Table 1 and Figs. 1-3
SWAPPING = Criterion(
    name="swapping",
    min_k=1,
    description="swapping method: resubstitution error plus the swapping covariance penalty (seed 003 eq. 5)",
    decision=ERROR_RATE,
    outputs=("swapping", "swap_penalty"),
    # n0: the plug-in's prior weight, eq. (4) l. 60 ("n0 is fixed to 10", l. 64); swap_rule: the exact swap
    # condition of the kNN form, or the paper's literal sentence (l. 137), which also counts minority points
    options={"n0": 10.0, "swap_rule": "exact"},
    ranges={"n0": number(0.0), "swap_rule": choice("exact", "literal")},
    algorithms=CLASSIFIERS,
    supervised=True,
    report_sections=SUPERVISED_REPORT,
)
LOO_CV = Criterion(name="loo_cv", min_k=1, decision=ERROR_RATE, algorithms=CLASSIFIERS, supervised=True,
                   description="leave-one-out cross-validated error on the learning set ('(n-1,1) cross validation')",
                   report_sections=SUPERVISED_REPORT)
RESUBSTITUTION = Criterion(name="resubstitution", min_k=1, decision=Decision(rule="none"), algorithms=CLASSIFIERS,
                           supervised=True, description="empirical (resubstitution) error rate on the learning set",
                           report_sections=SUPERVISED_REPORT)
TEST_ERROR = Criterion(name="test_error", min_k=1, decision=ERROR_RATE, algorithms=CLASSIFIERS, supervised=True,
                       description="error rate on the trial's held-out test set: argmin is the oracle (O)",
                       report_sections=SUPERVISED_REPORT)
TRUE_ERROR = Criterion(name="true_error", min_k=1, decision=ERROR_RATE, algorithms=("interval_erm",),
                       supervised=True,
                       description="exact true error rate P(phi(X) != Y) under the generator: argmin is the oracle (O)",
                       report_sections=SUPERVISED_REPORT)
CONDITIONAL_ERROR = Criterion(name="conditional_error", min_k=1, decision=Decision(rule="none"),
                              algorithms=("interval_erm",), supervised=True,
                              description="exact conditional error rate: new labels at the learning points",
                              report_sections=SUPERVISED_REPORT)

SUPERVISED_CRITERIA = (SWAPPING, LOO_CV, RESUBSTITUTION, TEST_ERROR, TRUE_ERROR, CONDITIONAL_ERROR)
