"""A counterfactual target: a table the task's oracle would give under one mistaken semantics."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from arrivalbench.engines import Engine
from arrivalbench.logs import Log
from arrivalbench.oracle import oracle_over
from arrivalbench.schedules import Schedule
from arrivalbench.spec import Task


@dataclass(frozen=True)
class Counterfactual:
    """How to compute one counterfactual table, and what it assumed (shown beside the label).

    `compute` may return None when the semantics does not apply to these rows (nothing to
    compare); it may raise OracleError, which skips it too. A `coarser` variant explains the table
    less precisely (a watermark on days where one on event times may fit too): its detail is named
    only when no finer variant of its label fits every schedule tried.
    """

    compute: Callable[[Task, Engine], pa.Table | None]
    detail: str | None = None
    coarser: bool = False


def over(
    tables: dict[str, pa.Table], detail: str | None = None, coarser: bool = False
) -> Counterfactual:
    """The task's own oracle over transformed source tables."""
    return Counterfactual(
        lambda task, engine: oracle_over(task, tables, engine, "a counterfactual"), detail, coarser
    )


def rewritten(sql: str, tables: dict[str, pa.Table], detail: str) -> Counterfactual:
    """A rewritten oracle query over the delivered events."""

    def compute(task: Task, engine: Engine) -> pa.Table:
        return oracle_over(dataclasses.replace(task, oracle_sql=sql), tables, engine, detail)

    return Counterfactual(compute, detail)


def first_arrivals(schedule: Schedule) -> list[tuple[int, int, int]]:
    """(spine row, 0-based batch, arrival rank) of each event's first copy, in arrival order."""
    seen: set[int] = set()
    out = []
    seq = 0
    for b, delivery in enumerate(schedule.deliveries):
        for row in delivery.rows:
            if row not in seen:
                seen.add(row)
                out.append((row, b, seq))
            seq += 1
    return out


def delivered(log: Log, schedule: Schedule) -> dict[str, pa.Table]:
    """The distinct delivered events' source tables, in log order (what the true oracle reads)."""
    return log.subset_tables(sorted({row for d in schedule.deliveries for row in d.rows}))
