"""GROUP BY ALL (DuckDB's)."""

from __future__ import annotations

from sqlglot import exp

from arrivalbench.dialects.context import Context


def group_by_all(expression: exp.Expression, context: Context) -> exp.Expression:
    """GROUP BY ALL (DuckDB's) as the list of the select's non-aggregate expressions."""
    for group in list(expression.find_all(exp.Group)):
        select = group.parent
        if group.args.get("all") and isinstance(select, exp.Select):
            keys = [
                (e.this if isinstance(e, exp.Alias) else e).copy()
                for e in select.expressions
                if not e.find(exp.AggFunc) and not isinstance(e, exp.Star)
            ]
            group.set("all", None)
            group.set("expressions", keys)
    return expression
