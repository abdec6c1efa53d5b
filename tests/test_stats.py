"""Arm rates on hand-made cells and verdicts, with every expected number worked out by hand.

daily_revenue declares five hazards; store_sales_schema declares the same five and schema_evolution.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from arrivalbench.spec import get_task
from arrivalbench.stats import ArmSummary, arm_summaries
from arrivalbench.store import Cell

A, B = "daily_revenue", "store_sales_schema"
TASKS = {t: get_task(t) for t in (A, B)}


def cell(task: str, sample: int, arm: str = "model", artifact: bool = True) -> Cell:
    if artifact:
        return Cell(arm=arm, task=task, sample=sample, artifact_sha256=f"{task}-{sample}")
    return Cell(arm=arm, task=task, sample=sample, no_artifact_reason="no_submission")


def graded(task: str, sample: int, arm: str = "model", **verdicts: str) -> list[dict[str, object]]:
    """Verdict rows for the snapshot and every declared hazard: PASS unless given."""
    schedules = ["snapshot", "single_batch", "in_order_stream", *TASKS[task].spec.hazards]
    rows = {s: verdicts.pop(s, "PASS") for s in schedules}
    rows.update(verdicts)  # a schedule the task does not declare
    return [
        {"arm": arm, "task": task, "sample": sample, "schedule": s, "verdict": v}
        for s, v in rows.items()
    ]


def table(*groups: list[dict[str, object]]) -> pa.Table:
    rows = [row for group in groups for row in group]
    return pa.Table.from_pylist(
        rows,
        schema=pa.schema(
            [
                ("arm", pa.string()),
                ("task", pa.string()),
                ("sample", pa.int64()),
                ("schedule", pa.string()),
                ("verdict", pa.string()),
            ]
        ),
    )


def only(summaries: list[ArmSummary]) -> ArmSummary:
    (summary,) = summaries
    return summary


def test_rates_are_means_over_tasks_not_pooled_over_cells():
    # A: 3 cells pass the snapshot, one FAILs late_arrival  -> snapshot 1, gap 1/3, error 0, all-in 1/3
    # B: 2 cells, one FAILs the snapshot, one ERRORs crash_retry
    #                                                      -> snapshot 1/2, gap undefined, error 1/2, all-in 1
    cells = [cell(A, 0), cell(A, 1), cell(A, 2), cell(B, 0), cell(B, 1)]
    verdicts = table(
        graded(A, 0, late_arrival="FAIL"),
        graded(A, 1),
        graded(A, 2),
        graded(B, 0, snapshot="FAIL"),
        graded(B, 1, crash_retry="ERROR"),
    )
    s = only(arm_summaries(cells, verdicts, TASKS))
    assert (s.arm, s.tasks, s.cells) == ("model", 2, 5)
    assert s.snapshot_pass == pytest.approx(3 / 4)  # pooled over cells: 4/5
    assert s.gap == pytest.approx(1 / 3)  # B has no gap; it is left out, not counted as 0 (1/6)
    assert s.error == pytest.approx(1 / 4)  # pooled: 1/5
    assert s.all_in == pytest.approx(2 / 3)  # pooled: 3/5


def test_arms_are_summarised_apart_in_name_order():
    cells = [cell(A, 0, arm="zeta"), cell(A, 0, arm="alpha")]
    verdicts = table(graded(A, 0, arm="zeta", snapshot="FAIL"), graded(A, 0, arm="alpha"))
    alpha, zeta = arm_summaries(cells, verdicts, TASKS)
    assert (alpha.arm, alpha.snapshot_pass, alpha.gap, alpha.all_in) == ("alpha", 1.0, 0.0, 0.0)
    assert (zeta.arm, zeta.snapshot_pass, zeta.gap, zeta.all_in) == ("zeta", 0.0, None, 1.0)


def test_cell_without_artifact_fails_the_snapshot_and_all_in():
    # sample 1 has no artifact (and so no verdict rows): not a pass, an all-in failure, not an error
    cells = [cell(A, 0), cell(A, 1, artifact=False)]
    s = only(arm_summaries(cells, table(graded(A, 0)), TASKS))
    assert s.cells == 2
    assert s.snapshot_pass == pytest.approx(1 / 2)
    assert s.all_in == pytest.approx(1 / 2)
    assert s.error == 0.0
    assert s.gap == 0.0  # only sample 0 is in the gap's denominator


def test_cell_without_artifact_ignores_stray_verdict_rows():
    s = only(arm_summaries([cell(A, 0, artifact=False)], table(graded(A, 0)), TASKS))
    assert (s.snapshot_pass, s.gap, s.all_in) == (0.0, None, 1.0)


def test_error_masks_a_silent_failure_out_of_the_gap():
    # sample 0 ERRORs on late_arrival and FAILs duplicate_delivery: the FAIL says nothing about the
    # pipeline being silently wrong, so the cell leaves the gap's denominator; it is an error and an
    # all-in failure. Sample 1 passes everything: the gap is 0/1, not 1/2.
    cells = [cell(A, 0), cell(A, 1)]
    verdicts = table(graded(A, 0, late_arrival="ERROR", duplicate_delivery="FAIL"), graded(A, 1))
    s = only(arm_summaries(cells, verdicts, TASKS))
    assert s.gap == 0.0
    assert s.error == pytest.approx(1 / 2)
    assert s.all_in == pytest.approx(1 / 2)
    assert s.snapshot_pass == 1.0


def test_snapshot_error_counts_as_an_error():
    s = only(arm_summaries([cell(A, 0)], table(graded(A, 0, snapshot="ERROR")), TASKS))
    assert (s.snapshot_pass, s.gap, s.error, s.all_in) == (0.0, None, 1.0, 1.0)


def test_schema_evolution_enters_the_gap_only_when_asked():
    # B sample 0 FAILs only schema_evolution, sample 1 passes everything.
    cells = [cell(B, 0), cell(B, 1)]
    verdicts = table(graded(B, 0, schema_evolution="FAIL"), graded(B, 1))
    assert only(arm_summaries(cells, verdicts, TASKS)).gap == 0.0
    assert only(arm_summaries(cells, verdicts, TASKS, include_loud=True)).gap == pytest.approx(1 / 2)


def test_verdicts_on_undeclared_schedules_do_not_count():
    # daily_revenue does not declare schema_evolution; benign controls are not hazards
    verdicts = table(graded(A, 0, schema_evolution="FAIL", in_order_stream="FAIL"))
    for include_loud in (False, True):
        s = only(arm_summaries([cell(A, 0)], verdicts, TASKS, include_loud=include_loud))
        assert (s.snapshot_pass, s.gap, s.error, s.all_in) == (1.0, 0.0, 0.0, 0.0)


def test_schema_evolution_still_counts_in_error_and_all_in():
    cells = [cell(B, 0), cell(B, 1)]
    verdicts = table(graded(B, 0, schema_evolution="ERROR"), graded(B, 1))
    s = only(arm_summaries(cells, verdicts, TASKS))
    assert s.error == pytest.approx(1 / 2)
    assert s.all_in == pytest.approx(1 / 2)
