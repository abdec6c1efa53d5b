"""Minutes per task of a human study: how long participants took, from the run's `config.human`.

`arrivalbench human` records, per finished participant, the seconds from the moment a task was
shown to the end of its cell (test runs included, summed over sittings). These are descriptions
of effort, not rates: the median and range over participants, per task, never averaged across
tasks into one number.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TaskMinutes:
    task: str
    participants: int
    median: float
    low: float
    high: float


def minutes_per_task(human: Mapping[str, Any] | None) -> list[TaskMinutes]:
    """Per task (in the study's order), the median and range of minutes over participants."""
    if not human:
        return []
    order = list(human.get("plan", {}).get("tasks", []))
    by_task: dict[str, list[float]] = {}
    for person in human.get("participants", []):
        for task, seconds in person.get("seconds", {}).items():
            by_task.setdefault(task, []).append(float(seconds) / 60)
    tasks = [t for t in order if t in by_task] + sorted(t for t in by_task if t not in order)
    return [
        TaskMinutes(
            task=t,
            participants=len(by_task[t]),
            median=statistics.median(by_task[t]),
            low=min(by_task[t]),
            high=max(by_task[t]),
        )
        for t in tasks
    ]
