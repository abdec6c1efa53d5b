"""A user's event log, read once into the harness's `Log`, so the suite's schedule builders run over it.

The log is a Parquet, CSV or JSON file, or a table of a DuckDB database (`FILE.duckdb:TABLE`).
`--key` names the column that identifies an event (any type; unique, never NULL: the full
refresh sees each event once), `--event-time` its time (a timestamp or a date); the log is
ordered canonically (event time, ties by key) before any schedule is built, so the same file
gives the same schedules whatever its row order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from arrivalbench.errors import CheckInputError
from arrivalbench.logs import Log
from arrivalbench.spec import SourceSpec

READERS = {
    ".parquet": "read_parquet",
    ".pq": "read_parquet",
    ".csv": "read_csv",
    ".tsv": "read_csv",
    ".json": "read_json",
    ".jsonl": "read_json",
    ".ndjson": "read_json",
}
DATABASE_SUFFIXES = (".duckdb", ".db", ".ddb")


@dataclass(frozen=True)
class LogColumns:
    """The columns `check` is told about; only `key` and `event_time` are required (a static
    source, delivered once, needs no event time)."""

    key: str
    event_time: str | None
    entity_key: str | None = None
    evolving_column: str | None = None
    arrival_column: str | None = None


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _relation(where: str, flag: str = "--log ") -> tuple[str, str | None, str]:
    """(path, database table or None, the DuckDB table function) of a --log value (or of a
    --source NAME=PATH: `flag` is how messages show it)."""
    path, table = where, None
    for suffix in DATABASE_SUFFIXES:
        marker = suffix + ":"
        if marker in where:
            cut = where.rindex(marker) + len(suffix)
            path, table = where[:cut], where[cut + 1 :]
    suffix = Path(path).suffix.lower()
    if table is None and suffix in DATABASE_SUFFIXES:
        raise CheckInputError(
            f"{flag}{where}: a DuckDB database needs a table: {flag}{where}:TABLE "
            "(or SCHEMA.TABLE)."
        )
    if not Path(path).is_file():
        raise CheckInputError(
            f"{flag}{path}: file not found{resolved_hint(path)}; pass a Parquet, CSV or JSON file."
        )
    if table is None and suffix not in READERS:
        raise CheckInputError(
            f"{flag}{path}: unknown log format {suffix or '(no suffix)'!r}; give a .parquet, "
            ".csv or .json file, or FILE.duckdb:TABLE."
        )
    return path, table, READERS.get(suffix, "")


def resolved_hint(path: str | Path) -> str:
    """' (looked for /abs/path)' for a relative path, so a user run from another folder sees
    where the harness looked; '' for an absolute one."""
    given = Path(path)
    return "" if given.is_absolute() else f" (looked for {given.resolve()})"


def read_log(where: str, columns: LogColumns, source: str, named: bool = False) -> Log:
    """The log as a `Log` named for the source table, canonically ordered, its columns checked.

    Every problem is a CheckInputError naming the file and the column: a missing column, a NULL
    or repeated key, an event time that is not a timestamp or date or is NULL. `named`: one of
    several sources, so each message names the source too (`--key customers=id`). Without an
    event time (a static source) the log is ordered by key alone.
    """
    at = f"source {source} ({where})" if named else where
    flag = f"--source {source}=" if named else "--log "
    path, table, reader = _relation(where, flag)
    con = duckdb.connect(config={"threads": 1})
    try:
        if table is not None:
            con.execute(f"ATTACH {_sql_string(path)} AS userlog (READ_ONLY)")
            relation = "userlog." + ".".join(_q(p) for p in table.split("."))
        else:
            relation = f"{reader}({_sql_string(path)})"
        try:
            described = con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
        except duckdb.Error as exc:
            first = str(exc).splitlines()[0]
            raise CheckInputError(f"{flag}{where}: cannot read the log ({first}).") from None
        types = {name: kind for name, kind, *_ in described}
        if table is None and reader == "read_csv" and _no_csv_rows(con, path, relation):
            raise CheckInputError(f"{flag}{where}: the log has no rows.")
        _check_columns(at, columns, types, source if named else None)
        key = _q(columns.key)
        time = key if columns.event_time is None else _q(columns.event_time)
        nulls, repeats, no_time = con.execute(
            f"SELECT count(*) FILTER (WHERE {key} IS NULL), count({key}) - count(DISTINCT {key}), "
            f"count(*) FILTER (WHERE {time} IS NULL) FROM {relation}"
        ).fetchall()[0]
        key_flag = f"--key {source}={columns.key}" if named else f"--key {columns.key}"
        if nulls:
            raise CheckInputError(
                f"{key_flag}: {nulls:,} rows of {at} have a NULL key; every event "
                "needs a key (filter or fill them in the log)."
            )
        if repeats:
            raise CheckInputError(
                f"{key_flag}: {repeats:,} keys of {at} repeat; the log must hold each "
                "event once (deduplicate it, or name a column that identifies an event)."
            )
        if no_time:
            flag = f"--event-time {source}=" if named else "--event-time "
            raise CheckInputError(
                f"{flag}{columns.event_time}: {no_time:,} rows of {at} have no event "
                "time; fill or drop them in the log."
            )
        order = key if columns.event_time is None else f"{time}, {key}"
        data = con.sql(f"SELECT * FROM {relation} ORDER BY {order}").to_arrow_table()
    finally:
        con.close()
    if data.num_rows == 0:
        raise CheckInputError(f"{flag}{where}: the log has no rows.")
    if columns.arrival_column:  # stamped per delivery by the harness: the log's own values go
        lower = {n.lower(): n for n in data.column_names}
        if columns.arrival_column.lower() in lower:
            data = data.drop_columns([lower[columns.arrival_column.lower()]])
    spec = SourceSpec.model_construct(
        name=source,
        columns={name: str(types[name]) for name in data.column_names},
        generator=None,
        entity_key=columns.entity_key,
        evolving_column=columns.evolving_column,
    )
    return Log(
        task_id="check",
        kind="hidden",
        seed=0,
        source=spec,
        table=data,
        key_column=columns.key,
        time_column=columns.event_time or columns.key,
    )


def _no_csv_rows(con: duckdb.DuckDBPyConnection, path: str, relation: str) -> bool:
    """A 0-byte CSV (DuckDB reads it as one column, `column0`) or a header alone (every column
    VARCHAR): no rows, which is what to say, before any column or type complaint."""
    if Path(path).stat().st_size == 0:
        return True
    return con.execute(f"SELECT count(*) FROM {relation}").fetchall()[0][0] == 0


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _check_columns(
    where: str, columns: LogColumns, types: dict[str, str], source: str | None
) -> None:
    """Every named column present (else the file's columns and a "did you mean"), the event time
    a timestamp or date. `source`: one of several sources, named in each flag shown."""
    named = [
        ("--key", columns.key),
        ("--event-time", columns.event_time),
        ("--entity-key", columns.entity_key),
        ("--evolving-column", columns.evolving_column),
    ]
    for flag, column in named:
        if column is not None and column not in types:
            import difflib

            close = difflib.get_close_matches(column, list(types), n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            shown = f"{flag} {source}={column}" if source else f"{flag} {column}"
            raise CheckInputError(
                f"{shown}: no such column in {where} (columns: {', '.join(types)}).{hint}"
            )
    if columns.event_time is None:
        return
    kind = types[columns.event_time].upper()
    if not (kind.startswith("TIMESTAMP") or kind == "DATE"):
        shown = f"{source}={columns.event_time}" if source else columns.event_time
        raise CheckInputError(
            f"--event-time {shown}: is {kind} in {where}, not a timestamp or date; "
            "cast it in the log (e.g. to_timestamp(epoch_seconds))."
        )
