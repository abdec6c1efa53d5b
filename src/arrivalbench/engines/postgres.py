"""PostgreSQL (a real server, psycopg 3) behind the Engine protocol, locked down for untrusted SQL.

The server: one per grading process tree, started on first use in a private temporary folder
(initdb and the postmaster run as the `postgres` system user when the harness runs as root: the
server refuses root), listening only on a Unix socket in that folder, stopped when the process
that started it exits, however it exits (a watcher that holds a pipe from the owner stops it
when the pipe closes: SIGKILL included). `ARRIVALBENCH_POSTGRES` names the socket folder to the
sandbox workers (they inherit it); a server given there from outside is used and never stopped.

Isolation per replay: a new database created from an empty template (`arrivalbench_template`,
STRATEGY FILE_COPY; a schema per replay is ~25x cheaper but shares the catalog and the
statistics views, so another replay's tables and row counts would be visible and only
privileges would hide their rows) and a new login role (`replay_<hex>`, a member of the
`arrivalbench_sandbox` group that holds CREATE on the template's public schema): not a
superuser, no CREATEDB or CREATEROLE, CREATE on its own database only. Both are made and
dropped by the supervising process (`provision`, `reclaim`) on its long-lived admin
connection, never by the worker, so a killed worker leaves nothing; reclaiming ends the role's
sessions first. A role of its own means that nothing a role can keep (settings by ALTER ROLE
... SET) outlives the replay, and that a replay can neither see another replay's SQL in the
activity views nor cancel or terminate its sessions. A delivery is a connection; a crash
closes it mid-script (an open transaction rolls back).

Enforced by privilege (whatever the spelling, wherever a call hides: inside ts_stat's query
text, a view, a default): EXECUTE on REVOKED_FUNCTIONS (set_config, the functions that run SQL
text, advisory locks, NOTIFY, signalling backends) is revoked from PUBLIC in the template;
reading server files and programs needs roles the sandbox does not have. Limits:
`statement_timeout` (set at connection; SET is refused), `work_mem`, `temp_file_limit`
(superuser-only, so the script cannot raise it), and after every statement the database's
size (against the memory limit: PostgreSQL has no quota) and the locks the session holds
(LOCKS_PER_SESSION: PostgreSQL has no per-role bound, and a full lock table fails every
session's next lock, the harness's too); every server process's address space
(BACKEND_ADDRESS_SPACE); the replay's watchdog cancels the statement too.

Screening (the first layer, with the clearest messages) parses every statement with sqlglot's
PostgreSQL parser and refuses any kind other than a pipeline's (COPY, SET, RESET, DO, ALTER
other than ALTER TABLE, CREATE other than a table, view, index, sequence or schema, GRANT,
LISTEN, ...) and any call of a function on its list.
"""

from __future__ import annotations

import contextlib
import re
import resource
import uuid
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.tokens import TokenType

from arrivalbench.engines import POSTGRES, Limits, Statement, landing_ddl
from arrivalbench.engines.common import bounded_rows
from arrivalbench.engines.postgres_server import (  # noqa: F401 callers import these from here
    ADMIN,
    BACKEND_ADDRESS_SPACE,
    BIN_DIRS,
    ENV,
    MAX_LOCKS_PER_TRANSACTION,
    REVOKED_FUNCTIONS,
    SANDBOX,
    TEMPLATE,
    PostgresUnavailable,
    Server,
    _binary,
    _cap_address_space,
    _server_version,
    _stop_server,
    admin_connection,
    revoke_unneeded_functions,
    server_socket,
    wait_ready,
)
from arrivalbench.sqltypes import declared_type

LOCKS_PER_SESSION = 2_000
"""The heavyweight locks a replay's session may hold after a statement (PostgreSQL has no
per-role bound: one session can fill the whole table, and then every other session's next lock
fails with "out of shared memory"). A pipeline's transaction locks each relation it touches
once; past the bound the replay ends as an engine_crash, and its locks go with its session."""

