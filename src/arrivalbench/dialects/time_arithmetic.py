"""Timestamp and date arithmetic for SQLite, which has no types to ask: what is a timestamp or a
date goes by the suite's column names (ts_*, *_at, *_start, *_end; day, *_day, *date)."""

from __future__ import annotations

from sqlglot import exp

from arrivalbench.dialects.context import Context
from arrivalbench.dialects.interval import interval_seconds

_TIME_FUNCTIONS = (exp.Lag, exp.Lead, exp.Min, exp.Max, exp.FirstValue, exp.LastValue)


def _is_timestamp(node: exp.Expression) -> bool:
    """Whether an expression is a timestamp by the suite's naming (ts_*, *_at, *_start, *_end),
    directly or through lag/lead/min/max/first/last of one: SQLite has no types to ask."""
    if isinstance(node, exp.Window):
        return _is_timestamp(node.this)
    if isinstance(node, _TIME_FUNCTIONS):
        return _is_timestamp(node.this)
    if isinstance(node, exp.Column):
        name = node.name.lower()
        return name.startswith("ts") or name.endswith(("_at", "_start", "_end"))
    return False


def _is_date(node: exp.Expression) -> bool:
    """Whether an expression is a date: CAST(... AS DATE), or a column named day, *_day, *date."""
    if isinstance(node, exp.Cast):
        return node.to.is_type(exp.DataType.Type.DATE)
    if isinstance(node, exp.Window | exp.Min | exp.Max | exp.Lag | exp.Lead):
        return _is_date(node.this)
    if isinstance(node, exp.Column):
        name = node.name.lower()
        return name == "day" or name.endswith(("_day", "date"))
    return False


def _time_arithmetic(node: exp.Expression) -> exp.Expression:
    """Timestamp differences as whole seconds (`strftime('%s', a) - strftime('%s', b)`), an interval
    compared with one as its seconds, and `range(a, b)` of literals as a UNION of rows."""
    if isinstance(node, exp.DateDiff) and str(node.args.get("unit") or "").upper() == "SECOND":
        node = exp.Sub(this=node.this.copy(), expression=node.expression.copy())
        forced = True
    else:
        forced = False
    if isinstance(node, exp.Sub) and (
        forced or (_is_timestamp(node.this) and _is_timestamp(node.expression))
    ):

        def epoch(value: exp.Expression) -> exp.Expression:  # whole seconds, exactly
            seconds = exp.Anonymous(this="strftime", expressions=[exp.Literal.string("%s"), value])
            return exp.Cast(this=seconds, to=exp.DataType.build("INTEGER"))

        return exp.Paren(
            this=exp.Sub(this=epoch(node.this.copy()), expression=epoch(node.expression.copy()))
        )
    if isinstance(node, exp.Add | exp.Sub) and _is_date(node.this):
        other = node.expression
        if _is_date(other) and isinstance(node, exp.Sub):  # days between two dates
            return exp.Paren(
                this=exp.Cast(
                    this=exp.Sub(
                        this=exp.Anonymous(this="julianday", expressions=[node.this.copy()]),
                        expression=exp.Anonymous(this="julianday", expressions=[other.copy()]),
                    ),
                    to=exp.DataType.build("INTEGER"),
                )
            )
        if not isinstance(other, exp.Interval) and not _is_date(other):  # date + n days
            sign = "-" if isinstance(node, exp.Sub) else "+"
            shift = exp.Anonymous(
                this="printf",
                expressions=[exp.Literal.string(f"{sign}%d days"), other.copy()],
            )
            return exp.Anonymous(this="date", expressions=[node.this.copy(), shift])
    parent = node.parent
    if isinstance(node, exp.Interval) and isinstance(parent, exp.Binary):
        seconds = interval_seconds(node)
        if seconds is not None and not isinstance(parent, exp.Add | exp.Sub):
            return exp.Literal.number(seconds)
    if isinstance(node, exp.Table) and isinstance(node.this, exp.GenerateSeries):
        series = node.this
        start, end = series.args.get("start"), series.args.get("end")
        alias = node.args.get("alias")
        if (
            isinstance(start, exp.Literal)
            and isinstance(end, exp.Literal)
            and not start.is_string
            and not end.is_string
            and alias is not None
            and len(alias.columns) == 1
        ):
            last = int(end.this) - (1 if series.args.get("is_end_exclusive") else 0)
            column = alias.columns[0].name
            rows = [
                exp.select(exp.alias_(exp.Literal.number(v), column))
                for v in range(int(start.this), last + 1)
            ]
            union: exp.Expression = rows[0]
            for row in rows[1:]:
                union = exp.union(union, row, distinct=False)
            return exp.Subquery(this=union, alias=exp.TableAlias(this=alias.this.copy()))
    return node


def time_arithmetic(expression: exp.Expression, context: Context) -> exp.Expression:
    return expression.transform(_time_arithmetic)
