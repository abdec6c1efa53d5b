"""DuckDB behind the Engine protocol, locked down for untrusted SQL.

External access, Python replacement scans, extension install/load, persistent secrets and
spilling to disk are off; the configuration is locked after set-up; one thread, so floating sums
do not vary between identical runs. The database lives in memory: it persists across the sessions
(cursors) of one replay and leaves nothing on the host.
"""

from __future__ import annotations

import contextlib
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
_SECRET = re.compile(
    r"^\s*CREATE\s+(OR\s+REPLACE\s+)?(PERSISTENT\s+|TEMP(ORARY)?\s+)?SECRET\b", re.I
)
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
    def __init__(self, cursor: duckdb.DuckDBPyConnection, database: DuckDBDatabase) -> None:
        self._cursor = cursor
        self._database = database

    def load_batch(self, name: str, table: pa.Table) -> None:
        """`name` as a TEMP table holding exactly this delivery: it vanishes with the session."""
        view = "__arrivalbench_delivery"
        self._cursor.register(view, table)
        try:
            self._cursor.execute(f'CREATE TEMP TABLE "{name}" AS SELECT * FROM "{view}"')
        finally:
            self._cursor.unregister(view)

    def execute(self, sql: str) -> None:
        if not self._database.not_reusable and _NOT_REUSABLE.match(_COMMENTS.sub(" ", sql)):
            self._database.not_reusable = True
        self._cursor.execute(sql)

    def interrupt(self) -> None:
        self._cursor.interrupt()

    def read_table(self, name: str) -> pa.Table | None:
        """The table's rows, or None when no table or view of that name exists (other errors propagate)."""
        try:
            return self._cursor.sql(f'SELECT * FROM "{name}"').to_arrow_table()
        except duckdb.CatalogException:
            exists = self._cursor.execute(
                "SELECT count(*) FROM (SELECT table_name AS n FROM duckdb_tables() UNION ALL "
                "SELECT view_name FROM duckdb_views() WHERE NOT internal) WHERE lower(n) = lower(?)",
                [name],
            ).fetchall()[0][0]
            if exists:
                raise
            return None

    def close(self) -> None:
        self._cursor.close()


_USER_OBJECTS = """
SELECT 'SCHEMA', NULL, schema_name FROM duckdb_schemas() WHERE database_name = 'memory' AND NOT internal
UNION ALL SELECT 'VIEW', schema_name, view_name FROM duckdb_views() WHERE database_name = 'memory' AND NOT internal
UNION ALL SELECT 'TABLE', schema_name, table_name FROM duckdb_tables() WHERE database_name = 'memory'
UNION ALL SELECT 'SEQUENCE', schema_name, sequence_name FROM duckdb_sequences() WHERE database_name = 'memory'
UNION ALL SELECT 'INDEX', schema_name, index_name FROM duckdb_indexes() WHERE database_name = 'memory'
"""
_NOT_REUSABLE = re.compile(
    r"^\s*CREATE\s+(OR\s+REPLACE\s+)?(TEMP(ORARY)?\s+)?(MACRO|FUNCTION|TYPE)\b", re.I
)
"""Definitions after which a database is not reused: listing user functions or types costs more
than opening a new instance."""


def _ident(*parts: str | None) -> str:
    return ".".join('"' + p.replace('"', '""') + '"' for p in parts if p is not None)


class DuckDBDatabase:
    """The database of one replay: in memory, persisting across that replay's sessions.

    Opening a DuckDB instance costs ~28 ms, as much as a typical replay's statements, so a closed
    database goes back to its engine, which empties it and hands it to the next replay. It is
    reused only when emptying is provably complete: every schema, view, table, sequence and index
    is dropped until the catalog lists none, and a database in which a macro, function or type
    was defined is never reused.
    """

    def __init__(self, limits: Limits, engine: DuckDBEngine | None = None) -> None:
        self.limits = limits
        self.not_reusable = False
        self._engine = engine
        self._con = duckdb.connect(":memory:", config=_config(limits))
        self._con.execute("SET lock_configuration = true")

    def session(self) -> DuckDBSession:
        return DuckDBSession(self._con.cursor(), self)

    def reset(self) -> bool:
        """Drop every object a pipeline created; True when the catalog is provably empty again."""
        if self.not_reusable:
            return False
        cursor = self._con.cursor()
        try:
            for _ in range(5):  # a foreign key or a dependent view may need another pass
                objects = cursor.execute(_USER_OBJECTS).fetchall()
                if not objects:
                    return True
                for kind, schema, name in objects:
                    with contextlib.suppress(duckdb.Error):  # gone with a dependency, or next pass
                        cursor.execute(f"DROP {kind} IF EXISTS {_ident(schema, name)} CASCADE")
            return False
        except duckdb.Error:
            return False
        finally:
            cursor.close()

    def close(self) -> None:
        if self._engine is not None and self._engine.keep(self):
            return
        self._con.close()

    def destroy(self) -> None:
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

    def __init__(self) -> None:
        self._spare: DuckDBDatabase | None = None

    def open(self, limits: Limits) -> DuckDBDatabase:
        """An empty database: the emptied spare when its limits match, else a new instance."""
        spare, self._spare = self._spare, None
        if spare is not None and spare.limits == limits:
            return spare
        if spare is not None:
            spare.destroy()
        return DuckDBDatabase(limits, engine=self)

    def keep(self, database: DuckDBDatabase) -> bool:
        """Take a closed database back as the spare if it empties completely; False means close it."""
        if self._spare is not None or not database.reset():
            return False
        self._spare = database
        return True

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