ALLOWED = (
    exp.Select,
    exp.Union,
    exp.Intersect,
    exp.Except,
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.Analyze,
    exp.TruncateTable,
)
CREATABLE = frozenset({"TABLE", "VIEW", "INDEX", "SEQUENCE", "SCHEMA"})
DENIED_FUNCTIONS = frozenset(
    {
        "pg_read_file",
        "pg_read_binary_file",
        "pg_ls_dir",
        "pg_stat_file",
        "pg_ls_logdir",
        "pg_ls_waldir",
        "pg_ls_tmpdir",
        "pg_ls_archive_statusdir",
        "lo_import",
        "lo_export",
        "lo_from_bytea",
        "set_config",
        "pg_cancel_backend",
        "pg_terminate_backend",
        "pg_reload_conf",
        "pg_rotate_logfile",
        "pg_notify",
        "dblink",
        "dblink_exec",
        "dblink_connect",
        "pg_advisory_lock",
        "pg_advisory_xact_lock",
        "pg_try_advisory_lock",
        "pg_try_advisory_xact_lock",
        "pg_advisory_lock_shared",
        "pg_sleep_until",
        "query_to_xml",
        "query_to_xml_and_xmlschema",
        "table_to_xml",
        "cursor_to_xml",
        "pg_stat_get_activity",
    }
)
"""Functions that read the host, change settings, signal or lock other sessions, or run SQL
the screen never saw (query_to_xml runs its text argument)."""
DENIED_RELATIONS = frozenset({"pg_stat_activity", "pg_stat_statements", "pg_settings"})
"""Views that show other sessions' SQL (a replay running beside this one) or the settings."""


def _pg_type(field: pa.Field) -> str:
    return declared_type(field, double="DOUBLE PRECISION", decimal="NUMERIC")


def _connect(socket: str, dbname: str, role: str, options: str) -> Any:
    """A connection as the replay's role to the replay's database (a session or the observer)."""
    import psycopg

    return psycopg.connect(host=socket, user=role, dbname=dbname, autocommit=True, options=options)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _column(values: list[Any]) -> pa.Array:
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return pa.array([None if v is None else str(v) for v in values], pa.string())


def _cap_backend_memory(pid: int, extra_bytes: int) -> bool:
    """Cap a server backend's address space at its size now plus `extra_bytes`, so that a
    script's values (a row of 900 MB strings) end in PostgreSQL's own "out of memory" ERROR,
    not in the machine's OOM killer. False when the server runs as another user (a server given
    from outside without root): then only the timeouts bound a backend's memory."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))
        limit = size + extra_bytes
        resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))
    except (OSError, StopIteration, ValueError):
        return False
    return True


class DatabaseTooLarge(Exception):
    """The replay's database grew past its bound (PostgreSQL has no quota of its own)."""


class TooManyLocks(DatabaseTooLarge):
    """The replay's session holds more locks than LOCKS_PER_SESSION (after a statement)."""


