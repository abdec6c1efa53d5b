"""How a delivery reaches the user's source table, and what arrival time it carries.

Two modes. `batch`: the source table holds only the current delivery (as in the benchmark: a
TEMP table of the pipeline's session). `landing`: the source table is an append-only landing
table that accumulates every delivery, duplicates and late rows included, as a warehouse's raw
table does. With an arrival column, every row a delivery lands carries that delivery's arrival
timestamp, replacing any value the log holds: delivery i (0-based) arrives at
`base + i hours`, and a redelivery after a crash (attempt a) at `base + i hours + a seconds`,
re-stamped as a loader would, so stamps strictly increase. The full refresh sees each event
once, with the stamp of the first delivery that carried it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import pyarrow as pa

from arrivalbench.engines import Session
from arrivalbench.logs import Log
from arrivalbench.schedules import Delivery, Schedule

Mode = Literal["batch", "landing"]
MODES: tuple[str, ...] = ("batch", "landing")
HOUR = 3_600_000_000
SECOND = 1_000_000
DAY = 86_400_000_000


def arrival_base(log: Log) -> int:
    """Microseconds of the first delivery's arrival: midnight after the log's last event."""
    return int((int(log.ts_micros().max()) // DAY + 1) * DAY)


def stamp(base: int, delivery_index: int, attempt: int) -> int:
    return base + delivery_index * HOUR + attempt * SECOND


def first_arrivals(log: Log, schedule: Schedule, base: int) -> np.ndarray:
    """Per log row, the arrival stamp of the first delivery that carried it (microseconds)."""
    first = np.full(log.n, -1, dtype=np.int64)
    for index, delivery in enumerate(schedule.deliveries):
        rows = np.asarray(delivery.rows, dtype=np.int64)
        fresh = rows[first[rows] < 0]
        first[fresh] = stamp(base, index, 0)
    return first


def delivered_table(
    log: Log,
    rows: tuple[int, ...] | np.ndarray,
    omit: tuple[str, ...],
    arrival_column: str | None,
    stamps: np.ndarray | int | None,
) -> pa.Table:
    """The rows of one delivery (arrival order kept), without omitted columns, stamped."""
    table = log.table.take(pa.array(np.asarray(rows, dtype=np.int64), pa.int64()))
    mine = log.source.name + "."
    drop = [entry.removeprefix(mine) for entry in omit if entry.startswith(mine)]
    drop = [c for c in drop if c in table.column_names]
    if drop:
        table = table.drop_columns(drop)
    if arrival_column:
        values = np.broadcast_to(np.asarray(stamps, dtype=np.int64), (table.num_rows,))
        table = table.append_column(
            arrival_column, pa.array(values, pa.int64()).cast(pa.timestamp("us"))
        )
    return table


def land(session: Session, source_table: str, table: pa.Table, mode: Mode) -> None:
    if mode == "batch":
        session.load_batch(source_table, table)
    else:
        session.append_batch(source_table, table)


def deliverer(
    log: Log, schedule: Schedule, source_table: str, mode: Mode, arrival_column: str | None
) -> Callable[[Session, Delivery, int], None]:
    """replay's `deliver` hook for this schedule: lands each attempt at a delivery, stamped."""
    index = {id(d): i for i, d in enumerate(schedule.deliveries)}
    base = arrival_base(log)

    def deliver(session: Session, delivery: Delivery, attempt: int) -> None:
        when = stamp(base, index[id(delivery)], attempt)
        table = delivered_table(log, delivery.rows, delivery.omit_columns, arrival_column, when)
        land(session, source_table, table, mode)

    return deliver
