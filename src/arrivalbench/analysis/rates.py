"""Per-cell metrics and the rates over them: a cell maps to 1.0, 0.0 or None (not in the
denominator); a task's rate is the mean over its usable cells, an arm's the mean over its tasks.
Also the error-class and missing-artifact shares, and the summary command's table. Definitions:
docs/metrics.md.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from arrivalbench.analysis.outcomes import SNAPSHOT, CellOutcome, _unknown, outcomes
from arrivalbench.hazards import BENIGN, HAZARDS, LOUD, SILENT
from arrivalbench.spec import Task
from arrivalbench.store import Cell

# -- per-cell metrics ---------------------------------------------------------------------------


def _hazard_set(o: CellOutcome, drop_loud: bool) -> tuple[str, ...]:
    return tuple(h for h in o.hazards if not (drop_loud and h in LOUD))


def _snapshot_pass(o: CellOutcome) -> float | None:
    return float(o.snapshot_pass) if o.graded else None


def _gap(drop_loud: bool, drop: tuple[str, ...] = ()) -> Callable[[CellOutcome], float | None]:
    def gap(o: CellOutcome) -> float | None:
        if not o.graded or not o.snapshot_pass:
            return None
        seen = [o.verdicts.get(h) for h in _hazard_set(o, drop_loud) if h not in drop]
        if drop and not seen:  # a task declaring only the dropped hazards faces none
            return None
        return None if "ERROR" in seen else float("FAIL" in seen)

    return gap


def _gap_benign(o: CellOutcome) -> float | None:
    """The gap over cells that also pass both benign schedules (an ordinary incrementality bug
    out of the way), so what is left is temporal."""
    if any(o.verdicts.get(s) != "PASS" for s in BENIGN):
        return None
    return _gap(drop_loud=False)(o)


def _gap_all_five(o: CellOutcome) -> float | None:
    """The gap over tasks declaring all five silent hazards, so every task faces the same set."""
    if not set(SILENT) <= set(o.hazards):
        return None
    return _gap(drop_loud=False)(o)


def _error(drop_loud: bool) -> Callable[[CellOutcome], float | None]:
    def error(o: CellOutcome) -> float | None:
        if not o.graded:
            return None
        schedules = (SNAPSHOT, *_hazard_set(o, drop_loud))
        return float(not o.artifact or any(o.verdicts.get(s) == "ERROR" for s in schedules))

    return error


def _all_in(drop_loud: bool) -> Callable[[CellOutcome], float | None]:
    def all_in(o: CellOutcome) -> float | None:
        if not o.graded:
            return None
        broken = any(o.verdicts.get(h) in ("FAIL", "ERROR") for h in _hazard_set(o, drop_loud))
        return float(not o.snapshot_pass or broken)

    return all_in


def _temporal_pass(schedule: str) -> Callable[[CellOutcome], float | None]:
    benign = schedule in BENIGN

    def temporal_pass(o: CellOutcome) -> float | None:
        # A hazard is judged on every cell with an artifact (DESIGN.md, section 4); the benign
        # controls, as in the paper's appendix, on the cells a snapshot grader would certify.
        if (
            not (benign or schedule in o.hazards)
            or not o.artifact
            or (benign and not o.snapshot_pass)
        ):
            return None
        verdict = o.verdicts.get(schedule)
        return float(verdict == "PASS") if verdict in ("PASS", "FAIL") else None

    return temporal_pass


def _turn(index: int) -> Callable[[CellOutcome], float | None]:
    def snapshot_at_turn(o: CellOutcome) -> float | None:
        return float(o.snapshot_by_turn[index] == "PASS") if o.snapshot_by_turn else None

    return snapshot_at_turn


# Metric name -> per-cell value: 1.0, 0.0, or None when the cell is not in the denominator.
METRICS: dict[str, Callable[[CellOutcome], float | None]] = {
    "snapshot_pass": _snapshot_pass,
    "gap": _gap(drop_loud=False),
    "gap_drop_loud": _gap(drop_loud=True),
    "gap_benign": _gap_benign,
    "gap_drop_duplicate": _gap(drop_loud=False, drop=("duplicate_delivery",)),
    "gap_all_five": _gap_all_five,
    "error": _error(drop_loud=False),
    "error_drop_loud": _error(drop_loud=True),
    "all_in": _all_in(drop_loud=False),
    "all_in_drop_loud": _all_in(drop_loud=True),
    "first_turn_snapshot_pass": _turn(0),
    "final_snapshot_pass": _turn(-1),
}
METRICS.update({f"pass:{s}": _temporal_pass(s) for s in (*HAZARDS, *BENIGN)})

FAILURE_METRICS: frozenset[str] = frozenset(
    {
        "gap",
        "gap_drop_loud",
        "gap_benign",
        "gap_drop_duplicate",
        "gap_all_five",
        "error",
        "error_drop_loud",
        "all_in",
        "all_in_drop_loud",
    }
)
"""Metrics where 1.0 marks a failure; in every other metric 0.0 does."""


def _metric(name: str) -> Callable[[CellOutcome], float | None]:
    try:
        return METRICS[name]
    except KeyError:
        raise _unknown("metric", name, METRICS) from None


# -- rates ------------------------------------------------------------------------------------


def _cell_values(outcomes: Iterable[CellOutcome], metric: str) -> dict[str, dict[str, list[float]]]:
    """arm -> task -> usable cell values; every arm seen appears, even with no usable cell."""
    fn = _metric(metric)
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        cells = values[o.arm]
        v = fn(o)
        if v is not None:
            cells[o.task].append(v)
    return values


def task_rates(outcomes: Iterable[CellOutcome], metric: str) -> dict[str, dict[str, float]]:
    """arm -> task -> mean of the metric over that task's usable cells; tasks with none are absent."""
    values = _cell_values(outcomes, metric)
    return {
        arm: {task: sum(v) / len(v) for task, v in sorted(values[arm].items())}
        for arm in sorted(values)
    }


