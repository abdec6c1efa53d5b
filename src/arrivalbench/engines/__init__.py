"""Engines: one small protocol so SQLite, PostgreSQL or dbt can stand where DuckDB does."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from arrivalbench.errors import UnknownNameError, UsageError

if TYPE_CHECKING:  # Arrow only in signatures: the CLI imports Limits and ENGINES without it
    import pyarrow as pa

_MEMORY = re.compile(r"^(\d+(\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$", re.IGNORECASE)


@dataclass(frozen=True)
class Statement:
    """One statement of a script, as the engine's own parser split it."""

    index: int  # 1-based position in the script
    text: str
    kind: str  # the engine's statement type, e.g. "INSERT"


_UNITS = {"B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4}
_UNITS.update({"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40})
MIN_MEMORY_BYTES = 64 * 1000**2
"""Below this an engine cannot even hold a batch; a smaller limit is a typo (1KB for 1GB)."""


def memory_bytes(text: str) -> int:
    """Bytes in a size such as '512MB' or '2GiB' (the engine's own spelling: 1GB = 10^9 bytes)."""
    match = _MEMORY.match(text.strip())
    if not match:
        raise UsageError(f"memory limit must look like 512MB or 2GB; found {text!r}.")
    return int(float(match.group(1)) * _UNITS[match.group(3).upper()])


@dataclass(frozen=True)
class Limits:
    """What one replay may spend: every number an untrusted script could otherwise make unbounded.

    `statement_timeout` (seconds per statement), `memory_limit` (the engine's, per replay; the
    worker's address space is capped a fixed overhead above it), `replay_timeout` (seconds of
    wall time for a whole schedule, crash retries included) and `max_script_bytes` (a longer
    script is refused before it is parsed).
    """

    statement_timeout: float = 10.0
    memory_limit: str = "1GB"
    replay_timeout: float = 120.0
    max_script_bytes: int = 1_000_000

    def __post_init__(self) -> None:
        for name in ("statement_timeout", "replay_timeout"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                flag = "--" + name.replace("_", "-")
                raise UsageError(
                    f"{flag} must be a positive, finite number of seconds; found {value!r}."
                )
        if memory_bytes(self.memory_limit) < MIN_MEMORY_BYTES:
            raise UsageError(
                f"--memory-limit {self.memory_limit} is below the 64MB an engine needs to hold "
                "a batch; give e.g. 512MB or 1GB."
            )
        if not (isinstance(self.max_script_bytes, int) and self.max_script_bytes > 0):
            raise UsageError(
                f"--max-script-bytes must be a positive whole number; found {self.max_script_bytes!r}."
            )

    @property
    def memory_bytes(self) -> int:
        return memory_bytes(self.memory_limit)


def landing_ddl(
    table_sql: str,
    batch: pa.Table,
    have: set[str],
    column_sql: Callable[[pa.Field], str],
) -> list[str]:
    """What a landing table needs before this delivery is appended (`Session.append_batch`):
    its CREATE at the first delivery (`have`, the lower-case columns it has, is empty), else an
    ADD COLUMN for each delivered column it lacks. `column_sql` spells a column's definition."""
    if not have:
        return [f"CREATE TABLE {table_sql} ({', '.join(map(column_sql, batch.schema))})"]
    return [
        f"ALTER TABLE {table_sql} ADD COLUMN {column_sql(f)}"
        for f in batch.schema
        if f.name.lower() not in have
    ]


class Session(Protocol):
    def load_batch(self, name: str, table: pa.Table) -> None: ...
    def append_batch(self, name: str, table: pa.Table) -> None:
        """Append to a persistent (landing) table, creating it first, adding columns it lacks."""
        ...

    def execute(self, sql: str) -> None: ...
    def interrupt(self) -> None: ...
    def capture(self, name: str, into: str) -> int | None:
        """Evaluate table or view `name` into a session table `into` (a statement, so the caller
        can run it under the watchdog); its row count, or None when no such table or view exists."""
        ...

    def read_table(self, name: str, max_bytes: int | None = None) -> pa.Table | None:
        """A session table's rows; None once they exceed `max_bytes` (reading stops there)."""
        ...

    def close(self) -> None: ...


class Database(Protocol):
    """A database that persists across the sessions of one replay and shares nothing with any
    other: every replay opens a new one, so nothing an artifact made can reach another."""

    def session(self) -> Session: ...
    def close(self) -> None: ...


class Engine(Protocol):
    name: str
    version: str
    errors: tuple[type[BaseException], ...]

    def split(self, script: str) -> list[Statement]: ...
    def refusal(self, statement: Statement) -> str | None: ...
    def open(self, limits: Limits) -> Database: ...
    def classify(self, error: BaseException) -> str: ...
    def query(self, tables: dict[str, pa.Table], sql: str) -> pa.Table: ...


ENGINES = ("duckdb", "sqlite", "postgres")
"""Every engine a pipeline can be graded on. The oracle is always DuckDB's (see `oracle_engine`)."""


def get_engine(name: str = "duckdb") -> Engine:
    if name == "duckdb":
        from arrivalbench.engines.duckdb import DuckDBEngine

        return DuckDBEngine()
    if name == "sqlite":
        from arrivalbench.engines.sqlite import SQLiteEngine

        return SQLiteEngine()
    if name == "postgres":
        from arrivalbench.engines.postgres import PostgresEngine, PostgresUnavailable

        try:
            import psycopg  # noqa: F401  (the client every PostgreSQL session speaks through)
        except ImportError:
            raise PostgresUnavailable(
                "--engine postgres needs the psycopg client, which is not installed: "
                "pip install -e '.[postgres]' (make test installs it)."
            ) from None
        return PostgresEngine()
    raise UnknownNameError("engine", name, list(ENGINES))


def oracle_engine() -> Engine:
    """The one reference computation every engine's result is compared with: DuckDB over the
    complete log (comparison is typed, so the same truth serves every engine)."""
    return get_engine("duckdb")
