"""analysis/severities.py: an arm's silent failures summarised by their severity, by hand."""

from __future__ import annotations

import pytest

from arrivalbench.analysis.outcomes import CellOutcome
from arrivalbench.analysis.severities import (
    misstates_total,
    severity_summaries,
    silent_failures,
    total_error,
)

FIVE = ("late_arrival", "out_of_order", "duplicate_delivery", "crash_retry", "backfill")


def sev(wrong: float, *errors: float | None) -> dict:
    return {
        "wrong_rows_share": wrong,
        "measures": {
            f"m{i}": {
                "expected_total": 100.0,
                "actual_total": 100.0 * (1 + (e or 0)),
                "total_error": e,
            }
            for i, e in enumerate(errors)
        },
    }


def outcome(sample: int, snapshot: str = "PASS", **fails: dict | None) -> CellOutcome:
    verdicts = {"snapshot": snapshot, **{h: "PASS" for h in FIVE}}
    verdicts.update({h: "FAIL" for h in fails})
    return CellOutcome(
        arm="m",
        task="t",
        sample=sample,
        scenario="t",
        hazards=FIVE,
        verdicts=verdicts,
        error_classes={},
        artifact=True,
        no_artifact_reason=None,
        snapshot_by_turn=(),
        severities={h: s for h, s in fails.items() if s is not None},
    )


def test_total_error_is_the_worst_finite_column_and_misstating_is_above_one_percent():
    assert total_error(sev(0.5, 0.02, 0.3)) == 0.3
    assert total_error(sev(0.5, None)) is None
    assert misstates_total(sev(0.1, 0.0, 0.011))
    assert not misstates_total(sev(0.1, 0.01, 0.0))  # exactly 1% is not more than 1%
    zero = {"measures": {"n": {"expected_total": 0.0, "actual_total": 3.0, "total_error": None}}}
    assert misstates_total(zero) and total_error(zero) is None


def test_summary_by_hand_over_four_measured_fails_and_one_from_format_1():
    outcomes = [
        outcome(0, duplicate_delivery=sev(0.1, 0.10), backfill=sev(0.2, 0.005)),
        outcome(1, late_arrival=sev(0.4, 0.50), crash_retry=sev(0.3, 0.0)),
        outcome(2, out_of_order=None),  # a FAIL graded before severity
        outcome(3, snapshot="FAIL", duplicate_delivery=sev(1.0, 1.0)),  # not silent: snapshot fails
    ]
    assert len(silent_failures(outcomes)) == 5
    (s,) = severity_summaries(outcomes).values()
    assert (s.fails, s.measured) == (5, 4)
    # wrong rows 0.1, 0.2, 0.3, 0.4: median (0.2 + 0.3) / 2; p90 at rank 0.9 * 3 = 2.7
    assert s.wrong_rows_median == pytest.approx(0.25)
    assert s.wrong_rows_p90 == pytest.approx(0.3 + 0.7 * (0.4 - 0.3))
    # total errors 0.0, 0.005, 0.10, 0.50
    assert s.total_error_median == pytest.approx((0.005 + 0.10) / 2)
    assert s.total_error_p90 == pytest.approx(0.10 + 0.7 * (0.50 - 0.10))
    assert s.misstated == 2  # 0.10 and 0.50
    assert s.cells == (("m", "t", 0), ("m", "t", 1))
