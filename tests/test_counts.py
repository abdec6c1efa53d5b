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
