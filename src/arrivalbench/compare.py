"""Typed comparison of a pipeline's final table with the oracle's.

Rows match as a bag on the task's key; NULL equals NULL (in keys and values); a value matches only
if converting it to the declared type loses nothing (floating values for exact columns: up to
floating-point noise), float columns within their tolerance; order never matters. Differences are typed —
schema, missing, extra, duplicate_key, changed — with counts and up to three example rows per kind,
sorted NULL-safely by key. The share of right rows is reported beside the verdict, never used for it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import duckdb
import pyarrow as pa

from arrivalbench.replay import bounded_message
from arrivalbench.spec import TargetSpec
from arrivalbench.sqltypes import arrow_type, is_float

EXAMPLES = 3
KINDS = ("schema", "missing", "extra", "duplicate_key", "changed")


@dataclass(frozen=True)
class Comparison:
    equal: bool
    diff: dict[str, Any]


def jsonable(value: object) -> object:
    """A value as stable JSON: exact decimals and times as strings, NaN and infinities spelled out."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _schema_diff(actual: pa.Table, target: TargetSpec) -> dict[str, Any] | None:
    lower = [n.lower() for n in actual.column_names]
    wanted = {c.lower() for c in target.columns}
    missing = [c for c in target.columns if c.lower() not in lower]
    extra = [n for n in actual.column_names if n.lower() not in wanted]
    twice = sorted({n for n in actual.column_names if lower.count(n.lower()) > 1})
    if not (missing or extra or twice):
        return None
    return {"missing_columns": missing, "extra_columns": extra, "ambiguous_columns": twice}


def _matches(column: str, index: int, target: TargetSpec) -> str:
    """SQL predicate, never NULL: expected e.col matches actual a.col.

    NULL equals only NULL; NaN only NaN; an infinity only the same infinity; other floats within
    the column's tolerance; every other type exactly. An actual value that did not cast to the
    declared type (flag a.__bad_i) matches nothing.
    """
    e, a = f"e.{_q(column)}", f"a.{_q(column)}"
    bad = f"a.__bad_{index}"
    tol = target.tolerance_for(column)
    if tol is None:
        return f"(NOT {bad} AND {e} IS NOT DISTINCT FROM {a})"
    close = f"abs({e} - {a}) <= greatest({tol.abs!r}, {tol.rel!r} * greatest(abs({e}), abs({a})))"
    return (
        f"(NOT {bad} AND CASE WHEN {e} IS NULL OR {a} IS NULL THEN {e} IS NULL AND {a} IS NULL "
        f"WHEN isnan({e}) OR isnan({a}) THEN isnan({e}) AND isnan({a}) "
        f"WHEN isinf({e}) OR isinf({a}) THEN {e} = {a} "
        f"ELSE {close} END)"
    )


_DATABASE: duckdb.DuckDBPyConnection | None = None


def _database() -> duckdb.DuckDBPyConnection:
    """One comparison database per process (opening one costs ~28 ms); each comparison is a session."""
    global _DATABASE
    if _DATABASE is None:
        _DATABASE = duckdb.connect(
            ":memory:", config={"threads": 1, "enable_external_access": False}
        )
    return _DATABASE


def _same_kind(a: pa.DataType, b: pa.DataType) -> bool:
    return (
        a == b
        or (pa.types.is_integer(a) and pa.types.is_integer(b))
        or (pa.types.is_decimal(a) and pa.types.is_decimal(b))
    )


def _identical(expected: pa.Table, actual: pa.Table, target: TargetSpec) -> bool:
    """Fast path: the same rows exactly, after a lossless numeric cast. False means "look closer"."""
    if actual.num_rows != expected.num_rows:
        return False
    by_lower = {n.lower(): n for n in actual.column_names}
    columns = {}
    for name, field in zip(expected.column_names, expected.schema, strict=True):
        column = actual.column(by_lower[name.lower()])
        if not _same_kind(column.type, field.type):
            return False
        try:
            columns[name] = column.cast(field.type)  # safe cast: raises rather than lose a digit
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return False
    order = [(name, "ascending") for name in expected.column_names]
    return pa.table(columns).sort_by(order).equals(expected.sort_by(order))


