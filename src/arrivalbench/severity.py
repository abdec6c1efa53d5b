"""Severity: how wrong a FAIL's table is, beside the binary verdict and never used for it.

A FAIL says the final table is not the expected one; severity says by how much, read off the two
tables the comparison already held. `wrong_rows_share` is 1 − right_rows_share. For each numeric
measure column (a non-key target column declared integer, decimal or float) it gives the column's
total on each side (NULLs skipped, as SUM does), `total_error` = |Σ actual − Σ expected| /
|Σ expected| (0 when both totals are 0, null when only the expected one is), and `max_row_error`,
the largest |a − e| / |e| over the expected table's keys with a nonzero value, where a key's value
is the sum of its rows' values on that side and a key the pipeline lost has value 0 (an extra key
has no expected value: it moves the total, not this maximum). Sums are exact (math.fsum over the
values as doubles) and every number is rounded to six decimals, so a severity is the same bytes
on every replay.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import duckdb
import pyarrow as pa

from arrivalbench.spec import TargetSpec
from arrivalbench.sqltypes import arrow_type

DIGITS = 6


def measure_columns(target: TargetSpec) -> list[str]:
    """The target's numeric non-key columns, in declaration order: what a total is taken of."""
    found = []
    for name, declared in target.columns.items():
        kind = arrow_type(declared)
        if name not in target.key and (
            pa.types.is_integer(kind) or pa.types.is_decimal(kind) or pa.types.is_floating(kind)
        ):
            found.append(name)
    return found


def _number(value: float) -> float | str:
    """A finite float rounded to DIGITS; NaN and infinities spelled out, as compare.jsonable does."""
    return round(value, DIGITS) if math.isfinite(value) else str(value)


def _ratio(difference: float, base: float) -> float | str | None:
    if base == 0:
        return 0.0 if difference == 0 else None
    return _number(abs(difference) / abs(base))


def _rows(
    con: duckdb.DuckDBPyConnection,
    name: str,
    table: pa.Table,
    target: TargetSpec,
    measures: list[str],
) -> list[tuple[Any, ...]]:
    """(key..., measure as DOUBLE...) per row, keys cast to their declared types (a value that does
    not cast is NULL: it names no expected key) and measures that do not cast to DOUBLE NULL."""
    by_lower = {n.lower(): n for n in table.column_names}

    def q(column: str) -> str:
        return '"' + column.replace('"', '""') + '"'

    con.register(name, table)
    selected = [
        f"TRY_CAST({q(by_lower[k.lower()])} AS {target.columns[k]})"
        if k.lower() in by_lower
        else "NULL"
        for k in target.key
    ] + [
        f"TRY_CAST({q(by_lower[m.lower()])} AS DOUBLE)" if m.lower() in by_lower else "NULL"
        for m in measures
    ]
    return con.execute(f"SELECT {', '.join(selected)} FROM {name}").fetchall()


def severity(
    expected: pa.Table, actual: pa.Table, target: TargetSpec, right_rows_share: float
) -> dict[str, Any]:
    """The severity of a FAIL (module docstring): the wrong rows' share and, per measure column,
    both totals, the total's relative error and the largest relative error of one expected key."""
    from arrivalbench.compare import _database

    measures = measure_columns(target)
    result: dict[str, Any] = {"wrong_rows_share": round(1.0 - right_rows_share, DIGITS)}
    present = {n.lower() for n in actual.column_names}
    measures_here = [m for m in measures if m.lower() in present]
    if not measures_here:
        result["measures"] = {}
        return result
    con = _database().cursor()
    try:
        wanted = _rows(con, "severity_expected", expected, target, measures_here)
        got = _rows(con, "severity_actual", actual, target, measures_here)
    finally:
        con.close()
    width = len(target.key)
    out: dict[str, Any] = {}
    for offset, column in enumerate(measures_here):
        i = width + offset
        per_key: dict[str, dict[tuple[Any, ...], list[float]]] = {
            "e": defaultdict(list),
            "a": defaultdict(list),
        }
        for side, rows in (("e", wanted), ("a", got)):
            for row in rows:
                values = per_key[side][tuple(row[:width])]
                if row[i] is not None:
                    values.append(row[i])
        e_total = math.fsum(v for values in per_key["e"].values() for v in values)
        a_total = math.fsum(v for values in per_key["a"].values() for v in values)
        worst: float | None = None
        for key, values in per_key["e"].items():
            e = math.fsum(values)
            if e == 0 or not math.isfinite(e):
                continue
            a = math.fsum(per_key["a"].get(key, ()))
            error = abs(a - e) / abs(e)
            if worst is None or not error <= worst:
                worst = error
        out[column] = {
            "expected_total": _number(e_total),
            "actual_total": _number(a_total),
            "total_error": _ratio(a_total - e_total, e_total),
            "max_row_error": None if worst is None else _number(worst),
        }
    result["measures"] = out
    return result


def total_errors(diff: Mapping[str, Any]) -> dict[str, float]:
    """Measure column -> the total's relative error of a stored diff; empty for a diff stored
    before severity (record format 1) or one whose totals have no finite relative error."""
    measures = (diff.get("severity") or {}).get("measures") or {}
    return {
        column: float(m["total_error"])
        for column, m in measures.items()
        if isinstance(m.get("total_error"), int | float)
    }
