"""An alias for every subquery in FROM (PostgreSQL 15 requires one)."""

from __future__ import annotations

from sqlglot import exp

from arrivalbench.dialects.context import Context


def subquery_alias(expression: exp.Expression, context: Context) -> exp.Expression:
    for n, subquery in enumerate(list(expression.find_all(exp.Subquery)), 1):
        if not subquery.alias and isinstance(subquery.parent, exp.From | exp.Join):
            subquery.set("alias", exp.TableAlias(this=exp.to_identifier(f"_subquery_{n}")))
    return expression