class PostgresSession:
    def __init__(self, socket: str, dbname: str, role: str, limits: Limits) -> None:

        timeout_ms = max(1, int(limits.statement_timeout * 1000))
        temp_kb = max(limits.memory_bytes // 1024, 1024)
        self._max_bytes = limits.memory_bytes
        self._con = _connect(
            socket,
            dbname,
            role,
            f"-c statement_timeout={timeout_ms} -c work_mem=64MB "
            f"-c maintenance_work_mem=64MB -c temp_buffers=64MB -c search_path=public",
        )
        self._temp_kb = temp_kb
        self.memory_capped = _cap_backend_memory(self._con.info.backend_pid, limits.memory_bytes)

    def load_batch(self, name: str, table: pa.Table) -> None:
        columns = ", ".join(f"{_quote(f.name)} {_pg_type(f)}" for f in table.schema)
        cursor = self._con.cursor()
        cursor.execute(f"CREATE TEMP TABLE {_quote(name)} ({columns})")
        names = ", ".join(_quote(f.name) for f in table.schema)
        with cursor.copy(f"COPY pg_temp.{_quote(name)} ({names}) FROM STDIN") as copy:
            for row in zip(*(c.to_pylist() for c in table.columns), strict=True):
                copy.write_row(row)

    def append_batch(self, name: str, table: pa.Table) -> None:
        """Append this delivery to a persistent (landing) table `name` ('table' in public, or
        'schema.table'), created at the first delivery; a column the table lacks is added first,
        as a loader adds a new source column."""
        parts = name.split(".")
        schema = parts[0] if len(parts) == 2 else "public"
        quoted = ".".join(_quote(p) for p in (schema, parts[-1]))
        cursor = self._con.cursor()
        if schema != "public":
            cursor.execute(f"CREATE SCHEMA IF NOT EXISTS {_quote(schema)}")
        have = {
            row[0].lower()
            for row in cursor.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_schema = %s AND table_name = %s",
                [schema, parts[-1]],
            )
        }
        for statement in landing_ddl(
            quoted, table, have, lambda f: f"{_quote(f.name)} {_pg_type(f)}"
        ):
            cursor.execute(statement)
        names = ", ".join(_quote(f.name) for f in table.schema)
        with cursor.copy(f"COPY {quoted} ({names}) FROM STDIN") as copy:
            for row in zip(*(c.to_pylist() for c in table.columns), strict=True):
                copy.write_row(row)

    def execute(self, sql: str) -> None:
        cursor = self._con.cursor()
        # bytes: no %-placeholder parsing; binary forces the extended protocol, which runs one
        # statement only: text that PostgreSQL's lexer reads as two statements where sqlglot's
        # split saw one (a screened piece) is an error, never a second, unscreened statement
        cursor.execute(sql.encode(), prepare=False, binary=True)
        while cursor.nextset():
            pass
        size, locks = cursor.execute(
            "SELECT pg_database_size(current_database()), "
            "(SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid())"
        ).fetchone() or (0, 0)
        if size > self._max_bytes:
            raise DatabaseTooLarge(
                f"the replay's database grew to {size:,} bytes, past the {self._max_bytes:,} "
                "the memory limit allows (the limit bounds disk too)"
            )
        if locks > LOCKS_PER_SESSION:
            raise TooManyLocks(
                f"the replay's session holds {locks:,} locks, past the {LOCKS_PER_SESSION:,} "
                "allowed (the server's lock table is shared by every replay)"
            )

    def interrupt(self) -> None:
        self._con.cancel()

    def capture(self, name: str, into: str) -> int | None:
        import psycopg

        cursor = self._con.cursor()
        exists = cursor.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE lower(c.relname) = lower(%s) AND c.relkind IN ('r', 'v', 'm', 'p') "
            "AND (n.nspname = 'public' OR n.oid = pg_my_temp_schema())",
            [name],
        ).fetchone()
        if not exists or not exists[0]:
            return None
        try:
            cursor.execute(
                f"CREATE TEMP TABLE {_quote(into)} AS SELECT * FROM {_quote(name.lower())}"
            )
        except psycopg.errors.UndefinedTable:
            cursor.execute(f"CREATE TEMP TABLE {_quote(into)} AS SELECT * FROM {_quote(name)}")
        return int(cursor.rowcount)

    def read_table(self, name: str, max_bytes: int | None = None) -> pa.Table | None:
        cursor = self._con.cursor()
        cursor.execute(f"SELECT * FROM pg_temp.{_quote(name)}")
        names = [d.name for d in cursor.description or ()]
        rows = bounded_rows(cursor, names, max_bytes)
        if rows is None:
            return None
        arrays = [_column([row[i] for row in rows]) for i in range(len(names))]
        return pa.Table.from_arrays(arrays, names=names)

    def close(self) -> None:
        self._con.close()  # mid-script: the server rolls back the open transaction


