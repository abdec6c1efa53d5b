"""One base exception for everything a user can get wrong, so the CLI can print one line and exit 2."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ArrivalBenchError(Exception):
    """A problem the user can fix: the message says what, where, and how."""


class SpecError(ArrivalBenchError):
    """A task folder or task.yaml that does not follow the spec."""


class UnknownNameError(ArrivalBenchError):
    """A task, schedule, generator or engine name that does not exist."""

    def __init__(self, kind: str, name: str, known: Iterable[str], hint: str = "") -> None:
        known = sorted(known)
        close = difflib.get_close_matches(name, known, n=1)
        suggestion = f" Did you mean '{close[0]}'?" if close else f" Known: {', '.join(known)}."
        super().__init__(f"Unknown {kind} '{name}'.{suggestion}{hint}")


class UsageError(ArrivalBenchError):
    """An option value that cannot work (a non-positive timeout, an unreadable memory size)."""


class PipelineInputError(ArrivalBenchError):
    """A pipeline file that cannot be graded at all (missing, not UTF-8, empty)."""


class ScheduleError(ArrivalBenchError):
    """A schedule file that cannot be replayed against this task and log."""


class OracleError(ArrivalBenchError):
    """The task's oracle did not produce the declared target: a defect of the task, not the pipeline."""


class CheckInputError(ArrivalBenchError):
    """A log, column, pipeline or dbt project that `arrivalbench check` cannot check."""
