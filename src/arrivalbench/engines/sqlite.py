"""SQLite (the standard library's sqlite3) behind the Engine protocol, locked down for untrusted SQL.

Isolation: every replay gets a new database file in a private temporary folder (mode 0700),
made by the supervising process before the job and removed by it after the worker answers or
dies (a killed worker cannot leave a replay's file behind); every delivery is a new connection to it (TEMP tables vanish with it,
an open transaction rolls back when it closes: the crash). Nothing else is shared: SQLite has
no server, no catalog outside the file and no user-defined functions a script can create.

Lock-down, in three layers:
- *screening* reads SQLite's own lexical rules (strings, quoted names, `--` and unterminated
  `/*` comments) and refuses any statement whose leading keywords are not a pipeline's
  (ATTACH, DETACH, PRAGMA, VACUUM, which writes a file and is not seen by the authorizer,
  EXPLAIN, REINDEX, CREATE TRIGGER or VIRTUAL TABLE);
- the *authorizer*, which SQLite consults while compiling every statement whatever its
  spelling, allows only an explicit list of actions: it denies ATTACH, DETACH, PRAGMA except
  a read-only list, triggers, virtual tables, `load_extension` and `fts3_tokenizer`, any
  database other than main and temp, and writes to the schema tables by a statement that is
  not CREATE, DROP or ALTER;
- *limits*: a progress handler interrupts a statement past its timeout (the replay's watchdog
  interrupts too), `hard_heap_limit` bounds the heap, temporary storage is in memory,
  `max_page_count` bounds the file, and SQLite's own limits bound one string, one statement,
  the columns and the attached databases (none).
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Hashable
from typing import Any

import pyarrow as pa

from arrivalbench.engines import SQLITE, Limits, Statement, landing_ddl
from arrivalbench.engines.common import bounded_rows, refused_kind, scratch_parent
from arrivalbench.sqltypes import declared_type

ALLOWED_LEADING = frozenset(
    {
        "SELECT",
        "WITH",
        "VALUES",
        "INSERT",
        "REPLACE",
        "UPDATE",
        "DELETE",
        "CREATE",
        "DROP",
        "ALTER",
        "BEGIN",
        "COMMIT",
        "END",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
        "ANALYZE",
    }
)
"""Statements a pipeline may run. EXPLAIN wraps another statement; PRAGMA, ATTACH, DETACH and
VACUUM (VACUUM INTO writes a file) change the session or reach outside; a PRAGMA that only reads
the catalog (READ_ONLY_PRAGMAS) is allowed."""
CREATABLE = frozenset({"TABLE", "VIEW", "INDEX"})
_CREATE_MODIFIERS = frozenset({"TEMP", "TEMPORARY", "UNIQUE"})
SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_temp_master", "sqlite_schema"})
DATABASES = frozenset({"main", "temp"})
READ_ONLY_PRAGMAS = frozenset(
    {"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo"}
)
"""The pragmas a script may run (only reading the catalog). Every other pragma is denied:
writable_schema, temp_store_directory, journal_mode and the limits the harness set."""
DENIED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer"})

_ALLOWED_ACTIONS = frozenset(
    getattr(sqlite3, name)
    for name in (
        "SQLITE_SELECT",
        "SQLITE_READ",
        "SQLITE_INSERT",
        "SQLITE_UPDATE",
        "SQLITE_DELETE",
        "SQLITE_CREATE_TABLE",
        "SQLITE_CREATE_TEMP_TABLE",
        "SQLITE_CREATE_VIEW",
        "SQLITE_CREATE_TEMP_VIEW",
        "SQLITE_CREATE_INDEX",
        "SQLITE_CREATE_TEMP_INDEX",
        "SQLITE_DROP_TABLE",
        "SQLITE_DROP_TEMP_TABLE",
        "SQLITE_DROP_VIEW",
        "SQLITE_DROP_TEMP_VIEW",
        "SQLITE_DROP_INDEX",
        "SQLITE_DROP_TEMP_INDEX",
        "SQLITE_ALTER_TABLE",
        "SQLITE_TRANSACTION",
        "SQLITE_SAVEPOINT",
        "SQLITE_FUNCTION",
        "SQLITE_RECURSIVE",
        "SQLITE_ANALYZE",
        "SQLITE_REINDEX",  # CREATE INDEX asks for it
        "SQLITE_PRAGMA",
    )
)
_SCHEMA_WRITES = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE})
_DDL = frozenset({"CREATE", "DROP", "ALTER", "ANALYZE"})
"""Statements that may write the schema table (ANALYZE creates sqlite_stat1 there)."""

PROGRESS_STEPS = 10_000
"""Virtual-machine instructions between two looks at the statement's deadline (~1 ms)."""
HEAP_OVERHEAD_BYTES = 64 << 20
MAX_LENGTH = 256 << 20
"""The longest string or blob a script may make (SQLite's default is 1 GB)."""
PAGE_SIZE = 4096


