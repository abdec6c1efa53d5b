"""DuckDB behind the Engine protocol, locked down for untrusted SQL.

Isolation: every replay opens a new in-memory instance and closes it at the end. A DuckDB
instance holds more than its catalog (ENUM types can carry data, a macro named `sum` shadows the
built-in, secrets, the external-resource registry with memory outside `memory_limit`), and
proving all of it empty costs more than a new instance (~10 ms against ~15 ms to list functions
alone), so no instance is ever reused. Lock-down: external access, Python replacement scans,
extension install/load and persistent secrets are off; the temp directory and the allowed
paths are empty, so nothing on the host is readable; one thread, so floating sums do not vary
between identical runs; the configuration is locked before the pipeline's first statement.
Screening reads DuckDB's own parser (statement kinds) and tokenizer (leading keywords), never a
pattern over text: a comment is one token, however it nests or ends.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable

import duckdb
import pyarrow as pa

from arrivalbench.engines import DUCKDB, Limits, Statement
from arrivalbench.engines.common import refused_kind

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
CREATABLE = frozenset({"TABLE", "VIEW", "SEQUENCE", "INDEX", "SCHEMA", "MACRO", "FUNCTION", "TYPE"})
"""What CREATE may make; anything else (SECRET, or a kind a later DuckDB adds) is refused."""
_CREATE_MODIFIERS = frozenset({"OR", "REPLACE", "TEMP", "TEMPORARY", "UNIQUE", "PERSISTENT"})


NOWHERE = "/nonexistent-arrivalbench"
"""Where DuckDB is told its home, secret and extension folders are, so that no setting and no
error message names a folder of the host."""


def _config(limits: Limits) -> dict[str, object]:
    return {
        "python_enable_replacements": False,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "allow_persistent_secrets": False,
        "threads": 1,
        "memory_limit": limits.memory_limit,
        "max_temp_directory_size": "0B",
        "temp_directory": "",
        "home_directory": NOWHERE,
        "secret_directory": NOWHERE + "/secrets",
        "extension_directory": NOWHERE + "/extensions",
    }


def connect(limits: Limits) -> duckdb.DuckDBPyConnection:
    """A new locked-down in-memory instance.

    External access is switched off after connecting rather than in the config: with it off at
    start-up, DuckDB keeps `<cwd>/.tmp/` as an allowed directory and refuses to clear it.
    """
    con = duckdb.connect(":memory:", config=_config(limits))
    try:
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def leading_keywords(text: str, limit: int = 6) -> list[str]:
    """The statement's first keywords, upper-cased, as DuckDB's tokenizer reads them (comments skipped)."""
    words: list[str] = []
    tokens = duckdb.tokenize(text)
    for i, (start, kind) in enumerate(tokens):
        if kind == duckdb.token_type.comment:
            continue
        if kind != duckdb.token_type.keyword or len(words) >= limit:
            break
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(text)
        words.append(text[start:end].strip().upper())
    return words


def _statement_kind(statement: duckdb.Statement) -> str:
    try:
        return statement.type.name
    except ValueError:  # a statement type this DuckDB's Python enum does not know
        return "UNKNOWN"


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

    def append_batch(self, name: str, table: pa.Table) -> None:
        """Append this delivery to a persistent table `name` (a landing table), creating it at
        the first delivery; a column the table lacks is added first, as a loader adds a new
        source column. `name` may be 'schema.table'."""
        view = "__arrivalbench_delivery"
        parts = name.split(".")
        quoted = ".".join('"' + p.replace('"', '""') + '"' for p in parts)
        self._cursor.register(view, table)
        try:
            if len(parts) == 2:
                self._cursor.execute(f"CREATE SCHEMA IF NOT EXISTS {quoted.split('.')[0]}")
            have = {
                row[0].lower()
                for row in self._cursor.execute(
                    "SELECT column_name FROM duckdb_columns() WHERE NOT internal "
                    "AND lower(table_name) = lower(?) AND lower(schema_name) = lower(?)",
                    [parts[-1], parts[0] if len(parts) == 2 else "main"],
                ).fetchall()
            }
            if not have:
                self._cursor.execute(f'CREATE TABLE {quoted} AS SELECT * FROM "{view}"')
                return
            described = self._cursor.execute(f'DESCRIBE SELECT * FROM "{view}"').fetchall()
            for column, kind, *_ in described:
                if column.lower() not in have:
                    new = '"' + column.replace('"', '""') + '"'
                    self._cursor.execute(f"ALTER TABLE {quoted} ADD COLUMN {new} {kind}")
            self._cursor.execute(f'INSERT INTO {quoted} BY NAME SELECT * FROM "{view}"')
        finally:
            self._cursor.unregister(view)

    def execute(self, sql: str) -> None:
        self._cursor.execute(sql)

    def interrupt(self) -> None:
        self._cursor.interrupt()

    def capture(self, name: str, into: str) -> int | None:
        quoted = name.replace('"', '""')
        try:
            created = self._cursor.execute(
                f'CREATE TEMP TABLE "{into}" AS SELECT * FROM "{quoted}"'
            ).fetchall()
        except duckdb.CatalogException:  # no such table or view, or a view over a dropped table
            exists = self._cursor.execute(
                "SELECT count(*) FROM (SELECT table_name AS n FROM duckdb_tables() UNION ALL "
                "SELECT view_name FROM duckdb_views() WHERE NOT internal) WHERE lower(n) = lower(?)",
                [name],
            ).fetchall()[0][0]
            if exists:
                raise
            return None
        return int(created[0][0])

    def read_table(self, name: str, max_bytes: int | None = None) -> pa.Table | None:
        """A session table's rows, streamed so that reading stops (None) once past `max_bytes`
        (column names count too: a script chooses them)."""
        reader = self._cursor.sql(f'SELECT * FROM temp.main."{name}"').to_arrow_reader(65_536)
        batches, size = [], sum(len(n.encode()) for n in reader.schema.names)
        if max_bytes is not None and size > max_bytes:
            return None
        for batch in reader:
            size += batch.nbytes
            if max_bytes is not None and size > max_bytes:
                return None
            batches.append(batch)
        return pa.Table.from_batches(batches, schema=reader.schema)

    def close(self) -> None:
        self._cursor.close()


DATA_ONLY_KINDS = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "MERGE_INTO"})
"""Statement kinds (DuckDB's parser) that read the catalog but never change an entry of it:
around them the observer reads the cheap part of the state only (table contents, sequence
values, external resources), not the definitions of every catalog object (`duckdb_functions()`
alone costs ~20 ms). Any other kind, a COMMIT included, gets the whole state."""

_USER = "database_name NOT IN ('system', 'temp')"
"""Persistent objects only: the system catalog holds the built-ins, temp the session's own."""
_TABLES = (
    "SELECT database_name, schema_name, table_name, sql, comment, tags "
    f"FROM system.main.duckdb_tables() WHERE {_USER} AND NOT temporary ORDER BY 1, 2, 3"
)
_VALUES = (
    "SELECT 'sequence', schema_name, sequence_name, last_value FROM system.main.duckdb_sequences() "
    f"WHERE {_USER} AND NOT temporary ORDER BY 2, 3"
)
_RESOURCES = "SELECT * FROM system.main.duckdb_external_resources() ORDER BY ALL"
_CATALOG = (
    "SELECT schema_name, view_name, sql, comment, tags FROM system.main.duckdb_views() "
    f"WHERE {_USER} AND NOT internal AND NOT temporary ORDER BY 1, 2",
    "SELECT schema_name, index_name, table_name, sql, comment, tags, is_unique, is_primary "
    f"FROM system.main.duckdb_indexes() WHERE {_USER} ORDER BY 1, 2",
    "SELECT schema_name, sequence_name, sql, start_value, min_value, max_value, increment_by, "
    f"cycle, comment, tags FROM system.main.duckdb_sequences() WHERE {_USER} AND NOT temporary "
    "ORDER BY 1, 2",
    "SELECT schema_name, type_name, logical_type, labels, comment, tags FROM "
    f"system.main.duckdb_types() WHERE {_USER} AND NOT internal ORDER BY 1, 2",
    "SELECT database_name, schema_name, comment, tags, sql FROM system.main.duckdb_schemas() "
    f"WHERE {_USER} AND NOT internal ORDER BY 1, 2",
    "SELECT schema_name, function_name, function_type, parameters, parameter_types, varargs, "
    "return_type, macro_definition, comment, tags FROM system.main.duckdb_functions() "
    f"WHERE {_USER} AND NOT internal ORDER BY ALL",
)
"""Every catalog object a script can leave besides tables: views, indexes, sequences, types
(an ENUM holds data), schemas, macros and table macros. Secrets and triggers cannot be created."""


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class DuckDBObserver:
    """A connection of its own to the replay's instance (a cursor never handed to a script): it
    sees only committed data. Every built-in it calls is qualified (`system.main.hash`), so a
    macro the script named `hash`, `sum` or `duckdb_tables` cannot answer for it."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._cursor = con.cursor()

    def committed_state(self, around: Statement) -> Hashable:
        cursor = self._cursor
        tables = cursor.execute(_TABLES).fetchall()
        parts: list[object] = [tables]
        if tables:
            rows = " UNION ALL ".join(
                f"SELECT {i} AS k, system.main.count(*) AS n, "
                f"system.main.sum(system.main.hash(*COLUMNS(*))) AS h "
                f"FROM {_ident(db)}.{_ident(schema)}.{_ident(name)}"
                for i, (db, schema, name, *_) in enumerate(tables)
            )
            parts.append(cursor.execute(f"SELECT * FROM ({rows}) ORDER BY k").fetchall())
        parts.append(cursor.execute(_VALUES).fetchall())
        parts.append(cursor.execute(_RESOURCES).fetchall())
        if around.kind not in DATA_ONLY_KINDS:
            parts.extend(cursor.execute(query).fetchall() for query in _CATALOG)
        return hashlib.sha256(repr(parts).encode()).hexdigest()

    def interrupt(self) -> None:
        self._cursor.interrupt()

    def close(self) -> None:
        self._cursor.close()


class DuckDBDatabase:
    """The database of one replay: a new in-memory instance, persisting across that replay's
    sessions (cursors), closed with the replay."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._con = connect(limits)

    def session(self) -> DuckDBSession:
        return DuckDBSession(self._con.cursor())

    def observer(self) -> DuckDBObserver:
        return DuckDBObserver(self._con)

    def close(self) -> None:
        self._con.close()


class DuckDBEngine:
    info = DUCKDB
    name = info.name
    version = duckdb.__version__
    errors: tuple[type[BaseException], ...] = (duckdb.Error,)
    """Exceptions that are the pipeline's doing; anything else is a harness defect and propagates."""

    def split(self, script: str) -> list[Statement]:
        """Statements as DuckDB's own parser splits them (raises duckdb.ParserException)."""
        parsed = duckdb.extract_statements(script)
        return [
            Statement(
                index=i + 1, text=s.query.strip().rstrip(";").rstrip(), kind=_statement_kind(s)
            )
            for i, s in enumerate(parsed)
        ]

    def refusal(self, statement: Statement) -> str | None:
        """Why a statement may not run, or None: anything that changes the session, reaches
        outside, or creates something other than the catalog objects a pipeline needs."""
        words = leading_keywords(statement.text)
        return refused_kind(statement, words, ALLOWED_KINDS, CREATABLE, _CREATE_MODIFIERS)

    def provision(self, limits: Limits) -> None:
        """Nothing on the host: the instance lives in the worker's memory, and dies with it."""
        return None

    def reclaim(self, scratch: object) -> None:
        return None

    def open(self, limits: Limits, scratch: object | None = None) -> DuckDBDatabase:
        """A new, empty instance: never one another replay has used."""
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
        con = connect(Limits(memory_limit="4GB"))
        try:
            for name, table in tables.items():
                con.register(name, table)
            statements = duckdb.extract_statements(sql)
            for stmt in statements[:-1]:
                con.execute(stmt)
            return con.sql(statements[-1].query).to_arrow_table()
        finally:
            con.close()
