"""Rates over tasks from stored verdicts. Every rate is a mean over tasks of the per-task rate.

Definitions (per cell; a task's rate is the share of its cells, and an arm's rate the mean over
the tasks where the rate is defined):
- snapshot_pass: the cell's artifact PASSes the snapshot (no artifact counts as not passing);
- gap: among cells that pass the snapshot and have no ERROR on a declared hazard, the share with
  at least one FAIL on a declared hazard (schema evolution excluded from both unless asked);
- error: the share of cells with an ERROR on the snapshot or a declared hazard;
- all_in: the share of cells with no artifact, a snapshot that does not pass, or a FAIL or ERROR
  on a declared hazard.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pyarrow as pa

from arrivalbench.spec import Task
from arrivalbench.store import Cell

LOUD = ("schema_evolution",)


@dataclass(frozen=True)
class ArmSummary:
    arm: str
    tasks: int
    cells: int
    snapshot_pass: float | None
    gap: float | None
    error: float | None
    all_in: float | None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def arm_summaries(
    cells: list[Cell], verdicts: pa.Table, tasks: dict[str, Task], include_loud: bool = False
) -> list[ArmSummary]:
    by_cell: dict[tuple[str, str, int], dict[str, str]] = defaultdict(dict)
    for row in verdicts.select(["arm", "task", "sample", "schedule", "verdict"]).to_pylist():
        by_cell[(row["arm"], row["task"], row["sample"])][row["schedule"]] = row["verdict"]
    per_task: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for cell in cells:
        task = tasks[cell.task]
        declared = list(task.spec.hazards)
        silent = [h for h in declared if include_loud or h not in LOUD]  # the gap's hazard set
        v = by_cell.get(cell.key, {})
        rates = per_task[cell.arm][cell.task]
        snap = cell.artifact_sha256 is not None and v.get("snapshot") == "PASS"
        errors = [h for h in declared if v.get(h) == "ERROR"]
        fails = [h for h in declared if v.get(h) == "FAIL"]
        rates["snapshot_pass"].append(float(snap))
        if snap and not any(v.get(h) == "ERROR" for h in silent):
            rates["gap"].append(float(any(v.get(h) == "FAIL" for h in silent)))
        rates["error"].append(float(bool(errors) or v.get("snapshot") == "ERROR"))
        rates["all_in"].append(float(not snap or bool(errors) or bool(fails)))
    out = []
    for arm in sorted(per_task):
        tasks_of_arm = per_task[arm]
        metric = {
            name: _mean([_mean(r[name]) for r in tasks_of_arm.values() if r[name]])  # type: ignore[misc]
            for name in ("snapshot_pass", "gap", "error", "all_in")
        }
        out.append(
            ArmSummary(
                arm=arm,
                tasks=len(tasks_of_arm),
                cells=sum(len(r["snapshot_pass"]) for r in tasks_of_arm.values()),
                **metric,
            )
        )
    return out
