"""`ts + INTERVAL '30' MINUTE` (DuckDB) as SQLite's `datetime(ts, '+30 minutes')`; the fixed
length of an interval in seconds, for the rules that need it."""

from __future__ import annotations

from sqlglot import exp

from arrivalbench.dialects.context import Context

_SQLITE_UNITS = {"SECOND": "seconds", "MINUTE": "minutes", "HOUR": "hours", "DAY": "days"}


def _interval(node: exp.Expression) -> exp.Expression:
    """`ts + INTERVAL '30' MINUTE` (DuckDB) as `datetime(ts, '+30 minutes')`."""
    if not isinstance(node, exp.Add | exp.Sub) or not isinstance(node.expression, exp.Interval):
        return node
    interval = node.expression
    unit = str(interval.args.get("unit") or "").upper().rstrip("S")
    amount = interval.this
    if unit not in _SQLITE_UNITS or not isinstance(amount, exp.Literal):
        return node
    sign = "-" if isinstance(node, exp.Sub) else "+"
    modifier = exp.Literal.string(f"{sign}{amount.this} {_SQLITE_UNITS[unit]}")
    return exp.Anonymous(this="datetime", expressions=[node.this.copy(), modifier])


_SECONDS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}


def interval_seconds(interval: exp.Interval) -> float | None:
    unit = str(interval.args.get("unit") or "").upper().rstrip("S")
    amount = interval.this
    if unit not in _SECONDS or not isinstance(amount, exp.Literal):
        return None
    try:
        return float(amount.this) * _SECONDS[unit]
    except ValueError:
        return None


def interval(expression: exp.Expression, context: Context) -> exp.Expression:
    return expression.transform(_interval)