_USER_NAMESPACES = (
    "SELECT oid FROM pg_catalog.pg_namespace WHERE nspname NOT IN ('pg_catalog', "
    "'information_schema', 'pg_toast') AND nspname !~ '^pg_(toast_)?temp_'"
)
_PG_CATALOG = (
    f"SELECT nspname FROM pg_catalog.pg_namespace WHERE oid IN ({_USER_NAMESPACES}) ORDER BY 1",
    "SELECT n.nspname, c.relname, c.relkind, c.relpersistence, CASE c.relkind "
    "WHEN 'v' THEN pg_catalog.pg_get_viewdef(c.oid) WHEN 'm' THEN pg_catalog.pg_get_viewdef(c.oid) "
    "WHEN 'i' THEN pg_catalog.pg_get_indexdef(c.oid) END FROM pg_catalog.pg_class c JOIN "
    "pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.relnamespace IN "
    f"({_USER_NAMESPACES}) ORDER BY 1, 2",
    "SELECT a.attrelid::pg_catalog.regclass::pg_catalog.text, a.attnum, a.attname, "
    "pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull, "
    "pg_catalog.pg_get_expr(d.adbin, d.adrelid) FROM pg_catalog.pg_attribute a JOIN "
    "pg_catalog.pg_class c ON c.oid = a.attrelid LEFT JOIN pg_catalog.pg_attrdef d ON "
    "d.adrelid = a.attrelid AND d.adnum = a.attnum WHERE a.attnum > 0 AND NOT a.attisdropped "
    f"AND c.relnamespace IN ({_USER_NAMESPACES}) ORDER BY 1, 2",
    "SELECT conrelid::pg_catalog.regclass::pg_catalog.text, conname, "
    "pg_catalog.pg_get_constraintdef(oid) FROM pg_catalog.pg_constraint WHERE connamespace IN "
    f"({_USER_NAMESPACES}) ORDER BY 1, 2",
    "SELECT schemaname, sequencename, start_value, increment_by, max_value, min_value, cycle, "
    "last_value FROM pg_catalog.pg_sequences WHERE schemaname::pg_catalog.text !~ "
    "'^pg_(toast_)?temp_' ORDER BY 1, 2",
)
"""Schemas, relations (views and indexes with their definitions), columns with types and
defaults, constraints, and sequences with their values (nextval is not transactional: a crash
keeps it). A script cannot create functions, operators, types or domains (the screen refuses
them), and every built-in here is qualified with pg_catalog."""
OBSERVER_LOCK_TIMEOUT_MS = 50
"""How long the observer waits for a lock the script's open transaction holds (an ALTER or a
TRUNCATE not yet committed) before it gives up: the replay then assumes the state changed."""


class PostgresObserver:
    """A connection of its own, as the replay's role, to the replay's database: it sees only
    committed rows, reads the catalog and each persistent table's row count and an
    order-independent hash of its rows."""

    def __init__(self, socket: str, dbname: str, role: str, limits: Limits) -> None:

        timeout_ms = max(1, int(limits.statement_timeout * 1000))
        self._con = _connect(
            socket,
            dbname,
            role,
            f"-c statement_timeout={timeout_ms} -c lock_timeout={OBSERVER_LOCK_TIMEOUT_MS} "
            "-c search_path=pg_catalog",
        )

    def committed_state(self, around: Statement) -> Hashable:
        cursor = self._con.cursor()
        parts: list[object] = [cursor.execute(query).fetchall() for query in _PG_CATALOG]
        tables = cursor.execute(
            "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
            f"ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p') AND c.relnamespace IN "
            f"({_USER_NAMESPACES}) ORDER BY 1, 2"
        ).fetchall()
        for schema, name in tables:
            parts.append(
                cursor.execute(
                    "SELECT pg_catalog.count(*), pg_catalog.sum(pg_catalog.hashtextextended("
                    f"(r.*)::pg_catalog.text, 0)) FROM {_quote(schema)}.{_quote(name)} AS r"
                ).fetchall()
            )
        return repr(parts)

    def interrupt(self) -> None:
        self._con.cancel()

    def close(self) -> None:
        self._con.close()


