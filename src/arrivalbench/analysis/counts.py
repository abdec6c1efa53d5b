"""The counts a paper states in words, per arm: cells, cells without a script by reason, the
verdicts those scripts received, how many of them are gradeable (PASS or FAIL: the final table was
compared) and how many are constraint violations; and the weakest and strongest hazard of an arm.

Counts are over cells and verdicts, never averaged over tasks: they say how much evidence stands
behind the rates, not what the rates are. A verdict is one (cell, schedule) row of a cell holding a
script, over every schedule it was graded on (snapshot, benign schedules, declared hazards).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from arrivalbench.analysis.outcomes import CONSTRAINT, CellOutcome


@dataclass(frozen=True)
class ArmCounts:
    """One arm's cells and verdicts, counted."""

    cells: int
    scripts: int  # cells holding a script (an artifact)
    no_script: Mapping[str, int]  # reason -> cells without a script
    verdicts: int  # verdict rows of the cells holding a script
    gradeable: int  # of those, PASS or FAIL
    errors: int  # of those, ERROR
    constraint_violations: int  # ERRORs raised by a key or NOT NULL constraint (error_class)


def arm_counts(outcomes: Iterable[CellOutcome]) -> dict[str, ArmCounts]:
    """arm -> its counts, in arm name order."""
    found: dict[str, Counter[str]] = {}
    reasons: dict[str, Counter[str]] = {}
    for o in outcomes:
        c = found.setdefault(o.arm, Counter())
        reasons.setdefault(o.arm, Counter())
        c["cells"] += 1
        if not o.artifact:
            reasons[o.arm][o.no_artifact_reason or "unknown"] += 1
            continue
        c["scripts"] += 1
        for schedule, verdict in o.verdicts.items():
            c["verdicts"] += 1
            c["gradeable"] += verdict in ("PASS", "FAIL")
            c["errors"] += verdict == "ERROR"
            c["constraint"] += verdict == "ERROR" and o.error_classes.get(schedule) == CONSTRAINT
    return {
        arm: ArmCounts(
            cells=c["cells"],
            scripts=c["scripts"],
            no_script=dict(sorted(reasons[arm].items())),
            verdicts=c["verdicts"],
            gradeable=c["gradeable"],
            errors=c["errors"],
            constraint_violations=c["constraint"],
        )
        for arm, c in sorted(found.items())
    }


def extremes(
    rates: Mapping[str, float | None],
) -> tuple[tuple[tuple[str, ...], float], tuple[tuple[str, ...], float]] | None:
    """((weakest hazards, rate), (strongest hazards, rate)) among the defined rates, ties kept
    together in the mapping's order; None when no rate is defined."""
    defined = {h: r for h, r in rates.items() if r is not None}
    if not defined:
        return None
    low, high = min(defined.values()), max(defined.values())
    return (
        (tuple(h for h, r in defined.items() if r == low), low),
        (tuple(h for h, r in defined.items() if r == high), high),
    )


@dataclass(frozen=True)
class TurnCounts:
    """One arm's snapshot results by turn, pooled over the cells that record them."""

    cells: int  # cells with a repair-loop history (snapshot_by_turn not empty)
    first: int  # of those, PASS on turn 1
    final: int  # of those, PASS on the last turn

    @property
    def first_rate(self) -> float | None:
        return self.first / self.cells if self.cells else None

    @property
    def final_rate(self) -> float | None:
        return self.final / self.cells if self.cells else None


def turn_counts(outcomes: Iterable[CellOutcome]) -> dict[str, TurnCounts]:
    """arm -> first-turn and final snapshot passes pooled over its cells with turns (an arm with
    none has cells 0)."""
    found: dict[str, list[int]] = {}
    for o in outcomes:
        c = found.setdefault(o.arm, [0, 0, 0])
        if o.snapshot_by_turn:
            c[0] += 1
            c[1] += o.snapshot_by_turn[0] == "PASS"
            c[2] += o.snapshot_by_turn[-1] == "PASS"
    return {arm: TurnCounts(*c) for arm, c in sorted(found.items())}
