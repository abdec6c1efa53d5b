"""Graded cells as outcomes: each (arm, task, sample) with its snapshot and hazard verdicts and
the error class of each, joined from a run's cells and verdict rows (analysis.stats re-exports it).
"""

from __future__ import annotations

import difflib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from arrivalbench.engines import REGISTRY
from arrivalbench.errors import UsageError
from arrivalbench.spec import Task
from arrivalbench.store import Cell, RunDir

SNAPSHOT = "snapshot"


def _unknown(kind: str, name: str, known: Iterable[str]) -> UsageError:
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"Did you mean '{close[0]}'?" if close else f"Known: {', '.join(known)}."
    return UsageError(f"Unknown {kind} '{name}'. {hint}")


# -- cells ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellOutcome:
    """One cell with everything a metric needs: its verdicts by schedule and its task's declarations."""

    arm: str
    task: str
    sample: int
    scenario: str
    hazards: tuple[str, ...]
    verdicts: Mapping[str, str]
    error_classes: Mapping[str, str]
    artifact: bool
    no_artifact_reason: str | None
    snapshot_by_turn: tuple[str, ...]
    artifact_sha256: str | None = None  # the script, for guards.py to look up its idioms
    severities: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """schedule -> the severity its FAIL's diff records (severity.py); absent for a FAIL graded
    before severity (record format 1)."""

    @property
    def graded(self) -> bool:
        """False for a cell holding an artifact that has no verdict yet: it is in no denominator."""
        return not self.artifact or bool(self.verdicts)

    @property
    def snapshot_pass(self) -> bool:
        return self.artifact and self.verdicts.get(SNAPSHOT) == "PASS"


class IncompleteCellError(UsageError):
    """A graded cell without a verdict on a schedule its task declares."""


def outcomes(cells: list[Cell], verdicts: pa.Table, tasks: dict[str, Task]) -> list[CellOutcome]:
    """Join cells with their verdict rows and their task's hazards and scenario.

    Verdict rows of a cell without an artifact are ignored: there is nothing they could describe.
    A cell with verdicts must have one on the snapshot and on every hazard its task declares
    (IncompleteCellError otherwise): a rate never counts a cell on hazards it was not graded on.
    A cell with none is ungraded and in no denominator.
    """
    needed = ["arm", "task", "sample", "schedule", "verdict"]
    missing = [c for c in needed if c not in verdicts.column_names]
    if missing:
        raise UsageError(
            f"verdict table lacks columns {missing}; pass RunDir.verdicts() or rows with {needed}."
        )
    columns = needed + [c for c in ("error_class", "record") if c in verdicts.column_names]
    by_cell: dict[tuple[str, str, int], dict[str, str]] = defaultdict(dict)
    classes: dict[tuple[str, str, int], dict[str, str]] = defaultdict(dict)
    severities: dict[tuple[str, str, int], dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for row in verdicts.select(columns).to_pylist():
        key = (row["arm"], row["task"], row["sample"])
        by_cell[key][row["schedule"]] = row["verdict"]
        if row["verdict"] == "ERROR":
            classes[key][row["schedule"]] = error_class(row.get("error_class"), row.get("record"))
        elif row["verdict"] == "FAIL" and row.get("record"):
            measured = _severity(row["record"])
            if measured is not None:
                severities[key][row["schedule"]] = measured
    out = []
    for cell in cells:
        task = tasks.get(cell.task)
        if task is None:
            raise UsageError(
                f"cell {cell.arm}/{cell.task}/{cell.sample}: task '{cell.task}' is not among the "
                f"{len(tasks)} tasks given; add it to the tasks mapping."
            )
        has_artifact = cell.artifact_sha256 is not None
        seen = by_cell.get(cell.key, {})
        lacking = [s for s in (SNAPSHOT, *task.spec.hazards) if s not in seen]
        if has_artifact and seen and lacking:
            raise IncompleteCellError(
                f"cell {cell.arm}/{cell.task}/{cell.sample}: graded without a verdict on "
                f"{', '.join(lacking)}, which its task declares; a rate over it would count "
                "hazards it never faced: grade the run again (arrivalbench grade-run grades "
                "every declared schedule)."
            )
        out.append(
            CellOutcome(
                arm=cell.arm,
                task=cell.task,
                sample=cell.sample,
                scenario=task.spec.scenario,
                hazards=tuple(task.spec.hazards),
                verdicts=by_cell.get(cell.key, {}) if has_artifact else {},
                error_classes=classes.get(cell.key, {}) if has_artifact else {},
                artifact=has_artifact,
                no_artifact_reason=None if has_artifact else (cell.no_artifact_reason or "unknown"),
                snapshot_by_turn=tuple(cell.snapshot_by_turn),
                artifact_sha256=cell.artifact_sha256,
                severities=severities.get(cell.key, {}) if has_artifact else {},
            )
        )
    return out


def _severity(record: str) -> Mapping[str, Any] | None:
    """The severity a FAIL's stored record carries; None for one graded before severity."""
    try:
        found = (json.loads(record).get("diff") or {}).get("severity")
    except (ValueError, AttributeError):
        return None
    return found if isinstance(found, Mapping) else None


CONSTRAINT = "constraint_violation"
CONSTRAINT_MESSAGES = tuple(m for e in REGISTRY.values() for m in e.constraint_errors)
"""How each engine words a SQL error raised by a constraint (its `EngineInfo` declares it)."""


def error_class(stored: str | None, record: str | None) -> str:
    """The error class a report shows: a SQL error raised by a key or NOT NULL constraint (the
    engine's "Constraint Error", SQLite's "constraint failed", PostgreSQL's "violates ...
    constraint") is split out of sql_error as constraint_violation, because it is a guard firing
    (a declared key refusing a duplicate), not a script that cannot run."""
    cls = stored or "unknown"
    if cls == "sql_error" and record:
        try:
            message = str(json.loads(record).get("message") or "")
        except (ValueError, AttributeError):
            message = ""
        if any(marker in message for marker in CONSTRAINT_MESSAGES):
            return CONSTRAINT
    return cls


def run_outcomes(run: RunDir, tasks: dict[str, Task] | None = None) -> list[CellOutcome]:
    """outcomes() for a stored run; tasks default to the suite path's task of each id."""
    cells = run.cells()
    if tasks is None:
        tasks = {task_id: run.task(task_id) for task_id in sorted({c.task for c in cells})}
    return outcomes(cells, run.verdicts(), tasks)