@dataclass(frozen=True)
class PostgresScratch:
    """One replay's database and login role (one name: roles and databases are separate
    namespaces), made and dropped by the supervising process."""

    socket: str
    name: str

    def __post_init__(self) -> None:
        if not _SCRATCH_NAME.fullmatch(self.name):
            raise ValueError(f"not a replay's name: {self.name!r}")


_SCRATCH_NAME = re.compile(r"replay_[0-9a-f]{32}")


class PostgresDatabase:
    """The database of one replay: created from the empty template, dropped with the replay
    (by the supervisor, who made it; or by `close` when it was made here, `owner` given)."""

    def __init__(
        self, limits: Limits, scratch: PostgresScratch, owner: PostgresEngine | None = None
    ) -> None:
        self.limits = limits
        self.socket = scratch.socket
        self.name = self.role = scratch.name
        self._scratch = scratch
        self._owner = owner

    def session(self) -> PostgresSession:
        return PostgresSession(self.socket, self.name, self.role, self.limits)

    def observer(self) -> PostgresObserver:
        return PostgresObserver(self.socket, self.name, self.role, self.limits)

    def close(self) -> None:
        if self._owner is not None:
            self._owner.reclaim(self._scratch)


def _function_names(tree: exp.Expression) -> set[str]:
    names = set()
    for func in tree.find_all(exp.Func):
        if isinstance(func, exp.Anonymous):
            names.add(func.name.lower())  # unquoted: "set_config"(...) is set_config
        else:
            names.add(func.sql_name().lower())
            names.update(n.lower() for n in func.sql_names() if isinstance(n, str))
    return names


