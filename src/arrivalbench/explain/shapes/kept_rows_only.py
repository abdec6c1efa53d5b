"""`kept_rows_only`: a top-k (or any filtered target) kept without the totals it ranks by. Each
load adds its new events to the rows the target shows and cuts again, so a row that dropped out
lost its total and cannot come back when later rows change the order.

The counterfactual replays that with the task's own oracle: after each batch, the events kept
are only those the shown table depends on (removing one of them changes the table); the next
batch's new events join them (a table that keeps nothing is `batch_only`'s). It costs one oracle run per kept event per batch, so it is tried
on small schedules only (a minimal schedule is a handful of events)."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from arrivalbench.compare import compare
from arrivalbench.engines import Engine
from arrivalbench.explain.shapes.counterfactual import Counterfactual, first_arrivals
from arrivalbench.logs import Log
from arrivalbench.oracle import oracle_over
from arrivalbench.schedules import Schedule
from arrivalbench.spec import Task

MOST_EVENTS = 40
"""Above this many distinct events the shape is not tried (the oracle runs grow with the square)."""


def kept_rows_only(task: Task, log: Log, schedule: Schedule) -> Iterator[Counterfactual]:
    firsts = first_arrivals(schedule)
    batches = sorted({b for _, b, _ in firsts})
    if len(batches) < 2 or len(firsts) > MOST_EVENTS:
        return

    def compute(task: Task, engine: Engine) -> pa.Table | None:
        def shown(rows: list[int]) -> pa.Table:
            return oracle_over(task, log.subset_tables(sorted(rows)), engine, "the kept events")

        kept: list[int] = []
        pruned = False
        for b in batches[:-1]:
            kept += [row for row, batch, _ in firsts if batch == b]
            table = shown(kept)
            needed = [
                row
                for row in kept
                if not compare(table, shown([r for r in kept if r != row]), task.spec.target).equal
            ]
            if not needed:
                return None  # nothing kept at all is `batch_only`, not a cut table
            pruned |= len(needed) < len(kept)
            kept = needed
        if not pruned:
            return None
        return shown(kept + [row for row, batch, _ in firsts if batch == batches[-1]])

    yield Counterfactual(compute, "only the rows the table shows are kept between loads")
