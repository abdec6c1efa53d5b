"""analysis/pooled.py: per-hazard counts pooled over cells, by hand."""

from __future__ import annotations

import pytest

from arrivalbench.analysis.outcomes import CellOutcome
from arrivalbench.analysis.pooled import pooled_hazards

FIVE = ("late_arrival", "out_of_order", "duplicate_delivery", "crash_retry", "backfill")


def cell(task: str, sample: int, snapshot: str = "PASS", **verdicts: str) -> CellOutcome:
    seen = {"snapshot": snapshot, **{h: "PASS" for h in FIVE}, **verdicts}
    return CellOutcome(
        arm="human", task=task, sample=sample, scenario=task, hazards=FIVE, verdicts=seen,
        error_classes={}, artifact=True, no_artifact_reason=None, snapshot_by_turn=(),
    )  # fmt: skip


CELLS = [
    cell("t1", 0, late_arrival="FAIL"),
    cell("t1", 1, duplicate_delivery="ERROR"),  # out of duplicate delivery only; out of strict
    cell("t2", 0, late_arrival="FAIL", crash_retry="FAIL"),
    cell(
        "t2", 1, snapshot="FAIL", out_of_order="FAIL"
    ),  # per-hazard rule keeps it; strict does not
]


def test_per_hazard_rule_pools_each_hazard_over_its_own_cells():
    pooled = pooled_hazards(CELLS)["human"]
    assert pooled.counts == {
        "late_arrival": (2, 4),
        "out_of_order": (3, 4),
        "duplicate_delivery": (3, 3),
        "crash_retry": (3, 4),
        "backfill": (4, 4),
    }
    # weakest ordering 2/4 against weakest idempotency 3/4
    assert pooled.weakest_link == pytest.approx(0.5 - 0.75)


def test_strict_rule_counts_every_hazard_over_the_gaps_cells():
    pooled = pooled_hazards(CELLS, strict=True)["human"]
    # only t1/0 and t2/0 pass the snapshot with no ERROR on a declared hazard
    assert pooled.counts == {
        "late_arrival": (0, 2),
        "out_of_order": (2, 2),
        "duplicate_delivery": (2, 2),
        "crash_retry": (1, 2),
        "backfill": (2, 2),
    }
    assert pooled.weakest_link == pytest.approx(0.0 - 0.5)