def tokens(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every token, by SQLite's lexical rules; kind is 'word', 'string',
    'quoted', ';', 'comment' or 'other'. A string or quoted name left open runs to the end."""
    out: list[tuple[int, int, str]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        start = i
        if c == "-" and text.startswith("--", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
            out.append((start, i, "comment"))
        elif c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            out.append((start, i, "comment"))
        elif c in "'\"`[":
            close = "]" if c == "[" else c
            i += 1
            while i < n:
                if text[i] == close:
                    if close != "]" and i + 1 < n and text[i + 1] == close:
                        i += 2
                        continue
                    i += 1
                    break
                i += 1
            out.append((start, i, "string" if c == "'" else "quoted"))
        elif c == ";":
            i += 1
            out.append((start, i, ";"))
        elif c.isalnum() or c == "_" or ord(c) > 127:
            while i < n and (text[i].isalnum() or text[i] in "_$" or ord(text[i]) > 127):
                i += 1
            out.append((start, i, "word"))
        else:
            i += 1
            out.append((start, i, "other"))
    return out


def leading_keywords(text: str, limit: int = 6) -> list[str]:
    """The statement's first words, upper-cased, comments skipped (stops at the first non-word)."""
    words: list[str] = []
    for start, end, kind in tokens(text):
        if kind == "comment":
            continue
        if kind != "word" or len(words) >= limit:
            break
        words.append(text[start:end].upper())
    return words


def _first_keyword(text: str) -> str:
    words = leading_keywords(text, 1)
    return words[0] if words else ""


def _sql_type(field: pa.Field) -> str:
    """The declared type of a delivery column: DuckDB's name, whose SQLite affinity fits."""
    return declared_type(field, double="DOUBLE", decimal="DECIMAL")


def _timestamp_text(value: dt.datetime) -> str:
    """DuckDB's own text for a timestamp (the comparator casts text back to TIMESTAMP with it)."""
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text


def _sqlite_value(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return _timestamp_text(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bool):
        return int(value)
    return value


def _column(values: list[Any]) -> pa.Array:
    """An Arrow column from SQLite's values, whose types may differ row by row: integers,
    integers with floats (float64), text, blobs; anything mixed with text becomes text."""
    kinds = {type(v) for v in values if v is not None}
    if kinds <= {int}:
        try:
            return pa.array(values, pa.int64())
        except OverflowError:  # pragma: no cover - SQLite integers are 64-bit
            pass
    if kinds <= {int, float}:
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    if kinds <= {bytes}:
        return pa.array(values, pa.binary())
    return pa.array(
        [None if v is None else (v.hex() if isinstance(v, bytes) else str(v)) for v in values],
        pa.string(),
    )


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class SQLiteSession:
    """One delivery: a new connection to the replay's database file."""

    def __init__(self, path: str, limits: Limits) -> None:
        self._limits = limits
        self._deadline: float | None = None
        self._ddl = False
        self._con = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            con = self._con
            con.execute(f"PRAGMA hard_heap_limit = {limits.memory_bytes + HEAP_OVERHEAD_BYTES}")
            con.execute("PRAGMA temp_store = MEMORY")
            con.execute(f"PRAGMA max_page_count = {max(limits.memory_bytes // PAGE_SIZE, 1024)}")
            con.execute("PRAGMA trusted_schema = OFF")
            con.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
            con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_LENGTH)
            con.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, max(limits.max_script_bytes, 1 << 20))
            con.setlimit(sqlite3.SQLITE_LIMIT_TRIGGER_DEPTH, 1)
            con.set_progress_handler(self._progress, PROGRESS_STEPS)
            con.set_authorizer(self._authorize)
        except BaseException:
            self._con.close()
            raise

    def _progress(self) -> int:
        return int(self._deadline is not None and time.monotonic() >= self._deadline)

    def _authorize(
        self, action: int, arg1: str | None, arg2: str | None, database: str | None, _: Any
    ) -> int:
        deny = sqlite3.SQLITE_DENY
        if action not in _ALLOWED_ACTIONS:
            return deny
        if database is not None and database not in DATABASES:
            return deny
        if action == sqlite3.SQLITE_PRAGMA:
            return sqlite3.SQLITE_OK if (arg1 or "").lower() in READ_ONLY_PRAGMAS else deny
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
            return deny
        if action in _SCHEMA_WRITES and (arg1 or "").lower() in SCHEMA_TABLES and not self._ddl:
            return deny
        return sqlite3.SQLITE_OK

    def _run(self, sql: str, parameters: Any = ()) -> sqlite3.Cursor:
        self._ddl = _first_keyword(sql) in _DDL
        self._deadline = time.monotonic() + self._limits.statement_timeout
        try:
            return self._con.execute(sql, parameters)
        finally:
            self._deadline = None

    def load_batch(self, name: str, table: pa.Table) -> None:
        """`name` as a TEMP table holding exactly this delivery: it vanishes with the connection."""
        columns = ", ".join(f"{_quote(f.name)} {_sql_type(f)}" for f in table.schema)
        self._run(f"CREATE TEMP TABLE {_quote(name)} ({columns})")
        self._ddl = False
        marks = ", ".join("?" * table.num_columns)
        rows = zip(*(table.column(i).to_pylist() for i in range(table.num_columns)), strict=True)
        self._con.executemany(
            f"INSERT INTO temp.{_quote(name)} VALUES ({marks})",
            ([_sqlite_value(v) for v in row] for row in rows),
        )

    def append_batch(self, name: str, table: pa.Table) -> None:
        """Append this delivery to a persistent (landing) table `name` of the replay's database,
        created at the first delivery; a column the table lacks is added first, as a loader adds
        a new source column. SQLite has no schemas: `name` is a bare name."""
        if "." in name:
            raise ValueError(f"{name}: SQLite has no schemas; a landing table is a bare name")
        quoted = _quote(name)
        have = {row[1].lower() for row in self._con.execute(f"PRAGMA main.table_info({quoted})")}
        for statement in landing_ddl(
            f"main.{quoted}", table, have, lambda f: f"{_quote(f.name)} {_sql_type(f)}"
        ):
            self._run(statement)
        self._ddl = False
        self._deadline = None
        names = ", ".join(_quote(f.name) for f in table.schema)
        marks = ", ".join("?" * table.num_columns)
        rows = zip(*(table.column(i).to_pylist() for i in range(table.num_columns)), strict=True)
        self._con.executemany(
            f"INSERT INTO main.{quoted} ({names}) VALUES ({marks})",
            ([_sqlite_value(v) for v in row] for row in rows),
        )

    def execute(self, sql: str) -> None:
        cursor = self._run(sql)
        self._deadline = time.monotonic() + self._limits.statement_timeout
        try:
            while cursor.fetchmany(1024):  # a SELECT runs to its end, as in DuckDB
                pass
        finally:
            self._deadline = None

    def interrupt(self) -> None:
        self._con.interrupt()

    def capture(self, name: str, into: str) -> int | None:
        try:
            self._run(f"CREATE TEMP TABLE {_quote(into)} AS SELECT * FROM {_quote(name)}")
        except sqlite3.OperationalError as exc:
            if not str(exc).startswith("no such table"):
                raise
            exists = self._con.execute(
                "SELECT count(*) FROM (SELECT name FROM sqlite_master UNION ALL "
                "SELECT name FROM sqlite_temp_master) WHERE lower(name) = lower(?)",
                [name],
            ).fetchall()[0][0]
            if exists:
                raise
            return None
        return int(self._run(f"SELECT count(*) FROM temp.{_quote(into)}").fetchall()[0][0])

    def read_table(self, name: str, max_bytes: int | None = None) -> pa.Table | None:
        """A session table's rows, read in chunks; None once past `max_bytes` (text and blobs
        count their bytes, every other value eight)."""
        cursor = self._run(f"SELECT * FROM temp.{_quote(name)}")
        names = [d[0] for d in cursor.description]
        rows = bounded_rows(cursor, names, max_bytes)
        if rows is None:
            return None
        arrays = [_column([row[i] for row in rows]) for i in range(len(names))]
        return pa.Table.from_arrays(arrays, names=[f"{n}" for n in names]) if names else None

    def close(self) -> None:
        self._con.close()  # without a commit: an open transaction rolls back


