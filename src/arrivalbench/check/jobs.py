"""The SQL pipeline's replay job for the sandbox worker: the suite's replay over the user's log.

The worker reads the log from an Arrow file the parent wrote once (memory-mapped, cached per
worker), so a job carries only the schedule; the pipeline is screened and run under the same
limits, watchdog and crash semantics as `grade`, with the source table loaded by
check.delivery instead of `<source>_batch`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pyarrow as pa

from arrivalbench.check.delivery import Mode, Static, delivered_tables, deliverer, land
from arrivalbench.engines import DEFAULT_ENGINE, Database, Engine, Limits, Session, Statement
from arrivalbench.logs import Log
from arrivalbench.replay import Heartbeat, ReplayResult, ResultCap, replay
from arrivalbench.schedules import Delivery, Schedule


def _save(table: pa.Table, path: str) -> None:
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _load(path: str) -> pa.Table:
    return pa.ipc.open_file(pa.memory_map(path)).read_all()


@dataclass(frozen=True)
class LogFile:
    """A check's sources saved as Arrow files (one per source), with what rebuilds the `Log`
    around them and the static sources' tables (check.sources)."""

    path: str
    source: object  # the SourceSpec (model_construct'ed: a user's source has no generator)
    key_column: str
    time_column: str
    others: tuple[tuple[object, str], ...] = ()
    """Further streamed sources: (SourceSpec, path)."""
    source_columns: tuple[tuple[str, str], ...] = ()
    static_paths: tuple[tuple[str, str], ...] = ()
    """Static sources: (name, path)."""

    @classmethod
    def save(cls, log: Log, path: str, static: Static = ()) -> LogFile:
        _save(log.table, path)
        others = []
        for i, (spec, table) in enumerate(log.others, start=1):
            _save(table, f"{path}.{i}")
            others.append((spec, f"{path}.{i}"))
        paths = []
        for i, (name, table) in enumerate(static):
            _save(table, f"{path}.static{i}")
            paths.append((name, f"{path}.static{i}"))
        return cls(
            path,
            log.source,
            log.key_column,
            log.time_column,
            tuple(others),
            log.source_columns,
            tuple(paths),
        )

    def load(self) -> Log:
        cached = _LOGS.get(self.path)
        if cached is None:
            cached = Log(
                task_id="check",
                kind="hidden",
                seed=0,
                source=self.source,  # type: ignore[arg-type]
                table=_load(self.path),
                others=tuple((spec, _load(p)) for spec, p in self.others),  # type: ignore[misc]
                key_column=self.key_column,
                time_column=self.time_column,
                source_columns=self.source_columns,
            )
            _LOGS.clear()
            _LOGS[self.path] = cached
        return cached

    def static(self) -> Static:
        return tuple((name, _load(p)) for name, p in self.static_paths)


_LOGS: dict[str, Log] = {}


def full_refresh_schedule(log: Log) -> Schedule:
    """Every event once, in canonical order, as one delivery: what the full refresh runs over."""
    return Schedule(
        name="full_refresh",
        task_id="check",
        seed=0,
        log_kind="hidden",
        log_seed=0,
        log_fingerprint="",
        source=log.source.name,
        deliveries=(Delivery(batch_id=1, rows=tuple(range(log.n))),),
    )


@dataclass(frozen=True)
class SqlCheckJob:
    """One replay of the user's SQL pipeline (or, with `first_arrivals`, its full refresh)."""

    script: str
    limits: Limits
    log: LogFile
    schedule: Schedule | None
    """None for the full refresh: every event once, in one delivery."""
    relations: tuple[tuple[str, str], ...]
    """Per source, the table it lands in (the source's own name for a SQL pipeline)."""
    target: str
    mode: Mode
    arrival_column: str | None
    first_arrivals: np.ndarray | None = field(default=None, repr=False)
    engine: str = DEFAULT_ENGINE
    cap: ResultCap | None = None
    uses_database: ClassVar[bool] = True
    """The worker hands `run` this replay's database, as it does a suite replay's."""

    def run(
        self,
        engine: Engine,
        statements: list[Statement],
        heartbeat: Heartbeat,
        database: Database | None = None,
    ) -> ReplayResult:
        log = self.log.load()
        static = self.log.static()
        relations = dict(self.relations)
        if self.schedule is None:
            schedule = full_refresh_schedule(log)
            stamps = self.first_arrivals

            def deliver(session: Session, delivery: Delivery, attempt: int) -> None:
                tables = delivered_tables(
                    log, delivery.rows, (), self.arrival_column, stamps, static
                )
                for name, table in tables.items():
                    land(session, relations[name], table, self.mode)

        else:
            schedule = self.schedule
            deliver = deliverer(log, schedule, relations, self.mode, self.arrival_column, static)
        return replay(
            engine,
            statements,
            schedule,
            log,
            self.target,
            self.limits,
            heartbeat=heartbeat,
            cap=self.cap,
            deliver=deliver,
            database=database,
        )
