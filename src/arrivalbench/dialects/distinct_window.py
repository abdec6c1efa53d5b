"""count(DISTINCT x) OVER (PARTITION BY p), which SQLite and PostgreSQL refuse."""

from __future__ import annotations

from sqlglot import exp

from arrivalbench.dialects.context import Context


def _distinct_window(node: exp.Expression) -> exp.Expression:
    """count(DISTINCT x) OVER (PARTITION BY p), which SQLite refuses, as two dense ranks: the
    rank from below plus the rank from above, less one, less one more when x has a NULL."""
    if not isinstance(node, exp.Window) or node.args.get("order") or node.args.get("spec"):
        return node
    count = node.this
    distinct = count.this if isinstance(count, exp.Count) else None
    if not isinstance(distinct, exp.Distinct) or len(distinct.expressions) != 1:
        return node
    value = distinct.expressions[0]
    partition = node.args.get("partition_by") or []

    def window(function: exp.Expression, order: exp.Order | None) -> exp.Window:
        return exp.Window(
            this=function, partition_by=[p.copy() for p in partition], order=order, over="OVER"
        )

    def by(desc: bool) -> exp.Order:
        return exp.Order(
            expressions=[exp.Ordered(this=value.copy(), desc=desc, nulls_first=not desc)]
        )

    null = exp.Is(this=value.copy(), expression=exp.Null())
    has_null = exp.Max(this=exp.Cast(this=null, to=exp.DataType.build("INTEGER")))
    total = exp.Sub(
        this=exp.Sub(
            this=exp.Add(
                this=window(exp.Anonymous(this="DENSE_RANK"), by(False)),
                expression=window(exp.Anonymous(this="DENSE_RANK"), by(True)),
            ),
            expression=exp.Literal.number(1),
        ),
        expression=window(has_null, None),
    )
    return exp.Paren(this=total)


def distinct_window(expression: exp.Expression, context: Context) -> exp.Expression:
    return expression.transform(_distinct_window)
