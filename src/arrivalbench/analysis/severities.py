"""How much an arm's silent failures cost: the severity of each FAIL (severity.py), summarised
per arm beside the binary gap, never replacing it.

A silent failure is a FAIL on a hazard its task declares, in a cell that passes the snapshot (the
FAILs behind the gap). Each counts once per (cell, hazard), pooled over the arm's cells: severity
describes failures, not tasks, so it is not averaged over tasks. A FAIL's total error is the
largest relative error of a measure column's total; a FAIL mis-states a total when some measure
column's total is off by more than 1% of the expected total (or the expected total is 0 and the
actual one is not). FAILs graded before severity (record format 1) are counted as unmeasured.
Percentiles are numpy's default (linear interpolation between order statistics).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from arrivalbench.analysis.outcomes import CellOutcome

MISSTATED = 0.01
"""A total off by more than this share of the expected total is mis-stated."""


@dataclass(frozen=True)
class SilentFailure:
    """One silent FAIL: its cell, hazard and the severity its diff records (None: format 1)."""

    arm: str
    task: str
    sample: int
    hazard: str
    severity: Mapping[str, Any] | None

    @property
    def cell(self) -> tuple[str, str, int]:
        return (self.arm, self.task, self.sample)


def silent_failures(outcomes: Iterable[CellOutcome]) -> list[SilentFailure]:
    """Every FAIL on a declared hazard of a snapshot-passing cell, in the outcomes' order."""
    return [
        SilentFailure(o.arm, o.task, o.sample, h, o.severities.get(h))
        for o in outcomes
        if o.snapshot_pass
        for h in o.hazards
        if o.verdicts.get(h) == "FAIL"
    ]


def total_error(severity: Mapping[str, Any]) -> float | None:
    """The largest finite relative error of a measure column's total; None without one."""
    found = [
        float(m["total_error"])
        for m in (severity.get("measures") or {}).values()
        if isinstance(m.get("total_error"), int | float) and math.isfinite(m["total_error"])
    ]
    return max(found) if found else None


def misstates_total(severity: Mapping[str, Any], threshold: float = MISSTATED) -> bool:
    """Some measure column's total is off by more than `threshold` of the expected one (or the
    expected total is 0 and the actual one is not)."""
    for m in (severity.get("measures") or {}).values():
        error = m.get("total_error")
        if isinstance(error, int | float):
            if error > threshold:
                return True
        elif m.get("expected_total") == 0 and m.get("actual_total") not in (0, 0.0, None):
            return True
    return False


@dataclass(frozen=True)
class SeveritySummary:
    """One arm's silent failures: how many, how many carry a severity, and its distribution."""

    arm: str
    fails: int
    measured: int
    wrong_rows_median: float | None
    wrong_rows_p90: float | None
    total_error_median: float | None
    total_error_p90: float | None
    misstated: int  # measured FAILs mis-stating a total by more than MISSTATED
    cells: tuple[tuple[str, str, int], ...]  # the cells of the measured FAILs


def _percentile(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def severity_summaries(outcomes: Iterable[CellOutcome]) -> dict[str, SeveritySummary]:
    """arm -> the summary of its silent failures (module docstring), for arms with at least one."""
    by_arm: dict[str, list[SilentFailure]] = {}
    for failure in silent_failures(outcomes):
        by_arm.setdefault(failure.arm, []).append(failure)
    out = {}
    for arm, failures in sorted(by_arm.items()):
        measured = [f for f in failures if f.severity is not None]
        wrong = [float(f.severity["wrong_rows_share"]) for f in measured]  # type: ignore[index]
        totals = [t for f in measured if (t := total_error(f.severity or {})) is not None]
        out[arm] = SeveritySummary(
            arm=arm,
            fails=len(failures),
            measured=len(measured),
            wrong_rows_median=_percentile(wrong, 50),
            wrong_rows_p90=_percentile(wrong, 90),
            total_error_median=_percentile(totals, 50),
            total_error_p90=_percentile(totals, 90),
            misstated=sum(misstates_total(f.severity or {}) for f in measured),
            cells=tuple(dict.fromkeys(f.cell for f in measured)),
        )
    return out
