"""Comparing a replay's final table with the oracle's, for a target nobody declared.

The expected table's own columns and types are the declaration; columns named by
`--ignore-column` are dropped from both sides first. Rows match as a bag on a key chosen from
the expected table: the log's `--key` when the target carries it once per row, else the
shortest run of leading exact (non-floating) columns that is unique (pipelines list their key
first: `day` of `day, orders, revenue`), else every column. The suite's
typed, lossless comparison (compare.compare) does the rest.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import pyarrow as pa

from arrivalbench.compare import Comparison, compare
from arrivalbench.spec import TargetSpec
from arrivalbench.sqltypes import is_float


def drop_ignored(table: pa.Table, ignore: tuple[str, ...]) -> pa.Table:
    lower = {c.lower() for c in ignore}
    drop = [n for n in table.column_names if n.lower() in lower]
    return table.drop_columns(drop) if drop else table


def _unique(con: duckdb.DuckDBPyConnection, columns: list[str]) -> bool:
    listed = ", ".join('"' + c.replace('"', '""') + '"' for c in columns)
    row = con.execute(
        f"SELECT count(*) = count(DISTINCT ({listed})) FROM expected_in"
        if len(columns) > 1
        else f"SELECT count(*) = count(DISTINCT {listed}) AND count(*) = count({listed}) "
        "FROM expected_in"
    ).fetchall()[0]
    return bool(row[0])


def target_spec(expected: pa.Table, name: str, event_key: str) -> TargetSpec:
    """The declaration compare needs, read off the expected table."""
    con = duckdb.connect(config={"threads": 1, "enable_external_access": False})
    try:
        con.register("expected_in", expected)
        types = {
            column: kind
            for column, kind, *_ in con.execute("DESCRIBE SELECT * FROM expected_in").fetchall()
        }
        names = list(types)
        by_lower = {c.lower(): c for c in names}
        exact = [c for c in names if not is_float(types[c])]
        if event_key.lower() in by_lower and _unique(con, [by_lower[event_key.lower()]]):
            key = [by_lower[event_key.lower()]]
        else:
            key = next(
                (exact[:k] for k in range(1, len(exact) + 1) if _unique(con, exact[:k])), names
            )
    finally:
        con.close()
    return TargetSpec.model_construct(name=name, columns=types, key=key, tolerance={})


def compare_tables(
    expected: pa.Table,
    actual: pa.Table,
    spec: TargetSpec,
    ignore: tuple[str, ...],
    with_severity: bool = False,
) -> Comparison:
    return compare(expected, drop_ignored(actual, ignore), spec, with_severity=with_severity)


def comparing(
    name: str, event_key: str, ignore: tuple[str, ...]
) -> Callable[[pa.Table, pa.Table], Comparison]:
    """What verdict.judge compares with for a target called `name`: the expected table's own
    declaration, the ignored columns dropped from both sides."""

    def compared(expected: pa.Table, actual: pa.Table) -> Comparison:
        wanted = drop_ignored(expected, ignore)
        spec = target_spec(wanted, name, event_key)
        return compare_tables(wanted, actual, spec, ignore, with_severity=True)

    return compared


LATE = ("late_arrival", "out_of_order", "backfill")
REPEATED = ("duplicate_delivery", "crash_retry", "backfill")


def likely_cause(schedule: str, diff: dict) -> str | None:
    """The explain label a FAIL's shape points to (a label of explain.SENTENCES), or None.

    Read off the schedule's hazard and the diff's counts, not replayed: `grade`'s diagnosis
    replays counterfactual truths against a task's oracle, which a user's pipeline has none of.
    Rows missing under lateness are dropped late events; keys doubled under a redelivery are
    copies counted; a crash's other damage is its partial apply; values changed under
    reordering are arrival order taken for event order.
    """
    counts = diff.get("counts", {})
    if schedule == "schema_evolution":
        return "schema_column_lost"
    if counts.get("missing") and schedule in LATE:
        return "late_dropped"
    if (counts.get("duplicate_key") or counts.get("extra")) and schedule in REPEATED:
        return "duplicates_counted"
    if schedule == "crash_retry":
        return "crash_partial_apply"
    if counts.get("changed") and schedule == "out_of_order":
        return "arrival_order_wins"
    return None


def first_difference(diff: dict) -> str | None:
    """The first differing row of a FAIL's diff, in one line: what kind, then the row."""
    examples = diff.get("examples", {})
    for kind in ("missing", "extra", "duplicate_key", "changed", "schema", "uncomparable"):
        rows = examples.get(kind)
        if rows:
            row = rows[0]
            if kind == "changed":
                columns = ", ".join(
                    f"{name} expected {change.get('expected')}, got {change.get('actual')}"
                    for name, change in row.get("columns", {}).items()
                )
                return f"changed {_fields(row.get('key', {}))}: {columns}"
            return f"{kind.replace('_', ' ')} {_fields(row)}"
    return None


def _fields(row: dict) -> str:
    return "{" + ", ".join(f"{name}: {value}" for name, value in row.items()) + "}"
