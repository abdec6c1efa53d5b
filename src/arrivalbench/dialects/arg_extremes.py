"""arg_max/arg_min (DuckDB's), which neither SQLite nor PostgreSQL has."""

from __future__ import annotations

from sqlglot import exp

from arrivalbench.dialects.context import Context


def arg_extremes(expression: exp.Expression, context: Context) -> exp.Expression:
    """arg_max/arg_min(v, key) in a grouped SELECT over one source: the source becomes a
    subquery (under the same alias, the WHERE inside it) adding each group's first `v` by
    `key` as a window column, and the aggregate reads that column back with max()."""
    for select in list(expression.find_all(exp.Select)):
        calls = [
            c
            for c in select.find_all(exp.ArgMax, exp.ArgMin)
            if c.parent_select is select and not c.find_ancestor(exp.Window, exp.Filter)
        ]  # one under FILTER (WHERE ...) would lose its filter: left for an override
        group = select.args.get("group")
        source = select.args.get("from_") or select.args.get("from")
        if not calls or group is None or source is None or select.args.get("joins"):
            continue
        table = source.this
        alias = table.alias_or_name
        keys = [k.copy() for k in group.expressions]
        inner = exp.select(exp.Star()).from_(table.copy())
        where = select.args.get("where")
        if where is not None:
            inner.set("where", where.copy())
            select.set("where", None)
        for n, call in enumerate(calls, 1):
            key = call.expression
            parts = key.expressions if isinstance(key, exp.Tuple) else [key]
            desc = isinstance(call, exp.ArgMax)
            order = []
            for part in parts:  # NULL keys last, as DuckDB skips them
                if not desc:
                    null = exp.Is(this=part.copy(), expression=exp.Null())
                    order.append(exp.Ordered(this=null, nulls_first=True))
                order.append(exp.Ordered(this=part.copy(), desc=desc, nulls_first=not desc))
            window = exp.Window(
                this=exp.FirstValue(this=call.this.copy()),
                partition_by=[k.copy() for k in keys],
                order=exp.Order(expressions=order),
                over="OVER",
            )
            name = f"__arrivalbench_arg_{n}"
            inner.select(exp.alias_(window, name), copy=False)
            call.replace(exp.Max(this=exp.column(name)))
        source.set(
            "this", exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias)))
        )
    return expression