def rate(outcomes: Iterable[CellOutcome], metric: str) -> dict[str, float | None]:
    """arm -> mean over tasks of the per-task rate (None when no task of the arm is usable)."""
    return {
        arm: _mean(list(per_task.values()))
        for arm, per_task in task_rates(outcomes, metric).items()
    }


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


# -- errors and missing artifacts -------------------------------------------------------------------


def _crash_kinds(o: CellOutcome) -> set[str]:
    if not o.artifact:
        return {f"no_artifact:{o.no_artifact_reason}"}
    return {
        o.error_classes.get(s, "unknown")
        for s in (SNAPSHOT, *o.hazards)
        if o.verdicts.get(s) == "ERROR"
    }


def crash_rates(outcomes: Iterable[CellOutcome]) -> dict[str, dict[str, float]]:
    """arm -> error class (and 'no_artifact:<reason>') -> mean over tasks of the share of cells showing it.

    The schedules looked at are those of the `error` metric (snapshot and declared hazards); a cell
    crashing in two classes counts in both, so the classes can sum to more than the error rate.
    """
    counts: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    cells: dict[str, Counter[str]] = defaultdict(Counter)
    for o in outcomes:
        if not o.graded:
            continue
        cells[o.arm][o.task] += 1
        counts[o.arm][o.task].update(_crash_kinds(o))
    out = {}
    for arm in sorted(cells):
        tasks = cells[arm]
        kinds = sorted({k for c in counts[arm].values() for k in c})
        out[arm] = {k: sum(counts[arm][t][k] / tasks[t] for t in tasks) / len(tasks) for k in kinds}
    return out


def no_artifact(outcomes: Iterable[CellOutcome]) -> dict[str, dict[str, float]]:
    """arm -> reason -> share of the arm's cells with no artifact for that reason (pooled over cells).

    Pooled on purpose: it accounts for cells (how many of the stored cells hold no pipeline), not
    for a property of tasks.
    """
    reasons: dict[str, Counter[str]] = defaultdict(Counter)
    totals: Counter[str] = Counter()
    for o in outcomes:
        totals[o.arm] += 1
        if not o.artifact:
            reasons[o.arm][o.no_artifact_reason or "unknown"] += 1
    return {
        arm: {r: c / totals[arm] for r, c in sorted(reasons[arm].items())} for arm in sorted(totals)
    }


# -- the summary table ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ArmSummary:
    arm: str
    tasks: int
    cells: int
    snapshot_pass: float | None
    gap: float | None
    error: float | None
    all_in: float | None


def arm_summaries(
    cells: list[Cell], verdicts: pa.Table, tasks: dict[str, Task], drop_loud: bool = False
) -> list[ArmSummary]:
    """The summary command's table: one row per arm, in name order (drop_loud: the *_drop_loud variants)."""
    found = outcomes(cells, verdicts, tasks)
    suffix = "_drop_loud" if drop_loud else ""
    rates = {
        m: rate(found, m + (suffix if m != "snapshot_pass" else ""))
        for m in ("snapshot_pass", "gap", "error", "all_in")
    }
    out = []
    for arm in sorted({o.arm for o in found}):
        mine = [o for o in found if o.arm == arm]
        out.append(
            ArmSummary(
                arm=arm,
                tasks=len({o.task for o in mine}),
                cells=len(mine),
                **{m: rates[m][arm] for m in rates},
            )
        )
    return out
