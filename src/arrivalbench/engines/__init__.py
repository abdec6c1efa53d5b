"""Engines: one small protocol so SQLite, PostgreSQL or dbt can stand where DuckDB does."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa

from arrivalbench.errors import UnknownNameError, UsageError

_MEMORY = re.compile(r"^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$", re.IGNORECASE)


@dataclass(frozen=True)
class Statement:
    """One statement of a script, as the engine's own parser split it."""

    index: int  # 1-based position in the script
    text: str
    kind: str  # the engine's statement type, e.g. "INSERT"


@dataclass(frozen=True)
class Limits:
    """Per-statement time limit (seconds) and per-replay engine memory limit (e.g. '1GB')."""

    statement_timeout: float = 10.0
    memory_limit: str = "1GB"

    def __post_init__(self) -> None:
        if not self.statement_timeout > 0:
            raise UsageError(
                f"statement timeout must be a positive number of seconds; found {self.statement_timeout}."
            )
        if not _MEMORY.match(self.memory_limit.strip()):
            raise UsageError(
                f"memory limit must look like 512MB or 2GB; found {self.memory_limit!r}."
            )


class Session(Protocol):
    def load_batch(self, name: str, table: pa.Table) -> None: ...
    def execute(self, sql: str) -> None: ...
    def interrupt(self) -> None: ...
    def read_table(self, name: str) -> pa.Table | None: ...
    def close(self) -> None: ...


class Database(Protocol):
    """A database that persists across sessions for one replay; gone when closed."""

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


def get_engine(name: str = "duckdb") -> Engine:
    if name == "duckdb":
        from arrivalbench.engines.duckdb import DuckDBEngine

        return DuckDBEngine()
    raise UnknownNameError("engine", name, ["duckdb"])
