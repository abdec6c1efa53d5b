"""DuckDB behind the Engine protocol, locked down for untrusted SQL.

External access, Python replacement scans, extension install/load, persistent secrets and
spilling to disk are off; the configuration is locked after set-up; one thread, so floating sums
do not vary between identical runs. The database lives in memory: it persists across the sessions
(cursors) of one replay and leaves nothing on the host.
"""

from __future__ import annotations

import re

import duckdb
import pyarrow as pa

from arrivalbench.engines import Limits, Statement

ALLOWED_KINDS = frozenset(
    {
        "SELECT",
        "INSERT",
        "UPDATE",
        "DELETE",
        "CREATE",
        "DROP",
        "ALTER",
        "TRANSACTION",
        "MERGE_INTO",
        "ANALYZE",
    }
)
"""PREPARE, EXECUTE and EXPLAIN are out: each wraps another statement (EXPLAIN ANALYZE runs it),
which would then escape this screen."""
_SECRET = re.compile(r"^\s*CREATE\s+(OR\s+REPLACE\s+)?(PERSISTENT\s+|TEMP(ORARY)?\s+)?SECRET\b", re.I)
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)


def _config(limits: Limits) -> dict[str, object]:
    return {
        "enable_external_access": False,
        "python_enable_replacements": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "allow_persistent_secrets": False,
        "threads": 1,
        "memory_limit": limits.memory_limit,
        "max_temp_directory_size": "0B",
    }


class DuckDBSession:
    def __init__(self, cursor: duckdb.DuckDBPyConnection) -> None:
        self._cursor = cursor

    def load_batch(self, name: str, table: pa.Table) -> None:
        """`name` as a TEMP table holding exactly this delivery: it vanishes with the session."""
        view = "__arrivalbench_delivery"
        self._cursor.register(view, table)
        try:
            self._cursor.execute(f'CREATE TEMP TABLE "{name}" AS SELECT * FROM "{view}"')
        finally:
            self._cursor.unregister(view)

    def execute(self, sql: str) -> None:
        self._cursor.execute(sql)

    def interrupt(self) -> None:
        self._cursor.interrupt()

    def read_table(self, name: str) -> pa.Table | None:
        """The table's rows, or None when no table or view of that name exists (other errors propagate)."""
        exists = self._cursor.execute(
            "SELECT count(*) FROM (SELECT table_name AS n FROM duckdb_tables() UNION ALL "
            "SELECT view_name FROM duckdb_views() WHERE NOT internal) WHERE lower(n) = lower(?)",
            [name],
        ).fetchall()[0][0]
        if not exists:
            return None
        return self._cursor.sql(f'SELECT * FROM "{name}"').to_arrow_table()

    def close(self) -> None:
        self._cursor.close()


class DuckDBDatabase:
    def __init__(self, limits: Limits) -> None:
        self._con = duckdb.connect(":memory:", config=_config(limits))
        self._con.execute("SET lock_configuration = true")

    def session(self) -> DuckDBSession:
        return DuckDBSession(self._con.cursor())

    def close(self) -> None:
        self._con.close()


class DuckDBEngine:
    name = "duckdb"
    version = duckdb.__version__
    errors: tuple[type[BaseException], ...] = (duckdb.Error,)
    """Exceptions that are the pipeline's doing; anything else is a harness defect and propagates."""

    def split(self, script: str) -> list[Statement]:
        """Statements as DuckDB's own parser splits them (raises duckdb.ParserException)."""
        parsed = duckdb.extract_statements(script)
        return [
            Statement(index=i + 1, text=s.query.strip().rstrip(";").rstrip(), kind=s.type.name)
            for i, s in enumerate(parsed)
        ]

    def refusal(self, statement: Statement) -> str | None:
        """Why a statement may not run, or None: anything that changes the session or reaches outside."""
        bare = _COMMENTS.sub(" ", statement.text)
        if statement.kind not in ALLOWED_KINDS:
            words = bare.replace(";", " ").split(None, 1)
            verb = words[0].upper() if words else statement.kind
            return f"{verb} statements are not allowed in a pipeline ({statement.kind})"
        if statement.kind == "CREATE" and _SECRET.match(bare):
            return "CREATE SECRET is not allowed in a pipeline"
        return None

    def open(self, limits: Limits) -> DuckDBDatabase:
        return DuckDBDatabase(limits)

    def classify(self, error: BaseException) -> str:
        if isinstance(error, duckdb.InterruptException):
            return "timeout"
        if isinstance(error, duckdb.PermissionException):
            return "sandbox_refused"
        if isinstance(error, duckdb.OutOfMemoryException):
            return "engine_crash"
        return "sql_error"

    def query(self, tables: dict[str, pa.Table], sql: str) -> pa.Table:
        """Run trusted harness SQL (oracle, comparison) in a fresh, locked, single-threaded database."""
        con = duckdb.connect(":memory:", config=_config(Limits(memory_limit="4GB")))
        try:
            for name, table in tables.items():
                con.register(name, table)
            statements = duckdb.extract_statements(sql)
            for stmt in statements[:-1]:
                con.execute(stmt)
            return con.sql(statements[-1].query).to_arrow_table()
        finally:
            con.close()