class SQLiteObserver:
    """A connection of its own to the replay's file, never handed to a script. Its fingerprint is
    SQLite's own change counter for that connection, `PRAGMA data_version`, which changes exactly
    when another connection committed a change to the file (catalog and rows alike: SQLite keeps
    both in it, and the script's connection is the only other one): a proof that costs
    microseconds instead of reading every table. While the script's open transaction holds the
    file's exclusive lock (a spilled cache) the pragma raises 'database is locked'."""

    def __init__(self, path: str) -> None:
        self._con = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=0)

    def committed_state(self, around: Statement) -> Hashable:
        return int(self._con.execute("PRAGMA data_version").fetchone()[0])

    def interrupt(self) -> None:
        self._con.interrupt()

    def close(self) -> None:
        self._con.close()


def scratch_folder(limits: Limits) -> str:
    """A new private folder (0700) for one replay's database file (common.scratch_parent: in RAM
    where there is room for the file at its cap)."""
    folder = tempfile.mkdtemp(
        prefix="arrivalbench-sqlite-", dir=scratch_parent(limits.memory_bytes)
    )
    os.chmod(folder, 0o700)
    return folder


class SQLiteDatabase:
    """The database of one replay: a file in a private folder, the supervisor's (`folder`,
    which it removes) or, with none given, its own (removed by `close`)."""

    def __init__(self, limits: Limits, folder: str | None = None) -> None:
        self.limits = limits
        self._owned = folder is None
        self._folder = scratch_folder(limits) if folder is None else folder
        self.path = os.path.join(self._folder, "replay.db")

    def session(self) -> SQLiteSession:
        return SQLiteSession(self.path, self.limits)

    def observer(self) -> SQLiteObserver:
        return SQLiteObserver(self.path)

    def close(self) -> None:
        if self._owned:
            shutil.rmtree(self._folder, ignore_errors=True)


