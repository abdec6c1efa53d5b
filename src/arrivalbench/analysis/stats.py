"""Rates, intervals and tests over graded cells. Every rate is a mean over tasks of per-task rates.

A cell is one (arm, task, sample). Each metric maps a cell to 1.0, 0.0 or None (the cell is not in
that metric's denominator); a task's rate is the mean over its usable cells and an arm's rate the
mean over tasks with at least one usable cell, so a task with many samples weighs no more than one
with few. Intervals resample tasks, never cells. Definitions and worked examples: docs/metrics.md.
"""

from __future__ import annotations

import difflib
import json
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pyarrow as pa

from arrivalbench.engines import REGISTRY
from arrivalbench.errors import UsageError
from arrivalbench.hazards import BENIGN, HAZARDS, IDEMPOTENCY, LOUD, ORDERING, SILENT
from arrivalbench.seeds import rng as seeded_rng
from arrivalbench.spec import Task
from arrivalbench.store import Cell, RunDir

__all__ = [
    "BENIGN",
    "CONSTRAINT",
    "DEFAULT_BOOTSTRAP_SEED",
    "FAILURE_METRICS",
    "IDEMPOTENCY",
    "LOUD",
    "METRICS",
    "ORDERING",
    "SIGN_TEST_NULL",
    "SILENT",
    "ArmSummary",
    "CellOutcome",
    "Estimate",
    "IncompleteCellError",
    "Replication",
    "Signature",
    "arm_summaries",
    "bound_of_three",
    "clopper_pearson",
    "crash_rates",
    "error_class",
    "estimate",
    "no_artifact",
    "outcomes",
    "paired",
    "percentile_interval",
    "rate",
    "replication",
    "run_outcomes",
    "sign_test",
    "signature",
    "signature_sign_test",
    "task_rates",
]

SNAPSHOT = "snapshot"
DEFAULT_BOOTSTRAP_SEED = 20260105
LEVEL = 0.95
_TIE = 1e-12  # margins closer to zero than this are ties (rates equal up to float rounding)

Unit = Literal["task", "scenario"]
SignatureForm = Literal["weakest_link", "group_mean", "conservative"]


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
    for row in verdicts.select(columns).to_pylist():
        key = (row["arm"], row["task"], row["sample"])
        by_cell[key][row["schedule"]] = row["verdict"]
        if row["verdict"] == "ERROR":
            classes[key][row["schedule"]] = error_class(row.get("error_class"), row.get("record"))
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
            )
        )
    return out


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


# -- per-cell metrics ---------------------------------------------------------------------------


def _hazard_set(o: CellOutcome, drop_loud: bool) -> tuple[str, ...]:
    return tuple(h for h in o.hazards if not (drop_loud and h in LOUD))


def _snapshot_pass(o: CellOutcome) -> float | None:
    return float(o.snapshot_pass) if o.graded else None


def _gap(drop_loud: bool) -> Callable[[CellOutcome], float | None]:
    def gap(o: CellOutcome) -> float | None:
        if not o.graded or not o.snapshot_pass:
            return None
        seen = [o.verdicts.get(h) for h in _hazard_set(o, drop_loud)]
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


# -- intervals ------------------------------------------------------------------------------------


def _pct(x: float, digits: int, signed: bool) -> str:
    shown = round(100 * x, digits) + 0.0  # + 0.0 turns a rounded -0.0 into 0.0
    return f"{shown:+.{digits}f}" if signed else f"{shown:.{digits}f}"


@dataclass(frozen=True)
class Estimate:
    """A rate (or a paired difference) with its 95% interval over tasks.

    At exactly 0 or 1 a bootstrap interval collapses to a point, so `bound` holds the rule-of-three
    one-sided 95% bound instead (upper 3/n at 0, lower 1 - 3/n at 1) and low/high are None.
    """

    value: float | None
    low: float | None
    high: float | None
    tasks: int
    bound: float | None = None

    def format(self, digits: int = 1, signed: bool = False) -> str:
        """'16.7% [8.7, 26.0]', '0.0% (≤7.5%)', '+3.0pp [-1.6, +16.8]' (signed), '—' when undefined."""
        if self.value is None:
            return "—"
        unit = "pp" if signed else "%"
        head = f"{_pct(self.value, digits, signed)}{unit}"
        if self.bound is not None:
            side = "≤" if self.bound >= self.value else "≥"
            return f"{head} ({side}{_pct(self.bound, digits, signed)}{unit})"
        if self.low is None or self.high is None:
            return head
        return f"{head} [{_pct(self.low, digits, signed)}, {_pct(self.high, digits, signed)}]"