def compare(
    expected: pa.Table, actual: pa.Table, target: TargetSpec, with_severity: bool = False
) -> Comparison:
    """Compare the final target with the expected one; `equal` is the verdict, `diff` explains it.

    `with_severity` (what a verdict is judged with) adds a FAIL's `severity` to its diff
    (severity.py): how wrong the table is, never whether."""
    comparison = _compare(expected, actual, target)
    if with_severity and not comparison.equal:
        from arrivalbench.severity import severity

        diff = comparison.diff
        try:
            measured = severity(expected, actual, target, diff["right_rows_share"])
        except duckdb.Error:
            _discard_database()
            measured = {
                "wrong_rows_share": round(1.0 - diff["right_rows_share"], 6),
                "measures": {},
            }
        return Comparison(False, {**diff, "severity": measured})
    return comparison


def _compare(expected: pa.Table, actual: pa.Table, target: TargetSpec) -> Comparison:
    schema = _schema_diff(actual, target)
    if schema is None and _identical(expected, actual, target):
        diff = {
            "counts": dict.fromkeys(KINDS, 0),
            "examples": {},
            "expected_rows": expected.num_rows,
            "actual_rows": actual.num_rows,
            "right_rows_share": 1.0,
        }
        return Comparison(True, diff)
    counts = dict.fromkeys(KINDS, 0)
    if schema is not None:
        counts["schema"] = sum(len(v) for v in schema.values())
        diff = {
            "counts": counts,
            "examples": {"schema": [schema]},
            "expected_rows": expected.num_rows,
            "actual_rows": actual.num_rows,
            "right_rows_share": 0.0,
        }
        return Comparison(False, diff)

    try:
        return _compare_rows(expected, actual, target)
    except duckdb.Error as exc:
        # A value the engine cannot even cast (an out-of-range HUGEINT): a wrong table, whose
        # error may have left the shared comparison database unusable.
        _discard_database()
        message = bounded_message(str(exc))
        diff = {
            "counts": {**counts, "changed": max(expected.num_rows, actual.num_rows)},
            "examples": {"uncomparable": [{"message": message}]},
            "expected_rows": expected.num_rows,
            "actual_rows": actual.num_rows,
            "right_rows_share": 0.0,
        }
        return Comparison(False, diff)


def _noise_cap(declared: str) -> float | None:
    """The most floating-point noise an exact numeric type lets pass: a tenth of the smallest step
    it keeps (10**-s for DECIMAL(p,s), 1 for an integer); None for a type without steps.

    Without a cap the relative allowance outgrows the type: 1e-9 * 5e6 is half a cent, so a
    DOUBLE 5000000.004 passed for DECIMAL(18,2) 5000000.00. Half a step would not do: it still
    lets 0.004 pass, and a value exactly half a step away (5000000.005) converts to either
    neighbour. A tenth of a step is far above the noise of a DOUBLE sum of such values (about
    1e-9 at 1e7) and far below any deviation the type's rounding would hide.
    """
    kind = arrow_type(declared)
    if pa.types.is_decimal(kind):
        return 10.0 ** -(kind.scale + 1)
    return 0.1 if pa.types.is_integer(kind) else None


def _lossy(value: str, actual_type: str, declared: str) -> str:
    """SQL predicate: the actual value does not convert to the declared type without loss.

    Exact values (integers, decimals, dates, timestamps, text) must convert and convert back to
    themselves: 2.6 is not 3, a timestamp at 10:00 is not its date, 1.2345 is not 1.23. A floating
    value may differ from its conversion by floating-point noise only (relative or absolute
    1e-9, never more than a tenth of the type's step: `_noise_cap`), so SUM(amount::DOUBLE) still
    equals a DECIMAL sum while 0.004 too much does not, at any magnitude. Declared float columns
    take their tolerance later, in the row comparison.
    """
    cast = f"TRY_CAST({value} AS {declared})"
    if is_float(declared):
        return f"({value} IS NOT NULL AND {cast} IS NULL)"
    if is_float(actual_type):
        noise = f"greatest(1e-9 * abs({value}), 1e-9)"
        cap = _noise_cap(declared)
        if cap is not None:
            noise = f"least({noise}, {cap!r})"
        drift = f"abs(CAST({cast} AS DOUBLE) - {value})"
        return f"({value} IS NOT NULL AND ({cast} IS NULL OR {drift} > {noise}))"
    back = f"TRY_CAST({cast} AS {actual_type})"
    return f"({value} IS NOT NULL AND ({cast} IS NULL OR {back} IS DISTINCT FROM {value}))"


