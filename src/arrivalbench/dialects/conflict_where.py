"""The WHERE an `INSERT ... SELECT ... ON CONFLICT` needs on SQLite, so that SQLite does not
read ON as a join's."""

from __future__ import annotations

from sqlglot import exp

from arrivalbench.dialects.context import Context


def conflict_where(expression: exp.Expression, context: Context) -> exp.Expression:
    if isinstance(expression, exp.Insert) and expression.args.get("conflict"):
        select = expression.expression
        if isinstance(select, exp.Select) and not select.args.get("where"):
            select.where(exp.true(), copy=False)
    return expression
