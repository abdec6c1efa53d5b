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
        if name in (n for n, _ in pairs):
            raise UsageError(f"--source {name}: named twice; give each source once.")
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


def per_source(flag: str, values: list[str], names: list[str]) -> dict[str, str]:
    """NAME=COL values per source; a bare COL is every other source's. An unknown NAME, a
    source named twice or two bare values is a UsageError."""
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
        if name not in names:
            raise _unknown(flag, value, name, names)
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
        if name not in names:
            raise _unknown("--static", name, name, names)
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
        if name not in key:
            flag = f"--key {name}=COL" if several else "--key COL"
            raise UsageError(f"check: source {name} has no key column; give {flag}.")
        if name not in when and name not in static:
            flag = f"--event-time {name}=COL" if several else "--event-time COL"
            raise UsageError(
                f"check: source {name} has no event-time column; give {flag} (or --static "
                f"{name} for a dimension delivered once)."
            )
        columns = LogColumns(
            key[name], when.get(name), entity.get(name), evolve.get(name), arrival_column
        )
        files.append(SourceFile(name, where, columns, name in static))
    return tuple(files)


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
    "per_source",
    "read_sources",
    "source_files",
    "split_source_flags",
]