EXACT_BELOW = 30
"""Below this many units a 0 or 1 rate takes the exact Clopper-Pearson bound, not 3/n."""


def bound_of_three(rate: float | None, n: int) -> float | None:
    """The one-sided 95% bound of a rate of exactly 0 (upper) or 1 (lower) over n units.

    From EXACT_BELOW units on, the rule of three (3/n above a 0, 1 - 3/n below a 1); below it the
    exact Clopper-Pearson bound, which solves (1 - b)^n = 0.05, so a tiny n never prints
    "≤100%" (two units: ≤77.6%). None for any other rate, where an interval is drawn instead.
    """
    if rate is None or n == 0 or rate not in (0.0, 1.0):
        return None
    upper = 1 - (1 - LEVEL) ** (1 / n) if n < EXACT_BELOW else min(1.0, 3 / n)
    return upper if rate == 0.0 else 1 - upper


def _binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space so large n does not overflow."""
    if k <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)
    logs = [
        math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lp + (n - j) * lq
        for j in range(k, n + 1)
    ]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(x - top) for x in logs))


def _solve(f: Callable[[float], float], target: float) -> float:
    """The p in [0, 1] where the increasing f(p) reaches target, by bisection."""
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if f(mid) < target else (low, mid)
    return (low + high) / 2


def clopper_pearson(k: int, n: int) -> tuple[float | None, float | None]:
    """The exact two-sided 95% interval of k successes in n trials ((None, None) when n is 0).

    low solves P(X >= k; low) = 2.5% and high P(X <= k; high) = 2.5%; 4 of 10 gives [12.2%, 73.8%].
    """
    if n == 0:
        return None, None
    tail = (1 - LEVEL) / 2
    low = 0.0 if k == 0 else _solve(lambda p: _binomial_tail(k, n, p), tail)
    high = 1.0 if k == n else _solve(lambda p: _binomial_tail(k + 1, n, p), 1 - tail)
    return low, high


def _bootstrap(
    values: np.ndarray, groups: np.ndarray | None, resamples: int, generator: np.random.Generator
) -> np.ndarray:
    """The resampled means: tasks drawn with replacement, or whole groups (scenarios) of tasks."""
    if groups is None:
        index = generator.integers(0, len(values), size=(resamples, len(values)))
        return values[index].mean(axis=1)
    codes = np.unique(groups, return_inverse=True)[1]
    sums = np.bincount(codes, weights=values)
    sizes = np.bincount(codes).astype(float)
    index = generator.integers(0, len(sums), size=(resamples, len(sums)))
    return sums[index].sum(axis=1) / sizes[index].sum(axis=1)


def _interval(
    values: np.ndarray,
    groups: np.ndarray | None,
    resamples: int,
    generator: np.random.Generator,
    rule_of_three: bool,
) -> Estimate:
    n = len(values)
    if n == 0:
        return Estimate(value=None, low=None, high=None, tasks=0)
    value = float(values.mean())
    if rule_of_three and (np.all(values == 0.0) or np.all(values == 1.0)):
        return Estimate(value=value, low=None, high=None, tasks=n, bound=bound_of_three(value, n))
    low, high = percentile_interval(_bootstrap(values, groups, resamples, generator))
    return Estimate(value=value, low=low, high=high, tasks=n)


def percentile_interval(draws: np.ndarray) -> tuple[float | None, float | None]:
    """The central 95% of bootstrap draws; NaN draws (a resample where the statistic is undefined) are dropped."""
    draws = draws[~np.isnan(draws)]
    if draws.size == 0:
        return None, None
    tail = 100 * (1 - LEVEL) / 2
    low, high = np.percentile(draws, [tail, 100 - tail])
    return float(low), float(high)


def _check_resampling(unit: str, resamples: int) -> None:
    if unit not in ("task", "scenario"):
        raise _unknown("resampling unit", unit, ("task", "scenario"))
    if resamples < 1:
        raise UsageError(f"resamples must be at least 1; found {resamples}.")


def _scenarios(outcomes: Iterable[CellOutcome]) -> dict[str, str]:
    return {o.task: o.scenario for o in outcomes}


def estimate(
    outcomes: Iterable[CellOutcome],
    metric: str,
    *,
    unit: Unit = "task",
    resamples: int = 10_000,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> dict[str, Estimate]:
    """Per arm: the rate with a percentile-bootstrap 95% interval, resampling tasks (or scenarios).

    Each arm draws from its own generator, derived from (seed, metric, arm), so adding an arm
    to a run leaves every other arm's interval unchanged.
    """
    _check_resampling(unit, resamples)
    outcomes = list(outcomes)
    scenario_of = _scenarios(outcomes)
    out = {}
    for arm, per_task in task_rates(outcomes, metric).items():
        values = np.array(list(per_task.values()), dtype=float)
        groups = np.array([scenario_of[t] for t in per_task]) if unit == "scenario" else None
        generator = seeded_rng(seed, "estimate", metric, arm)
        out[arm] = _interval(values, groups, resamples, generator, rule_of_three=True)
    return out


def paired(
    outcomes: Iterable[CellOutcome],
    metric: str,
    arm_a: str,
    arm_b: str,
    *,
    unit: Unit = "task",
    resamples: int = 10_000,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> Estimate:
    """arm_b minus arm_a over tasks usable in both, both rates taken from the same resampled tasks.

    Shared task difficulty cancels in each draw; a task usable in only one arm is left out rather
    than imputed. A difference has no rule-of-three bound.
    """
    _check_resampling(unit, resamples)
    outcomes = list(outcomes)
    rates = task_rates(outcomes, metric)
    for arm in (arm_a, arm_b):
        if arm not in rates:
            raise _unknown("arm", arm, rates)
    common = sorted(rates[arm_a].keys() & rates[arm_b].keys())
    values = np.array([rates[arm_b][t] - rates[arm_a][t] for t in common], dtype=float)
    scenario_of = _scenarios(outcomes)
    groups = np.array([scenario_of[t] for t in common]) if unit == "scenario" else None
    generator = seeded_rng(seed, "paired", metric, arm_a, arm_b)
    return _interval(values, groups, resamples, generator, rule_of_three=False)


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


# -- the failure signature -------------------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    """An arm's failure signature: ordering-hazard pass rates against idempotency-hazard ones.

    Margins are ordering minus idempotency in rate units (0.157 is +15.7pp); None where a rate they
    need is missing. `rates` holds the five per-hazard temporal-pass rates.
    """

    arm: str
    ordering_mean: float | None
    idempotency_mean: float | None
    group_mean: float | None
    weakest_ordering: float | None
    weakest_idempotency: float | None
    strongest_idempotency: float | None
    weakest_link: float | None
    conservative: float | None
    rates: Mapping[str, float | None]


def _complete(values: list[float | None]) -> list[float] | None:
    return None if any(v is None for v in values) else values  # type: ignore[return-value]


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def signature(outcomes: Iterable[CellOutcome]) -> dict[str, Signature]:
    """arm -> Signature, from per-hazard temporal-pass rates (each over the tasks declaring it)."""
    outcomes = list(outcomes)
    by_hazard = {h: rate(outcomes, f"pass:{h}") for h in SILENT}
    out = {}
    for arm in sorted({o.arm for o in outcomes}):
        rates = {h: by_hazard[h].get(arm) for h in SILENT}
        ordering = _complete([rates[h] for h in ORDERING])
        idempotency = _complete([rates[h] for h in IDEMPOTENCY])
        ordering_mean = _mean(ordering) if ordering else None
        idempotency_mean = _mean(idempotency) if idempotency else None
        weakest_ordering = min(ordering) if ordering else None
        weakest_idempotency = min(idempotency) if idempotency else None
        strongest_idempotency = max(idempotency) if idempotency else None
        out[arm] = Signature(
            arm=arm,
            ordering_mean=ordering_mean,
            idempotency_mean=idempotency_mean,
            group_mean=_minus(ordering_mean, idempotency_mean),
            weakest_ordering=weakest_ordering,
            weakest_idempotency=weakest_idempotency,
            strongest_idempotency=strongest_idempotency,
            weakest_link=_minus(weakest_ordering, weakest_idempotency),
            conservative=_minus(weakest_ordering, strongest_idempotency),
            rates=rates,
        )
    return out


def sign_test(successes: int, n: int, p: float) -> float:
    """One-sided P(X >= successes) for X ~ Binomial(n, p), summed exactly."""
    if n < 0 or not 0 <= successes <= n:
        raise UsageError(
            f"sign test needs 0 <= successes <= n; found successes={successes}, n={n}."
        )
    if not 0.0 <= p <= 1.0:
        raise UsageError(f"sign test needs a probability 0 <= p <= 1; found p={p}.")
    return min(
        1.0, sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(successes, n + 1))
    )


SIGN_TEST_NULL: dict[str, float] = {
    "weakest_link": 3 / 5,
    "group_mean": 1 / 2,
    "conservative": 1 / 10,
}
"""Chance of a positive margin when the five hazard rates are exchangeable (docs/metrics.md)."""


def signature_sign_test(
    sigs: Mapping[str, Signature] | Iterable[Signature], form: SignatureForm = "weakest_link"
) -> tuple[int, int, float]:
    """(arms with a strictly positive margin, arms not tied, one-sided p) against the form's null.

    Ties (both groups saturated, say) and arms with a missing margin are left out of n.
    """
    if form not in SIGN_TEST_NULL:
        raise _unknown("signature form", form, SIGN_TEST_NULL)
    values = sigs.values() if isinstance(sigs, Mapping) else sigs
    margins = [getattr(s, form) for s in values]
    decided = [m for m in margins if m is not None and abs(m) > _TIE]
    positive = sum(m > 0 for m in decided)
    return positive, len(decided), sign_test(positive, len(decided), SIGN_TEST_NULL[form])


# -- replication ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replication:
    """One arm in two independent runs: how far the rate moved and whether the same tasks failed."""

    metric: str
    rate_a: float | None
    rate_b: float | None
    delta: float | None
    failing_a: frozenset[str]
    failing_b: frozenset[str]
    recurring: frozenset[str]
    recurrence: float | None


def _failing_tasks(cells: dict[str, list[float]], metric: str) -> frozenset[str]:
    bad = 1.0 if metric in FAILURE_METRICS else 0.0
    return frozenset(task for task, values in cells.items() if bad in values)


def replication(
    outcomes_a: Iterable[CellOutcome],
    outcomes_b: Iterable[CellOutcome],
    arm: str,
    metric: str = "gap",
) -> Replication:
    """Compare one arm across two runs; recurrence is the share of run a's failing tasks failing in b.

    A failing task has at least one usable cell failing the metric (for the gap, one silent
    temporal failure). delta is rate_b - rate_a before any rounding.
    """
    cells_a, cells_b = _cell_values(outcomes_a, metric), _cell_values(outcomes_b, metric)
    for name, cells in (("first", cells_a), ("second", cells_b)):
        if arm not in cells:
            raise UsageError(
                f"arm '{arm}' is not in the {name} run; its arms are {', '.join(sorted(cells))}."
            )
    rate_a = _mean([sum(v) / len(v) for v in cells_a[arm].values()])
    rate_b = _mean([sum(v) / len(v) for v in cells_b[arm].values()])
    failing_a, failing_b = (
        _failing_tasks(cells_a[arm], metric),
        _failing_tasks(cells_b[arm], metric),
    )
    recurring = failing_a & failing_b
    return Replication(
        metric=metric,
        rate_a=rate_a,
        rate_b=rate_b,
        delta=_minus(rate_b, rate_a),
        failing_a=failing_a,
        failing_b=failing_b,
        recurring=recurring,
        recurrence=len(recurring) / len(failing_a) if failing_a else None,
    )


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
