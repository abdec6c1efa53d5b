"""analysis/counts.py: cells and verdicts per arm, counted by hand."""

from __future__ import annotations

from arrivalbench.analysis.counts import arm_counts, extremes
from arrivalbench.analysis.outcomes import CellOutcome


def cell(sample: int, verdicts: dict[str, str], classes=None, reason=None) -> CellOutcome:
    return CellOutcome(
        arm="a", task="t", sample=sample, scenario="t", hazards=("late_arrival",),
        verdicts=verdicts, error_classes=classes or {}, artifact=reason is None,
        no_artifact_reason=reason, snapshot_by_turn=(),
    )  # fmt: skip


def test_counts_cells_scripts_verdicts_and_constraint_violations():
    cells = [
        cell(0, {"snapshot": "PASS", "late_arrival": "FAIL", "single_batch": "PASS"}),
        cell(
            1,
            {"snapshot": "PASS", "late_arrival": "ERROR", "single_batch": "ERROR"},
            {"late_arrival": "constraint_violation", "single_batch": "sql_error"},
        ),
        cell(2, {}, reason="refusal"),
        cell(3, {}, reason="refusal"),
        cell(4, {}, reason="truncated"),
    ]
    c = arm_counts(cells)["a"]
    assert (c.cells, c.scripts) == (5, 2)
    assert c.no_script == {"refusal": 2, "truncated": 1}
    # 3 + 3 verdicts; 4 PASS or FAIL, 2 ERROR, one of them a key refusing a row
    assert (c.verdicts, c.gradeable, c.errors, c.constraint_violations) == (6, 4, 2, 1)


def test_extremes_keep_ties_and_skip_undefined_rates():
    rates = {"late_arrival": 0.5, "out_of_order": 0.9, "backfill": 0.5, "crash_retry": None}
    assert extremes(rates) == ((("late_arrival", "backfill"), 0.5), (("out_of_order",), 0.9))
    assert extremes({"late_arrival": None}) is None


def test_first_turn_snapshot_pass_pooled_over_cells_not_averaged_over_tasks():
    """t1 has one cell, failing turn 1 and repaired; t2 three cells passing at once; a reference
    cell without turns is in no denominator. Pooled 3/4 on turn 1 (the mean over tasks would be
    (0 + 1) / 2 = 50%), 4/4 finally."""
    from dataclasses import replace

    from arrivalbench.analysis.counts import turn_counts
    from arrivalbench.analysis.rates import rate

    base = cell(0, {"snapshot": "PASS"})
    cells = [
        replace(base, task="t1", snapshot_by_turn=("FAIL", "PASS")),
        *(replace(base, task="t2", sample=i, snapshot_by_turn=("PASS",)) for i in range(3)),
        replace(base, task="t3"),
    ]
    t = turn_counts(cells)["a"]
    assert (t.cells, t.first, t.final) == (4, 3, 4)
    assert t.first_rate == 0.75 and t.final_rate == 1.0
    assert rate(cells, "first_turn_snapshot_pass")["a"] == 0.5
