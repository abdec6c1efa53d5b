"""Run one artifact through one schedule: a fresh session per delivery on one persistent database.

This is the only place that knows the crash semantics: a crashed delivery runs the script up to
the chosen statement, drops the session without committing (an open transaction rolls back,
autocommitted statements stay), then delivers the same batch again and runs the whole script.
The injected crash is the harness's, not an error; an error in any statement is. A long script
is crashed several times in one delivery (see Crash.statements), so every statement boundary of
any script is hit somewhere in the schedule.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from arrivalbench.engines import Engine, Limits, Session, Statement
from arrivalbench.logs import Log
from arrivalbench.schedules import SYNTHETIC_COLUMN, Delivery, Schedule

Heartbeat = Callable[[int, int], None]
"""Called with (batch_id, statement index) before each statement, so a supervisor can see progress."""

SYNTHETIC_VALUES = np.array(["pos", "web", "app"], dtype=object)


@dataclass(frozen=True)
class RunError:
    """Why a replay ended in ERROR: the class, where (1-based batch and statement), and the engine's words."""

    error_class: str
    batch: int | None
    statement: int | None
    message: str


@dataclass(frozen=True)
class ReplayResult:
    target: pa.Table | None
    error: RunError | None
    statement_seconds: float
    statements_run: int


def delivery_tables(log: Log, delivery: Delivery, first_seq: int) -> dict[str, pa.Table]:
    """One table per source holding exactly this delivery's rows, with arrival metadata.

    `_arrival_seq` numbers the delivery's rows from first_seq in arrival order across all sources;
    `_batch_id` is the delivery's. A source with no rows in this delivery gets an empty table.
    """
    seqs = np.arange(first_seq, first_seq + len(delivery.rows), dtype=np.int64)
    omitted = {tuple(entry.split(".", 1)) for entry in delivery.omit_columns}
    tables = {}
    for index, (name, (rows, positions)) in enumerate(log.split(delivery.rows).items()):
        table = log.tables[name].take(pa.array(rows, pa.int64()))
        drop = [column for source, column in omitted if source == name]
        if drop:
            table = table.drop_columns(drop)
        if delivery.add_synthetic and index == 0:
            column, _ = SYNTHETIC_COLUMN
            values = SYNTHETIC_VALUES[table.column("event_id").to_numpy() % len(SYNTHETIC_VALUES)]
            table = table.append_column(column, pa.array(values, pa.string()))
        n = table.num_rows
        table = table.append_column("_arrival_seq", pa.array(seqs[positions]))
        tables[name] = table.append_column(
            "_batch_id", pa.array(np.full(n, delivery.batch_id, dtype=np.int64))
        )
    return tables


def delivery_table(log: Log, delivery: Delivery, first_seq: int) -> pa.Table:
    """The primary source's batch table (the only one for a single-source task)."""
    return delivery_tables(log, delivery, first_seq)[log.source.name]


class Watchdog:
    """One thread that interrupts the armed session when its statement outlives the deadline.

    Arming only writes the deadline under a lock: the thread polls a few times a second instead
    of being woken per statement (a thread per statement, or a notify per statement, cost about
    as much as a typical statement). Timeouts are therefore enforced to within POLL seconds.
    """

    POLL = 0.2

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._session: Session | None = None
        self._deadline: float | None = None
        threading.Thread(target=self._watch, name="arrivalbench-watchdog", daemon=True).start()

    @contextmanager
    def armed(self, session: Session, seconds: float) -> Iterator[None]:
        with self._lock:
            self._session, self._deadline = session, time.monotonic() + seconds
        try:
            yield
        finally:
            with self._lock:
                self._session, self._deadline = None, None

    def _watch(self) -> None:
        while True:
            time.sleep(self.POLL)
            with self._lock:
                if self._deadline is not None and time.monotonic() >= self._deadline:
                    if self._session is not None:
                        self._session.interrupt()
                    self._session, self._deadline = None, None


_WATCHDOG: Watchdog | None = None


def watchdog() -> Watchdog:
    """The process's watchdog, started on first use."""
    global _WATCHDOG
    if _WATCHDOG is None:
        _WATCHDOG = Watchdog()
    return _WATCHDOG


def replay(
    engine: Engine,
    statements: list[Statement],
    schedule: Schedule,
    log: Log,
    target: str,
    limits: Limits,
    heartbeat: Heartbeat = lambda batch, stmt: None,
) -> ReplayResult:
    """Deliver every batch of the schedule, run the script once per delivery, read the target at the end."""
    guard = watchdog()
    database = engine.open(limits)
    spent = 0.0
    ran = 0

    def run(delivery: Delivery, tables: dict[str, pa.Table], upto: int) -> RunError | None:
        nonlocal spent, ran
        session = database.session()
        try:
            for name, table in tables.items():
                session.load_batch(f"{name}_batch", table)
            for statement in statements[:upto]:
                heartbeat(delivery.batch_id, statement.index)
                started = time.perf_counter()
                try:
                    with guard.armed(session, limits.statement_timeout):
                        session.execute(statement.text)
                except (
                    engine.errors
                ) as exc:  # the engine's error is the pipeline's verdict, not ours
                    error_class = engine.classify(exc)
                    message = str(exc)
                    if error_class == "timeout":
                        message = f"statement exceeded the {limits.statement_timeout:g} s limit and was interrupted"
                    return RunError(error_class, delivery.batch_id, statement.index, message)
                finally:
                    spent += time.perf_counter() - started
                    ran += 1
            return None
        finally:
            session.close()  # a crash: whatever is uncommitted in this session is rolled back

    try:
        seq = 1
        for delivery in schedule.deliveries:
            tables = delivery_tables(log, delivery, seq)
            seq += len(delivery.rows)
            for crash_at in delivery.crash.statements(len(statements)) if delivery.crash else ():
                error = run(delivery, tables, crash_at)
                if error:
                    return ReplayResult(None, error, spent, ran)
            error = run(delivery, tables, len(statements))
            if error:
                return ReplayResult(None, error, spent, ran)
        last = schedule.deliveries[-1].batch_id if schedule.deliveries else None
        session = database.session()
        try:
            result = session.read_table(target)
        except engine.errors as exc:  # e.g. a target view over a table that no longer exists
            return ReplayResult(
                None, RunError(engine.classify(exc), last, None, str(exc)), spent, ran
            )
        finally:
            session.close()
        if result is None:
            error = RunError(
                "missing_target",
                last,
                None,
                f"table '{target}' does not exist after the last batch",
            )
            return ReplayResult(None, error, spent, ran)
        return ReplayResult(result, None, spent, ran)
    finally:
        database.close()
