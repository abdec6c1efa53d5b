"""RANGE frames with interval offsets over a date or timestamp, for SQLite."""

from __future__ import annotations

from sqlglot import exp

from arrivalbench.dialects.context import Context, TranspileError
from arrivalbench.dialects.interval import interval_seconds


def range_window(expression: exp.Expression, context: Context) -> exp.Expression:
    """RANGE frames over a date or timestamp with interval offsets: SQLite's RANGE needs a
    number, so the ORDER BY key is its julianday() and the offsets are days."""
    for window in list(expression.find_all(exp.Window)):
        spec = window.args.get("spec")
        order = window.args.get("order")
        if spec is None or str(spec.args.get("kind") or "").upper() != "RANGE" or order is None:
            continue
        bounds = [spec.args.get("start"), spec.args.get("end")]
        if not any(isinstance(b, exp.Interval) for b in bounds) or len(order.expressions) != 1:
            continue
        for side in ("start", "end"):
            bound = spec.args.get(side)
            if isinstance(bound, exp.Interval):
                seconds = interval_seconds(bound)
                if seconds is None:
                    raise TranspileError("an interval RANGE offset that is not a fixed length")
                spec.set(side, exp.Literal.number(seconds / 86400))
        key = order.expressions[0]
        key.set("this", exp.Anonymous(this="julianday", expressions=[key.this.copy()]))
        key.set("nulls_first", not key.args.get("desc"))  # one key only: SQLite's NULL order
    return expression