def _changed(row: dict[str, Any], column: str, i: int, declared: str) -> dict[str, Any]:
    """One changed column of an example: the expected value, the pipeline's, and why a value that
    looks equal is not (its conversion to the declared type loses something)."""
    if row[f"__bad_{i}"]:
        return {
            "expected": row[column],
            "actual": row[f"__raw_{i}"],
            "reason": f"does not convert to {declared} without loss",
        }
    return {"expected": row[column], "actual": row[f"__actual_{i}"]}


def _discard_database() -> None:
    """After an engine error the shared comparison database may be unusable: start a new one."""
    global _DATABASE
    if _DATABASE is not None:
        with contextlib.suppress(duckdb.Error):
            _DATABASE.close()
    _DATABASE = None


def _compare_rows(expected: pa.Table, actual: pa.Table, target: TargetSpec) -> Comparison:
    """The typed bag comparison on the key, for tables whose columns match the declared ones."""
    counts = dict.fromkeys(KINDS, 0)
    by_lower = {n.lower(): n for n in actual.column_names}
    cols = list(target.columns)
    keys = target.key
    values = [c for c in cols if c not in keys]
    con = _database().cursor()  # a new session: its TEMP tables and registrations end with it
    try:
        con.register("expected_in", expected)
        con.register("actual_in", actual)
        kinds = {
            name: kind
            for name, kind, *_ in con.execute("DESCRIBE SELECT * FROM actual_in").fetchall()
        }
        converted = []
        for i, (c, t) in enumerate(target.columns.items()):
            raw = by_lower[c.lower()]
            converted += [
                f"TRY_CAST({_q(raw)} AS {t}) AS {_q(c)}",
                f"{_lossy(_q(raw), kinds[raw], t)} AS __bad_{i}",
                f"{_q(raw)} AS __raw_{i}",
            ]
        key_bad = " OR ".join(f"__bad_{cols.index(k)}" for k in keys) or "false"
        con.execute(
            f"CREATE TEMP TABLE a_all AS SELECT *, {key_bad} AS __bad_key "
            f"FROM (SELECT {', '.join(converted)} FROM actual_in)"
        )
        # A key that does not convert without loss names no expected row: such rows are extra.
        con.execute("CREATE TEMP TABLE a AS SELECT * FROM a_all WHERE NOT __bad_key")
        con.execute(
            "CREATE TEMP TABLE e AS SELECT " + ", ".join(_q(c) for c in cols) + " FROM expected_in"
        )
        key_list = ", ".join(_q(k) for k in keys)
        on = " AND ".join(f"ek.{_q(k)} IS NOT DISTINCT FROM ak.{_q(k)}" for k in keys)
        order = ", ".join(f"{_q(k)} ASC NULLS FIRST" for k in keys)
        index = {c: i for i, c in enumerate(cols)}
        by_key_then_all = lambda t: ", ".join(  # noqa: E731
            f"{t}.{_q(c)} ASC NULLS FIRST" for c in [*keys, *values]
        )
        con.execute(
            f"""CREATE TEMP TABLE keys AS
            WITH ek AS (SELECT {key_list}, count(*) AS n FROM e GROUP BY ALL),
                 ak AS (SELECT {key_list}, count(*) AS n FROM a GROUP BY ALL)
            SELECT {", ".join(f"coalesce(ek.{_q(k)}, ak.{_q(k)}) AS {_q(k)}" for k in keys)},
                   coalesce(ek.n, 0) AS n_expected, coalesce(ak.n, 0) AS n_actual
            FROM ek FULL OUTER JOIN ak ON {on}"""
        )
        key_on = lambda left, right: " AND ".join(  # noqa: E731
            f"{left}.{_q(k)} IS NOT DISTINCT FROM {right}.{_q(k)}" for k in keys
        )

        def rows(sql: str) -> list[dict[str, object]]:
            result = con.execute(sql)
            names = [d[0] for d in result.description]
            return [
                {n: jsonable(v) for n, v in zip(names, row, strict=True)}
                for row in result.fetchall()
            ]

        def scalar(sql: str) -> int:
            return int(con.execute(sql).fetchone()[0] or 0)

        examples: dict[str, list[dict[str, object]]] = {}
        counts["missing"] = scalar("SELECT sum(n_expected) FROM keys WHERE n_actual = 0")
        if counts["missing"]:
            examples["missing"] = rows(
                f"SELECT e.* FROM e JOIN keys k ON {key_on('e', 'k')} WHERE k.n_actual = 0 "
                f"ORDER BY {by_key_then_all('e')} LIMIT {EXAMPLES}"
            )
        unkeyed = scalar("SELECT count(*) FROM a_all WHERE __bad_key")
        counts["extra"] = scalar("SELECT sum(n_actual) FROM keys WHERE n_expected = 0") + unkeyed
        if counts["extra"]:
            examples["extra"] = rows(
                f"SELECT {', '.join(f'a.{_q(c)}' for c in cols)} FROM a JOIN keys k ON {key_on('a', 'k')} "
                f"WHERE k.n_expected = 0 ORDER BY {by_key_then_all('a')} LIMIT {EXAMPLES}"
            )
            if unkeyed and len(examples["extra"]) < EXAMPLES:
                raw = ", ".join(f"__raw_{index[c]} AS {_q(c)}" for c in cols)
                examples["extra"] += [
                    {**row, "reason": "its key does not convert to the declared type without loss"}
                    for row in rows(
                        f"SELECT {raw} FROM a_all WHERE __bad_key "
                        f"LIMIT {EXAMPLES - len(examples['extra'])}"
                    )
                ]
        dup_where = "n_expected > 0 AND n_actual > 0 AND n_expected <> n_actual"
        counts["duplicate_key"] = scalar(f"SELECT count(*) FROM keys WHERE {dup_where}")
        if counts["duplicate_key"]:
            examples["duplicate_key"] = rows(
                f"SELECT {key_list}, n_expected AS expected_rows, n_actual AS actual_rows FROM keys "
                f"WHERE {dup_where} ORDER BY {order} LIMIT {EXAMPLES}"
            )
        # Keys present once on both sides: compare value by value.
        match_all = " AND ".join(_matches(c, index[c], target) for c in values) or "true"
        con.execute(
            f"""CREATE TEMP TABLE pairs AS
            SELECT e.*, {match_all} AS __same
                   {"".join(f", {_matches(c, index[c], target)} AS __same_{index[c]}" for c in values)}
                   {"".join(f", a.{_q(c)} AS __actual_{index[c]}" for c in values)}
                   {"".join(f", a.__raw_{index[c]}, a.__bad_{index[c]}" for c in values)}
            FROM e JOIN keys k ON {key_on("e", "k")} JOIN a ON {key_on("a", "k")}
            WHERE k.n_expected = 1 AND k.n_actual = 1"""
        )
        changed = scalar("SELECT count(*) FROM pairs WHERE NOT __same")
        right = scalar("SELECT count(*) FROM pairs WHERE __same")
        changed_columns: dict[str, int] = {}
        if changed:
            for c in values:
                n = scalar(f"SELECT count(*) FROM pairs WHERE NOT __same_{index[c]}")
                if n:
                    changed_columns[c] = n
            picked = rows(f"SELECT * FROM pairs WHERE NOT __same ORDER BY {order} LIMIT {EXAMPLES}")
            examples["changed"] = [
                {
                    "key": {k: row[k] for k in keys},
                    "columns": {
                        c: _changed(row, c, index[c], target.columns[c])
                        for c in values
                        if not row[f"__same_{index[c]}"]
                    },
                }
                for row in picked
            ]
        # Keys repeated equally often on both sides (only when the oracle itself repeats a key): as bags.
        multi = "n_expected = n_actual AND n_expected > 1"
        if scalar(f"SELECT count(*) FROM keys WHERE {multi}"):
            columns = ", ".join(f"x.{_q(c)}" for c in cols)
            bag = f"(SELECT {columns} FROM {{t}} x JOIN keys k ON {key_on('x', 'k')} WHERE {multi})"
            differ = scalar(
                f"SELECT count(*) FROM ({bag.format(t='e')} EXCEPT ALL {bag.format(t='a')})"
            )
            same = scalar(f"SELECT sum(n_expected) FROM keys WHERE {multi}") - differ
            changed += differ
            right += same
        counts["changed"] = changed
    finally:
        con.close()

    total = max(expected.num_rows, actual.num_rows)
    equal = all(v == 0 for v in counts.values())
    diff = {
        "counts": counts,
        "examples": examples,
        "expected_rows": expected.num_rows,
        "actual_rows": actual.num_rows,
        "right_rows_share": round(right / total, 6) if total else 1.0,
    }
    if changed_columns:
        diff["changed_columns"] = changed_columns
    return Comparison(equal, diff)
