"""Several sources of one check: `--source NAME=PATH` (repeatable; `--log` is the one-source form).

Each source has its own columns (`--key NAME=COL`, `--event-time NAME=COL`, ...; a bare `--key
COL` applies to every source not named). The streamed sources are one `Log` with one table per
source, so every schedule builder runs over their common spine and every hazard moves events of
every feed, exactly as for the suite's multi-source tasks. A source declared `--static NAME` (a
dimension) is not on the spine: it is delivered once, whole, with the first delivery (and with
the full refresh), and every later delivery carries it empty.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass

import pyarrow as pa

from arrivalbench.check.log import LogColumns, read_log
from arrivalbench.errors import UsageError
from arrivalbench.logs import Log


@dataclass(frozen=True)
class SourceFile:
    """One source: its name (the table the pipeline reads, or the dbt source SCHEMA.TABLE), the
    file it is read from, its columns, and whether it is delivered once, first."""

    name: str
    where: str
    columns: LogColumns
    static: bool = False


@dataclass(frozen=True)
class Sources:
    """What a check delivers: the streamed sources' log and the static sources' tables."""

    log: Log
    static: tuple[tuple[str, pa.Table], ...] = ()

    def fingerprint(self) -> str:
        """The record's `log_fingerprint`: the streamed log's (its events' keys and times), and
        with static sources, theirs too, by content (a dimension has no events: what it delivers
        is its whole table). Without static sources it is the log's own, as before."""
        if not self.static:
            return self.log.fingerprint()
        digest = hashlib.sha256(self.log.fingerprint().encode())
        for name, table in self.static:
            digest.update(b"\0" + name.encode() + b"\0" + _table_sha256(table).encode())
        return digest.hexdigest()


def _table_sha256(table: pa.Table) -> str:
    """sha256 of a table's columns, types and values (Arrow IPC of one chunk, no metadata)."""
    table = table.replace_schema_metadata(None).combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def split_source_flags(values: list[str]) -> tuple[str | None, list[tuple[str, str]]]:
    """--source values: (the one-source form's dbt source SCHEMA.TABLE or None, the NAME=PATH
    pairs in the order given). A malformed or repeated value is a UsageError."""
    plain = [v for v in values if "=" not in v]
    pairs: list[tuple[str, str]] = []
    for value in values:
        if "=" not in value:
            continue
        name, _, path = (part.strip() for part in value.partition("="))
        if not name or not path:
            raise UsageError(
                f"--source {value}: give NAME=PATH (e.g. --source raw.orders=orders.parquet)."
            )
        twice = [n for n, _ in pairs if n.lower() == name.lower()]
        if twice:
            also = "" if twice[0] == name else f" (as {twice[0]}: names are compared without case)"
            raise UsageError(f"--source {name}: named twice{also}; give each source once.")
        pairs.append((name, path))
    if len(plain) > 1 or (plain and pairs):
        raise UsageError(
            f"--source {plain[-1] if len(plain) > 1 else plain[0]}: give one dbt source with "
            "--log, or every source as NAME=PATH (--source raw.orders=orders.parquet ...)."
        )
    return (plain[0] if plain else None), pairs


def _unknown(flag: str, value: str, name: str, names: list[str]) -> UsageError:
    close = difflib.get_close_matches(name, names, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else ""
    return UsageError(
        f"{flag} {value}: no source named {name} (sources: {', '.join(names)}).{hint}"
    )


def _spelt(name: str, names: list[str]) -> str | None:
    """The source `name` refers to, compared without case (as SQL compares unquoted names)."""
    return next((n for n in names if n.lower() == name.lower()), None)


def per_source(flag: str, values: list[str], names: list[str]) -> dict[str, str]:
    """NAME=COL values per source (NAME compared without case); a bare COL is every other
    source's. An unknown NAME, a source named twice or two bare values is a UsageError."""
    named: dict[str, str] = {}
    bare: str | None = None
    for value in values:
        name, equals, column = (part.strip() for part in value.rpartition("="))
        if not equals:
            if bare is not None:
                raise UsageError(
                    f"{flag} {column}: given twice without a source; give {flag} NAME=COL per "
                    "source."
                )
            bare = column
            continue
        if _spelt(name, names) is None:
            raise _unknown(flag, value, name, names)
        name = _spelt(name, names) or name
        if not column:
            raise UsageError(f"{flag} {value}: give NAME=COL (a column of source {name}).")
        if name in named:
            raise UsageError(f"{flag} {name}: given twice; give one column per source.")
        named[name] = column
    return {n: named.get(n, bare) for n in names if named.get(n, bare) is not None}  # type: ignore[misc]


def source_files(
    pairs: list[tuple[str, str]],
    keys: list[str],
    event_times: list[str],
    entity_keys: list[str],
    evolving: list[str],
    static: list[str],
    arrival_column: str | None,
) -> tuple[SourceFile, ...]:
    """Each source with its own columns, checked against the names given (not yet the files)."""
    names = [n for n, _ in pairs]
    for name in static:
        if _spelt(name, names) is None:
            raise _unknown("--static", name, name, names)
    static = [_spelt(name, names) or name for name in static]
    if names and all(n in static for n in names):
        raise UsageError(
            "--static: every source is static; at least one source must arrive in batches."
        )
    key = per_source("--key", keys, names)
    when = per_source("--event-time", event_times, names)
    entity = per_source("--entity-key", entity_keys, names)
    evolve = per_source("--evolving-column", evolving, names)
    several = len(names) > 1
    files = []
    for name, where in pairs:
        if name not in key and name not in static:
            flag = f"--key {name}=COL" if several else "--key COL"
            raise UsageError(f"check: source {name} has no key column; give {flag}.")
        if name not in when and name not in static:
            flag = f"--event-time {name}=COL" if several else "--event-time COL"
            raise UsageError(
                f"check: source {name} has no event-time column; give {flag} (or --static "
                f"{name} for a dimension delivered once)."
            )
        columns = LogColumns(
            key.get(name), when.get(name), entity.get(name), evolve.get(name), arrival_column
        )
        files.append(SourceFile(name, where, columns, name in static))
    return tuple(files)


def check_read(script: str, files: tuple[SourceFile, ...], dialect: str) -> dict[str, str]:
    """Per source, the table it lands in: the pipeline's own spelling of it, as the engine
    resolves it (PostgreSQL folds an unquoted `Customers` to `customers`, so a source named
    CUSTOMERS lands where the pipeline reads). A source the pipeline never reads is refused (a
    misspelt --source NAME would otherwise be an ERROR on every schedule: the table the
    pipeline reads is never delivered), as is a source without a schema for a table the
    pipeline reads in one (`orders` for `raw.orders`: it would land in the default schema).
    Tables are read off sqlglot's parse in the engine's dialect, names compared without case;
    a script sqlglot cannot parse is left to the engine, each source landing under its name."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError
    from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

    as_given = {file.name: file.name for file in files}
    try:
        parsed = sqlglot.parse(script, read=dialect)
    except SqlglotError:
        return as_given
    tables = [t for statement in parsed if statement for t in statement.find_all(exp.Table)]
    spelt = [
        ".".join(p for p in (t.db, t.name) if p)
        for t in (normalize_identifiers(t.copy(), dialect=dialect) for t in tables if t.name)
    ]
    shown = sorted(
        {".".join(p.sql(dialect=dialect) for p in t.parts[-2:]) for t in tables if t.name}
    )
    landing: dict[str, str] = {}
    for file in files:
        same = [name for name in spelt if name.lower() == file.name.lower()]
        if not same:
            close = difflib.get_close_matches(file.name, shown, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise UsageError(
                f"--source {file.name}={file.where}: the pipeline reads no table {file.name} "
                f"(tables it names: {', '.join(shown) or 'none'}); name each source as the table "
                f"the pipeline reads.{hint}"
            )
        landing[file.name] = file.name if file.name in same else same[0]
    return landing


def read_sources(files: tuple[SourceFile, ...]) -> Sources:
    """Every source read and checked (each named in its errors when there are several), the
    streamed ones joined into one `Log` in the order given."""
    label = len(files) > 1
    read = [(f, read_log(f.where, f.columns, f.name, named=label)) for f in files]
    streamed = [one for f, one in read if not f.static]
    first = streamed[0]
    others = tuple((one.source, one.table) for one in streamed[1:])
    log = Log(
        task_id="check",
        kind="hidden",
        seed=0,
        source=first.source,
        table=first.table,
        others=others,
        key_column=first.key_column,
        time_column=first.time_column,
        source_columns=tuple((one.key_column, one.time_column) for one in streamed)
        if others
        else (),
    )
    return Sources(log, tuple((f.name, one.table) for f, one in read if f.static))


__all__ = [
    "SourceFile",
    "Sources",
    "check_read",
    "per_source",
    "read_sources",
    "source_files",
    "split_source_flags",
]
