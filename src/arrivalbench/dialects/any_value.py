"""any_value (DuckDB's; PostgreSQL's only from 16): any non-NULL value, and MAX is one."""

from __future__ import annotations

from sqlglot import exp

from arrivalbench.dialects.context import Context


def any_value(expression: exp.Expression, context: Context) -> exp.Expression:
    for any_value in list(expression.find_all(exp.AnyValue)):  # any non-NULL value: MAX is one
        outer = any_value.parent if isinstance(any_value.parent, exp.IgnoreNulls) else any_value
        outer.replace(exp.Max(this=any_value.this.copy()))
    return expression
