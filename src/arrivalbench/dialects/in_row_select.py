"""IN (SELECT (a, b) ...): DuckDB's row of two."""

from __future__ import annotations

from sqlglot import exp

from arrivalbench.dialects.context import Context


def in_row_select(expression: exp.Expression, context: Context) -> exp.Expression:
    """IN (SELECT (a, b) ...): DuckDB's row of two is two columns elsewhere."""
    for select in list(expression.find_all(exp.Select)):
        only = select.expressions[0] if len(select.expressions) == 1 else None
        if isinstance(only, exp.Tuple) and isinstance(select.parent, exp.Subquery | exp.In):
            select.set("expressions", [e.copy() for e in only.expressions])
    return expression
