"""Run one artifact through one schedule: a fresh session per delivery on one persistent database.

This is the only place that knows the crash semantics: a crashed delivery runs the script up to
the chosen statement, drops the session without committing (an open transaction rolls back,
autocommitted statements stay), then delivers the same batch again and runs the whole script.
The injected crash is the harness's, not an error; an error in any statement is. A script is
crashed several times in one delivery (see Crash.statements and Crash.watched), so every
statement boundary of a script that changes what a crash would keep is hit somewhere in the
schedule; a long script's boundary is stopped at only where the engine's observer proves that
the statement before it changed the committed state in that attempt.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from arrivalbench.engines import Database, Engine, Limits, Observer, Session, Statement
from arrivalbench.logs import Log
from arrivalbench.schedules import SYNTHETIC_COLUMN, Delivery, Schedule

Deliver = Callable[[Session, Delivery, int], None]
"""Loads one attempt at a delivery into its fresh session: (session, delivery, attempt), the first
attempt 0 and a redelivery after a crash the next. replay's default loads `<source>_batch` TEMP
tables with arrival metadata (the suite's contract); `arrivalbench check` loads the user's source
table its own way (a batch table or an append-only landing table, an arrival column stamped)."""
Heartbeat = Callable[[int, int | None], None]
"""Called with (batch_id, statement index) before each statement, so a supervisor can see progress;
the statement is None while the harness reads the target after the last batch."""

SYNTHETIC_VALUES = np.array(["pos", "web", "app"], dtype=object)


MAX_MESSAGE_BYTES = 2048
"""An engine's error message is the script's to shape (a 75-byte script can raise 200 MB of it):
every message stored, shown or sent back to an agent is cut to this many UTF-8 bytes."""


def bounded_message(message: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """The message, or its first bytes with the original length noted, in at most `limit` bytes."""
    if len(message) <= limit // 4:  # fewer characters than a quarter: it fits whatever it holds
        return message
    data = message.encode("utf-8", errors="replace")
    if len(data) <= limit:
        return message
    note = f" … [message truncated: {len(data):,} bytes in all]"
    keep = limit - len(note.encode("utf-8"))
    return data[:keep].decode("utf-8", errors="ignore") + note


@dataclass(frozen=True)
class RunError:
    """Why a replay ended in ERROR: the class, where (1-based batch and statement), and the engine's
    words (bounded: see MAX_MESSAGE_BYTES)."""

    error_class: str
    batch: int | None
    statement: int | None
    message: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", bounded_message(self.message))


@dataclass(frozen=True)
class ResultCap:
    """How large a target may be before reading it back is refused (`result_too_large`)."""

    rows: int
    bytes: int
    columns: int
    column_name_bytes: int = 65_536


@dataclass(frozen=True)
class ReplayResult:
    target: pa.Table | None
    error: RunError | None
    statement_seconds: float
    statements_run: int
    empty_script: bool = False
    trace: tuple[pa.Table | None, ...] | None = None
    """With `observe`, the target after each delivery (None where it did not exist yet); the
    explain package reads it to find the first batch where the state left the truth."""
    beside: dict[str, Any] | None = None
    """What a job found beside the verdict, as plain JSON data (check's dbt tests under
    `--with-tests`); it never changes the verdict."""


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
        self._session: Session | Observer | None = None
        self._deadline: float | None = None
        threading.Thread(target=self._watch, name="arrivalbench-watchdog", daemon=True).start()

    @contextmanager
    def armed(self, session: Session | Observer, deadline: float) -> Iterator[None]:
        """Interrupt `session` if it is still running at `deadline` (time.monotonic())."""
        with self._lock:
            self._session, self._deadline = session, deadline
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


RESULT_TABLE = "__arrivalbench_result"


class _Clock:
    """The two limits a statement runs under: its own timeout and what is left of the replay's budget."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.replay_deadline = time.monotonic() + limits.replay_timeout

    def deadline(self) -> float:
        return min(time.monotonic() + self.limits.statement_timeout, self.replay_deadline)

    def over_budget(self) -> bool:
        return time.monotonic() >= self.replay_deadline

    def timeout_message(self) -> str:
        if self.over_budget():
            return f"the replay exceeded its {self.limits.replay_timeout:g} s budget and was interrupted"
        return (
            f"statement exceeded the {self.limits.statement_timeout:g} s limit and was interrupted"
        )


def replay(
    engine: Engine,
    statements: list[Statement],
    schedule: Schedule,
    log: Log,
    target: str,
    limits: Limits,
    heartbeat: Heartbeat = lambda batch, stmt: None,
    cap: ResultCap | None = None,
    observe: bool = False,
    deliver: Deliver | None = None,
    database: Database | None = None,
) -> ReplayResult:
    """Deliver every batch of the schedule, run the script once per delivery, read the target at the end.

    Every statement runs under the watchdog, with the lesser of its own timeout and what is left
    of the replay's wall budget; the target is evaluated into a session table under the same
    watchdog before a row of it is read, and one larger than `cap` is an ERROR, not a table.
    With `observe`, the target is also read (under the same limits) after every delivery, into
    `trace`; a read that fails or exceeds the cap ends the replay as it would at the end.
    `database`: a new instance the caller opened for this replay alone (`engine.open(limits)`)
    and closes after it (the sandbox worker opens the next one, and closes the last, while the
    grader compares); by default the replay opens and closes its own.
    """
    guard = watchdog()
    clock = _Clock(limits)
    owned = database is None
    database = engine.open(limits) if database is None else database
    spent = 0.0
    ran = 0

    observer: Observer | None = None
    unknown = 0

    def state(statement: Statement) -> object:
        """The committed state around `statement`; a value equal to no other when the observer
        cannot read it (a lock the script's open transaction holds): a change is assumed."""
        nonlocal observer, unknown
        if observer is None:
            observer = database.observer()
        with guard.armed(observer, clock.deadline()):
            try:
                return observer.committed_state(statement)
            except engine.errors as exc:
                if engine.classify(exc) == "timeout" or clock.over_budget():
                    raise
                unknown += 1
                return ("unreadable", unknown)

    def run(
        delivery: Delivery,
        tables: dict[str, pa.Table],
        upto: int,
        attempt: int,
        watch: frozenset[int] = frozenset(),
    ) -> tuple[RunError | None, int | None]:
        """One attempt: statements 1..upto, or, with `watch`, up to the first watched statement
        that changed the committed state (the crash point returned beside the error)."""
        nonlocal spent, ran
        session = database.session()
        before: object = None
        try:
            if deliver is None:
                for name, table in tables.items():
                    session.load_batch(f"{name}_batch", table)
            else:
                try:
                    deliver(session, delivery, attempt)
                except engine.errors as exc:  # e.g. the script dropped or reshaped the source
                    message = f"loading the delivery: {exc}"
                    error = RunError(engine.classify(exc), delivery.batch_id, None, message)
                    return error, None
            for statement in statements[:upto]:
                heartbeat(delivery.batch_id, statement.index)
                if clock.over_budget():
                    message = clock.timeout_message()
                    return RunError("timeout", delivery.batch_id, statement.index, message), None
                started = time.perf_counter()
                try:
                    if statement.index in watch:
                        before = state(statement)
                    with guard.armed(session, clock.deadline()):
                        session.execute(statement.text)
                    if statement.index in watch and state(statement) != before:
                        return None, statement.index
                except (
                    engine.errors
                ) as exc:  # the engine's error is the pipeline's verdict, not ours
                    error_class = engine.classify(exc)
                    message = clock.timeout_message() if error_class == "timeout" else str(exc)
                    return RunError(error_class, delivery.batch_id, statement.index, message), None
                finally:
                    spent += time.perf_counter() - started
                    ran += 1
            return None, None
        finally:
            session.close()  # a crash: whatever is uncommitted in this session is rolled back

    trace: list[pa.Table | None] = []
    try:
        seq = 1
        for delivery in schedule.deliveries:
            tables = delivery_tables(log, delivery, seq) if deliver is None else {}
            seq += len(delivery.rows)
            crash = delivery.crash
            stops = crash.statements(len(statements)) if crash else ()
            for attempt, crash_at in enumerate(stops):
                error, _ = run(delivery, tables, crash_at, attempt)
                if error:
                    return ReplayResult(None, error, spent, ran)
            watched = crash.watched(len(statements)) if crash else ()
            attempt = len(stops)
            while True:  # the attempt that passes every watched boundary unchanged is the full run
                error, stopped = run(delivery, tables, len(statements), attempt, frozenset(watched))
                if error:
                    return ReplayResult(None, error, spent, ran)
                if stopped is None:
                    break
                watched = tuple(q for q in watched if q > stopped)
                attempt += 1
            if observe:
                heartbeat(delivery.batch_id, None)
                seen, error = _read_target(
                    engine, database.session(), target, guard, clock, cap, delivery.batch_id
                )
                if error is not None and error.error_class != "missing_target":
                    return ReplayResult(None, error, spent, ran)
                trace.append(seen)
        last = schedule.deliveries[-1].batch_id if schedule.deliveries else None
        heartbeat(last or 0, None)
        result, error = _read_target(engine, database.session(), target, guard, clock, cap, last)
        return ReplayResult(result, error, spent, ran, trace=tuple(trace) if observe else None)
    finally:
        if observer is not None:
            observer.close()
        if owned:
            database.close()


def _read_target(
    engine: Engine,
    session: Session,
    target: str,
    guard: Watchdog,
    clock: _Clock,
    cap: ResultCap | None,
    last: int | None,
) -> tuple[pa.Table | None, RunError | None]:
    """The target's rows, evaluated under the watchdog and read back only within `cap`."""
    try:
        with guard.armed(session, clock.deadline()):
            rows = session.capture(target, RESULT_TABLE)
        if rows is None:
            message = f"table '{target}' does not exist after the last batch"
            return None, RunError("missing_target", last, None, message)
        if cap is not None and rows > cap.rows:
            message = (
                f"the target has {rows:,} rows, more than the {cap.rows:,} allowed "
                "(100 times the expected table's); nothing was compared"
            )
            return None, RunError("result_too_large", last, None, message)
        table = session.read_table(RESULT_TABLE, None if cap is None else cap.bytes)
        if table is not None and cap is not None:
            names = sum(len(n.encode()) for n in table.column_names)
            if table.num_columns > cap.columns or names > cap.column_name_bytes:
                message = (
                    f"the target has {table.num_columns:,} columns ({names:,} bytes of names), "
                    f"more than the {cap.columns:,} columns ({cap.column_name_bytes:,} bytes) "
                    "allowed; nothing was compared"
                )
                return None, RunError("result_too_large", last, None, message)
        if table is None:
            assert cap is not None
            message = (
                f"the target holds more than the {cap.bytes:,} bytes allowed; nothing was compared"
            )
            return None, RunError("result_too_large", last, None, message)
        return table, None
    except engine.errors as exc:  # e.g. a target view that never ends, or over a dropped table
        error_class = engine.classify(exc)
        message = clock.timeout_message() if error_class == "timeout" else str(exc)
        return None, RunError(error_class, last, None, f"reading the target: {message}")
    finally:
        session.close()
