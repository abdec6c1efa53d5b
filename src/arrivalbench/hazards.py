"""The schedule vocabulary, once: each named schedule's role in grading, as one registry.

Every schedule a task is graded on is one of nine: the snapshot the agent sees, two benign
controls, and six hazards in three groups (ordering, idempotency, and the loud schema evolution).
A loud hazard is one a pipeline may notice by raising, so an ERROR under it is a failure and not a
defect; the silent hazards are the five others, and their rates are never averaged with a loud
one. Everything that names a group (spec, schedules, gate, statistics, report, check) derives it
from `REGISTRY` here; the builders of the deliveries live in schedules.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Group = Literal["snapshot", "benign", "ordering", "idempotency", "schema"]


@dataclass(frozen=True)
class Hazard:
    """One named schedule's role: its group and the capabilities grading relies on."""

    name: str
    group: Group
    loud: bool = False
    """A pipeline may notice it by raising: an ERROR under it earns it, and is no defect."""
    needs_evolving_column: bool = False
    """It perturbs a column that is NULL early and appears mid-stream: a log without one gives
    it nothing to change (check mode skips it; a task declares it exactly when it has one)."""

    @property
    def is_hazard(self) -> bool:
        """A perturbation a task may declare (not the snapshot or a benign control)."""
        return self.group not in ("snapshot", "benign")

    @property
    def silent(self) -> bool:
        """A hazard a wrong pipeline gets through without raising: a FAIL, never an ERROR."""
        return self.is_hazard and not self.loud


REGISTRY: dict[str, Hazard] = {
    h.name: h
    for h in (
        Hazard("snapshot", "snapshot"),
        Hazard("single_batch", "benign"),
        Hazard("in_order_stream", "benign"),
        Hazard("late_arrival", "ordering"),
        Hazard("out_of_order", "ordering"),
        Hazard("duplicate_delivery", "idempotency"),
        Hazard("crash_retry", "idempotency"),
        Hazard("backfill", "idempotency"),
        Hazard("schema_evolution", "schema", loud=True, needs_evolving_column=True),
    )
}
"""Every schedule name, in the order tables and default schedule lists show them."""


def _named(keep: Callable[[Hazard], bool]) -> tuple[str, ...]:
    return tuple(h.name for h in REGISTRY.values() if keep(h))


SCHEDULE_NAMES: tuple[str, ...] = tuple(REGISTRY)
BENIGN: tuple[str, ...] = _named(lambda h: h.group == "benign")
HAZARDS: tuple[str, ...] = _named(lambda h: h.is_hazard)
ORDERING: tuple[str, ...] = _named(lambda h: h.group == "ordering")
IDEMPOTENCY: tuple[str, ...] = _named(lambda h: h.group == "idempotency")
LOUD: tuple[str, ...] = _named(lambda h: h.loud)
"""Hazards a pipeline may notice by raising: an ERROR under them is a failure, not a defect."""
SILENT: tuple[str, ...] = _named(lambda h: h.silent)
"""The five hazards that can fail silently."""


def is_hazard(name: str) -> bool:
    """Whether `name` is a declarable hazard (False for the snapshot, a benign control, or an
    unknown name)."""
    hazard = REGISTRY.get(name)
    return hazard is not None and hazard.is_hazard
