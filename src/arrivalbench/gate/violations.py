"""What the gate reports: one violation per broken rule, and violations grouped by their cause.

A single mistake (a source column the scripts name wrongly) breaks every artifact on every schedule
at every seed; listing each would bury it, so the report shows one line per cause with a count and
where it was seen, and a cause seen once exactly as its violation reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Violation:
    task: str
    artifact: str | None
    schedule: str | None
    message: str
    seed: int | None = None
    """The gate seed it was found at; None for a check that does not depend on the seed."""
    cause: str | None = field(default=None, compare=False)
    """What it shares with other violations of its root cause (an engine error's class and text,
    without the statement it hit); None when the message itself is the cause."""

    def __str__(self) -> str:
        where = " ".join(x for x in (self.artifact, self.schedule) if x)
        at = f" (seed {self.seed})" if self.seed is not None else ""
        return f"{self.task}: {where + ': ' if where else ''}{self.message}{at}"


@dataclass(frozen=True)
class ViolationGroup:
    """The violations of one task with one cause, in the order they were found."""

    cause: str
    violations: tuple[Violation, ...]

    def where(self) -> str:
        """Each artifact with the schedules and seeds it was seen at, in the order found."""
        seen: dict[str, tuple[dict[str, None], dict[int, None]]] = {}
        for v in self.violations:
            schedules, seeds = seen.setdefault(v.artifact or "task", ({}, {}))
            if v.schedule:
                schedules[v.schedule] = None
            if v.seed is not None:
                seeds[v.seed] = None
        parts = []
        for artifact, (schedules, seeds) in seen.items():
            on = f" on {', '.join(schedules)}" if schedules else ""
            at = f" at seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"
            parts.append(f"{artifact}{on}{at if seeds else ''}")
        return "; ".join(parts)

    def __str__(self) -> str:
        first = self.violations[0]
        if len(self.violations) == 1:
            return str(first)
        return f"{first.task}: {len(self.violations)} violations, {self.where()}: {self.cause}"


def group_violations(violations: Iterable[Violation]) -> list[ViolationGroup]:
    """Violations grouped by (task, cause), each group where its first violation was found."""
    groups: dict[tuple[str, str], list[Violation]] = {}
    for v in violations:
        groups.setdefault((v.task, v.cause or v.message), []).append(v)
    return [ViolationGroup(cause, tuple(vs)) for (_, cause), vs in groups.items()]