class SQLiteEngine:
    info = SQLITE
    name = info.name
    version = sqlite3.sqlite_version
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
    dialect = info.dialect

    def split(self, script: str) -> list[Statement]:
        """Statements split at semicolons outside strings, quoted names and comments; a piece
        SQLite does not see as complete (a trigger body) is joined to the next."""
        pieces: list[str] = []
        start = 0
        pending = ""
        for begin, _, kind in tokens(script):
            if kind != ";":
                continue
            piece = pending + script[start : begin + 1]
            start = begin + 1
            if sqlite3.complete_statement(piece):
                pieces.append(piece)
                pending = ""
            else:
                pending = piece
        rest = pending + script[start:]
        if rest.strip():
            pieces.append(rest)
        statements = []
        for piece in pieces:
            text = piece.strip().rstrip(";").rstrip()
            words = leading_keywords(text)
            if not words and all(k == "comment" for *_, k in tokens(text)):
                continue  # only comments or an empty statement
            kind = words[0] if words else "UNKNOWN"
            statements.append(Statement(index=len(statements) + 1, text=text, kind=kind))
        return statements

    def refusal(self, statement: Statement) -> str | None:
        words = leading_keywords(statement.text)
        if statement.kind == "PRAGMA" and len(words) > 1 and words[1].lower() in READ_ONLY_PRAGMAS:
            return None  # the authorizer checks the pragma again, whatever its spelling
        refused = refused_kind(statement, words, ALLOWED_LEADING, CREATABLE, _CREATE_MODIFIERS)
        if refused is not None:
            return refused
        return None

    def provision(self, limits: Limits) -> str:
        """The replay's folder, made by the supervisor (a killed worker cannot leave it behind:
        the file of a large replay is up to the memory limit)."""
        return scratch_folder(limits)

    def reclaim(self, scratch: object) -> None:
        assert isinstance(scratch, str) and os.path.basename(scratch).startswith(
            "arrivalbench-sqlite-"
        ), scratch
        shutil.rmtree(scratch, ignore_errors=True)
        if os.path.exists(scratch):
            raise OSError(f"could not remove {scratch}")

    def open(self, limits: Limits, scratch: object | None = None) -> SQLiteDatabase:
        """A new, empty database file: never one another replay has used."""
        assert scratch is None or isinstance(scratch, str)
        return SQLiteDatabase(limits, scratch)

    def classify(self, error: BaseException) -> str:
        message = str(error).lower()
        if message == "interrupted":
            return "timeout"
        if any(m in message for m in ("not authorized", "prohibited", "may not be modified")):
            return "sandbox_refused"
        if isinstance(error, sqlite3.DataError) or any(
            m in message for m in ("out of memory", "database or disk is full", "too big")
        ):
            return "engine_crash"
        return "sql_error"

    def query(self, tables: dict[str, pa.Table], sql: str) -> pa.Table:
        """Trusted harness SQL (the oracle, written in DuckDB SQL) runs on DuckDB."""
        from arrivalbench.engines.duckdb import DuckDBEngine

        return DuckDBEngine().query(tables, sql)