class PostgresEngine:
    info = POSTGRES
    name = info.name
    errors: tuple[type[BaseException], ...]
    scratch_ahead = True
    """A replay's database and role take ~0.15-0.4 s to make: the supervisor makes the next
    one while a replay runs (scratch.Scratch)."""

    def __init__(self) -> None:
        import psycopg

        self.errors = (psycopg.Error, ScriptError, DatabaseTooLarge)
        self._trees: dict[str, exp.Expression] = {}
        self._admin_con: Any = None
        self.version = _server_version()
        server_socket()  # before any worker starts, so that every worker inherits it

    def split(self, script: str) -> list[Statement]:
        """Statements as sqlglot's PostgreSQL tokenizer splits them (dollar quotes included);
        each is parsed, and its kind is the parsed expression's class."""
        try:
            tokens = sqlglot.Dialect.get_or_raise("postgres").tokenize(script)
        except SqlglotError as exc:
            raise ScriptError(str(exc).splitlines()[0]) from None
        pieces: list[str] = []
        start = 0
        for token in tokens:
            if token.token_type == TokenType.SEMICOLON:
                pieces.append(script[start : token.start])
                start = token.end + 1
        pieces.append(script[start:])
        statements = []
        self._trees = {}
        for piece in pieces:
            text = piece.strip()
            if not text:
                continue
            try:
                parsed = sqlglot.parse_one(text, read="postgres")
            except SqlglotError as exc:
                raise ScriptError(str(exc).splitlines()[0][:500]) from None
            except RecursionError:  # sqlglot recurses once per nesting level
                raise ScriptError(
                    f"statement {len(statements) + 1} nests too deeply to parse "
                    "(PostgreSQL's own limit is about 1,000 levels too)"
                ) from None
            if parsed is None:
                continue
            kind = type(parsed).__name__.upper()
            statements.append(Statement(index=len(statements) + 1, text=text, kind=kind))
            self._trees[text] = parsed
        return statements

    def refusal(self, statement: Statement) -> str | None:
        parsed = self._trees.get(statement.text)  # parsed by split: sqlglot is slow (~12 s/MB)
        if parsed is None:
            parsed = sqlglot.parse_one(statement.text, read="postgres")
        verb = " ".join(statement.text.split()[:2]).upper()
        if not isinstance(parsed, ALLOWED):
            return f"{verb} statements are not allowed in a pipeline ({statement.kind})"
        if isinstance(parsed, exp.Create) and (parsed.kind or "").upper() not in CREATABLE:
            return (
                f"CREATE {parsed.kind} is not allowed in a pipeline "
                f"(it may create {', '.join(sorted(CREATABLE))})"
            )
        if isinstance(parsed, exp.Drop) and (parsed.kind or "").upper() not in CREATABLE:
            return f"DROP {parsed.kind} is not allowed in a pipeline"
        if isinstance(parsed, exp.Alter) and (parsed.args.get("kind") or "").upper() != "TABLE":
            return f"{verb} is not allowed in a pipeline (only ALTER TABLE)"
        denied = sorted(_function_names(parsed) & DENIED_FUNCTIONS)
        if denied:
            return f"the function {denied[0]} is not allowed in a pipeline"
        relations = {t.name.lower() for t in parsed.find_all(exp.Table)}
        if relations & DENIED_RELATIONS:
            return f"{sorted(relations & DENIED_RELATIONS)[0]} is not readable in a pipeline"
        return None

    def _admin(self, statements: list[str]) -> None:
        """Run harness DDL on this process's long-lived admin connection (a superuser's, which
        may use the reserved connection slots), reconnecting once if the server dropped it."""
        import psycopg

        for attempt in (1, 2):
            if self._admin_con is None or self._admin_con.closed:
                self._admin_con = admin_connection(server_socket())
            try:
                for statement in statements:
                    self._admin_con.execute(statement)
                return
            except psycopg.OperationalError:
                if attempt == 2 or not self._admin_con.closed:
                    raise
                self._admin_con = None

    def provision(self, limits: Limits) -> PostgresScratch:
        """A new login role (member of the sandbox group) and a database copied from the
        template, CREATE on it for schemas; what was made is dropped again if a step fails."""
        scratch = PostgresScratch(server_socket(), f"replay_{uuid.uuid4().hex}")
        name = scratch.name
        try:
            self._admin(
                [
                    f"CREATE ROLE {name} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE IN ROLE {SANDBOX}",
                    f"CREATE DATABASE {name} TEMPLATE {TEMPLATE} STRATEGY FILE_COPY",
                    f"GRANT CREATE ON DATABASE {name} TO {name}",
                    f"ALTER DATABASE {name} SET temp_file_limit = "
                    f"'{max(limits.memory_bytes // 1024, 1024)}kB'",
                ]
            )
        except BaseException:
            with contextlib.suppress(Exception):
                self.reclaim(scratch)
            raise
        return scratch

    def reclaim(self, scratch: object) -> None:
        """End every session of the replay's role (a killed worker's backend may still be
        running its statement), then drop its database and the role."""
        assert isinstance(scratch, PostgresScratch), scratch
        name = scratch.name
        self._admin(
            [
                f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{name}'",
                f"DROP DATABASE IF EXISTS {name} WITH (FORCE)",
                f"DROP ROLE IF EXISTS {name}",
            ]
        )

    def open(self, limits: Limits, scratch: object | None = None) -> PostgresDatabase:
        if scratch is None:
            return PostgresDatabase(limits, self.provision(limits), owner=self)
        assert isinstance(scratch, PostgresScratch), scratch
        return PostgresDatabase(limits, scratch)

    def classify(self, error: BaseException) -> str:
        import psycopg.errors as e

        if isinstance(error, DatabaseTooLarge):
            return "engine_crash"
        if isinstance(error, e.QueryCanceled):
            return "timeout"
        if isinstance(error, e.InsufficientPrivilege):
            return "sandbox_refused"
        if isinstance(error, e.OutOfMemory | e.DiskFull | e.ConfigurationLimitExceeded):
            return "engine_crash"
        if isinstance(error, e.OperationalError | e.InterfaceError):
            return "engine_crash"
        return "sql_error"

    def query(self, tables: dict[str, pa.Table], sql: str) -> pa.Table:
        """Trusted harness SQL (the oracle, DuckDB SQL) runs on DuckDB."""
        from arrivalbench.engines.duckdb import DuckDBEngine

        return DuckDBEngine().query(tables, sql)


class ScriptError(Exception):
    """The script does not parse as PostgreSQL (a sql_error for every replay of it)."""
