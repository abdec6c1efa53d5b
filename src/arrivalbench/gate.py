"""The admissibility gate: a task enters the suite only if its gold, controls, hazards and text hold up.

- the gold passes the snapshot, both benign controls and every declared hazard;
- every negative control passes the snapshot and both benign controls and fails exactly its
  declared hazards, silently (FAIL, not ERROR);
- every declared hazard perturbs that task's delivery;
- the description carries no hazard vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from arrivalbench.errors import ArrivalBenchError
from arrivalbench.grade import Grader
from arrivalbench.leak import scan
from arrivalbench.schedules import BENIGN, default_schedules
from arrivalbench.spec import Task

GOLD = "gold.sql"


@dataclass(frozen=True)
class Violation:
    task: str
    artifact: str | None
    schedule: str | None
    message: str

    def __str__(self) -> str:
        where = " ".join(x for x in (self.artifact, self.schedule) if x)
        return f"{self.task}: {where + ': ' if where else ''}{self.message}"


@dataclass
class TaskGate:
    task: Task
    schedules: list[str]
    verdicts: dict[str, dict[str, str]] = field(default_factory=dict)
    """artifact -> schedule -> PASS | FAIL | ERROR"""
    violations: list[Violation] = field(default_factory=list)

    @property
    def admitted(self) -> bool:
        return not self.violations


def _describe(entry: dict[str, object]) -> str:
    if entry["verdict"] == "ERROR":
        return f"ERROR {entry['error_class']} at batch {entry['batch']} statement {entry['statement']}: {entry['message']}"
    if entry["verdict"] == "FAIL":
        counts = {k: v for k, v in entry["diff"]["counts"].items() if v}  # type: ignore[index]
        return f"FAIL {counts}"
    return "PASS"


def gate_task(task: Task, grader: Grader) -> TaskGate:
    """Run every check on one task; violations are collected, never raised."""
    schedules = default_schedules(task)
    result = TaskGate(task=task, schedules=schedules)

    def violate(message: str, artifact: str | None = None, schedule: str | None = None) -> None:
        result.violations.append(Violation(task.id, artifact, schedule, message))

    for leak in scan(task.spec.description):
        violate(f"description line {leak.line} uses hazard vocabulary '{leak.term}': {leak.context!r}")
    if not task.spec.controls:
        violate("has no negative control; add at least one under controls/ and declare what it fails")
    for hazard in task.spec.hazards:
        schedule, _ = grader.schedule(task, hazard)
        if not schedule.bites():
            violate(f"declared hazard does not perturb delivery ({dict(schedule.perturbation)})", schedule=hazard)

    artifacts = [(GOLD, task.gold_sql, set())] + [
        (c.file, task.controls[c.file], set(c.fails)) for c in task.spec.controls
    ]
    for name, script, fails in artifacts:
        try:
            record, _ = grader.grade(task, script, schedules, where=str(task.folder / name))
        except ArrivalBenchError as exc:
            violate(str(exc), artifact=name)
            continue
        verdicts = record["verdicts"]
        result.verdicts[name] = {s: v["verdict"] for s, v in verdicts.items()}
        for schedule_name, entry in verdicts.items():
            verdict = entry["verdict"]
            if schedule_name in fails:
                if verdict == "ERROR":
                    violate(f"must fail silently but raised: {_describe(entry)}", name, schedule_name)
                elif verdict == "PASS":
                    violate("declared to fail but passes; drop it from 'fails' or fix the control", name, schedule_name)
            elif verdict != "PASS":
                role = "gold" if name == GOLD else "control"
                kind = "benign control" if schedule_name in BENIGN else "schedule"
                hint = "" if name == GOLD else " (declare it in 'fails' if intended)"
                violate(f"{role} must pass this {kind}: {_describe(entry)}{hint}", name, schedule_name)
    return result


def gate_suite(
    tasks: Iterable[Task], grader: Grader, on_task: Callable[[TaskGate], None] | None = None
) -> list[TaskGate]:
    results = []
    for task in tasks:
        outcome = gate_task(task, grader)
        results.append(outcome)
        if on_task:
            on_task(outcome)
    return results
