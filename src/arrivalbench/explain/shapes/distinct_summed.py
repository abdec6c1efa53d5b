"""`distinct_summed`: a distinct count added up across loads. Each batch's result is computed
over the events new in that batch and added into the stored row (customers per day as the sum
of each load's distinct customers), which is right for a sum or a count of rows and wrong for a
distinct count. The counterfactual runs the task's oracle once per batch, over that batch's new
events, and sums the numeric columns of the per-batch tables by the target's key."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from arrivalbench.engines import Engine
from arrivalbench.explain.shapes.counterfactual import Counterfactual, first_arrivals
from arrivalbench.logs import Log
from arrivalbench.oracle import conform, oracle_over
from arrivalbench.schedules import Schedule
from arrivalbench.spec import Task


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def distinct_summed(task: Task, log: Log, schedule: Schedule) -> Iterator[Counterfactual]:
    firsts = first_arrivals(schedule)
    batches = sorted({b for _, b, _ in firsts})
    if len(batches) < 2:
        return

    def compute(task: Task, engine: Engine) -> pa.Table | None:
        parts = []
        for b in batches:
            rows = sorted(row for row, batch, _ in firsts if batch == b)
            parts.append(oracle_over(task, log.subset_tables(rows), engine, f"batch {b + 1}"))
        stacked = pa.concat_tables(parts)
        target = task.spec.target
        keys = [c for c in target.columns if c in target.key]
        columns = []
        for name in target.columns:
            kind = stacked.schema.field(name).type
            additive = pa.types.is_integer(kind) or pa.types.is_decimal(kind)
            if name in target.key:
                columns.append(_quoted(name))
            elif additive or pa.types.is_floating(kind):
                columns.append(f"sum({_quoted(name)}) AS {_quoted(name)}")
            else:
                return None  # a value that cannot be added up: not this shape
        sql = (
            f"SELECT {', '.join(columns)} FROM parts GROUP BY {', '.join(_quoted(k) for k in keys)}"
        )
        where = str(task.folder / "oracle.sql")
        return conform(engine.query({"parts": stacked}, sql), target, where)

    yield Counterfactual(compute, "each load's result added into the stored rows")
