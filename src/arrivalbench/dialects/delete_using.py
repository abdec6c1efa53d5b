"""DELETE ... USING as DELETE ... WHERE EXISTS, for SQLite."""

from __future__ import annotations

from sqlglot import exp

from arrivalbench.dialects.context import Context


def delete_using(expression: exp.Expression, context: Context) -> exp.Expression:
    if isinstance(expression, exp.Delete) and expression.args.get("using"):
        using = expression.args["using"]
        where = expression.args.get("where")
        probe = exp.select("1").from_(using[0].copy())
        for extra in using[1:]:
            probe = probe.join(extra.copy())
        if where is not None:
            probe = probe.where(where.this.copy())
        expression.set("using", None)
        expression.set("where", exp.Where(this=exp.Exists(this=probe)))
    return expression
