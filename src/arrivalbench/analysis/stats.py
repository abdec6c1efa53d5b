"""Rates, intervals and tests over graded cells. Every rate is a mean over tasks of per-task rates.

A cell is one (arm, task, sample). Each metric maps a cell to 1.0, 0.0 or None (the cell is not in
that metric's denominator); a task's rate is the mean over its usable cells and an arm's rate the
mean over tasks with at least one usable cell, so a task with many samples weighs no more than one
with few. Intervals resample tasks, never cells. Definitions and worked examples: docs/metrics.md.

The code is split by role: outcomes.py (cells joined to their verdicts), rates.py (per-cell
metrics and rates), intervals.py (bootstrap and exact intervals, paired differences),
signtests.py (the failure signature, sign tests, replication). This module keeps every name
importable from its old place.
"""

from __future__ import annotations

from arrivalbench.analysis.intervals import (
    DEFAULT_BOOTSTRAP_SEED,
    EXACT_BELOW,
    LEVEL,
    Estimate,
    Unit,
    bound_of_three,
    clopper_pearson,
    estimate,
    paired,
    percentile_interval,
)
from arrivalbench.analysis.outcomes import (
    CONSTRAINT,
    CONSTRAINT_MESSAGES,
    SNAPSHOT,
    CellOutcome,
    IncompleteCellError,
    error_class,
    outcomes,
    run_outcomes,
)
from arrivalbench.analysis.rates import (
    FAILURE_METRICS,
    METRICS,
    ArmSummary,
    arm_summaries,
    crash_rates,
    no_artifact,
    rate,
    task_rates,
)
from arrivalbench.analysis.signtests import (
    SIGN_TEST_NULL,
    Replication,
    Signature,
    SignatureForm,
    replication,
    sign_test,
    signature,
    signature_sign_test,
)
from arrivalbench.hazards import BENIGN, IDEMPOTENCY, LOUD, ORDERING, SILENT

__all__ = [
    "BENIGN",
    "CONSTRAINT",
    "CONSTRAINT_MESSAGES",
    "DEFAULT_BOOTSTRAP_SEED",
    "EXACT_BELOW",
    "FAILURE_METRICS",
    "IDEMPOTENCY",
    "LEVEL",
    "LOUD",
    "METRICS",
    "ORDERING",
    "SIGN_TEST_NULL",
    "SILENT",
    "SNAPSHOT",
    "ArmSummary",
    "CellOutcome",
    "Estimate",
    "IncompleteCellError",
    "Replication",
    "Signature",
    "SignatureForm",
    "Unit",
    "arm_summaries",
    "bound_of_three",
    "clopper_pearson",
    "crash_rates",
    "error_class",
    "estimate",
    "no_artifact",
    "outcomes",
    "paired",
    "percentile_interval",
    "rate",
    "replication",
    "run_outcomes",
    "sign_test",
    "signature",
    "signature_sign_test",
    "task_rates",
]
