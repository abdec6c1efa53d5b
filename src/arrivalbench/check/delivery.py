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


Static = tuple[tuple[str, pa.Table], ...]
"""The static sources' tables (name, table): delivered whole with the first delivery only."""


def delivered_tables(
    log: Log,
    rows: tuple[int, ...] | np.ndarray,
    omit: tuple[str, ...],
    arrival_column: str | None,
    stamps: np.ndarray | int | None,
    static: Static = (),
    first: bool = True,
) -> dict[str, pa.Table]:
    """Per source, the rows of one delivery (arrival order kept), without omitted columns,
    stamped; a source with no rows in it gets an empty table. The static sources come whole
    with the `first` delivery and empty with every other. `stamps` is one stamp, or one per
    spine position (the full refresh's first arrivals)."""
    positions = np.asarray(rows, dtype=np.int64)
    tables: dict[str, pa.Table] = {}
    for name, (part, where) in log.split(positions).items():
        table = log.tables[name].take(pa.array(part, pa.int64()))
        mine = name + "."
        drop = [entry.removeprefix(mine) for entry in omit if entry.startswith(mine)]
        drop = [c for c in drop if c in table.column_names]
        if drop:
            table = table.drop_columns(drop)
        if isinstance(stamps, np.ndarray):
            tables[name] = _stamped(table, arrival_column, stamps[positions[where]])
        else:
            tables[name] = _stamped(table, arrival_column, stamps)
    for name, table in static:
        whole = table if first else table.slice(0, 0)
        first_stamp = (
            int(stamps.min()) if isinstance(stamps, np.ndarray) and len(stamps) else stamps
        )
        tables[name] = _stamped(whole, arrival_column, first_stamp)
    return tables


def _stamped(
    table: pa.Table, arrival_column: str | None, stamps: np.ndarray | int | None
) -> pa.Table:
    if not arrival_column:
        return table
    values = np.broadcast_to(np.asarray(stamps, dtype=np.int64), (table.num_rows,))
    return table.append_column(
        arrival_column, pa.array(values, pa.int64()).cast(pa.timestamp("us"))
    )


def land(session: Session, source_table: str, table: pa.Table, mode: Mode) -> None:
    if mode == "batch":
        session.load_batch(source_table, table)
    else:
        session.append_batch(source_table, table)


def deliverer(
    log: Log,
    schedule: Schedule,
    relations: dict[str, str],
    mode: Mode,
    arrival_column: str | None,
    static: Static = (),
) -> Callable[[Session, Delivery, int], None]:
    """replay's `deliver` hook for this schedule: lands each attempt at a delivery, stamped,
    each source in its relation (`relations`: source name -> the table it lands in)."""
    index = {id(d): i for i, d in enumerate(schedule.deliveries)}
    base = arrival_base(log)

    def deliver(session: Session, delivery: Delivery, attempt: int) -> None:
        at = index[id(delivery)]
        when = stamp(base, at, attempt)
        tables = delivered_tables(
            log, delivery.rows, delivery.omit_columns, arrival_column, when, static, at == 0
        )
        for name, table in tables.items():
            land(session, relations[name], table, mode)

    return deliver
