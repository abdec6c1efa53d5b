"""NULL order: DuckDB's (last in either direction) spelled for SQLite."""

from __future__ import annotations

from sqlglot import exp

from arrivalbench.dialects.context import Context


def null_order(expression: exp.Expression, context: Context) -> exp.Expression:
    """DuckDB puts NULLs last in either direction, SQLite first when ascending; SQLite refuses
    NULLS FIRST/LAST in a window's ORDER BY, so a key whose NULLs must move is preceded by
    `key IS NULL` and left to SQLite's default."""
    for order in list(expression.find_all(exp.Order)):
        keys: list[exp.Expression] = []
        for ordered in order.expressions:
            if not isinstance(ordered, exp.Ordered):
                keys.append(ordered)
                continue
            desc = bool(ordered.args.get("desc"))
            nulls_first = bool(ordered.args.get("nulls_first"))
            default_first = not desc  # SQLite: NULL is the smallest value
            fixed = ordered.copy()
            fixed.set("nulls_first", default_first)
            if nulls_first != default_first and not isinstance(ordered.this, exp.Literal):
                null = exp.Is(this=ordered.this.copy(), expression=exp.Null())
                keys.append(exp.Ordered(this=null, desc=nulls_first, nulls_first=not nulls_first))
            keys.append(fixed)
        order.set("expressions", keys)
    for ordered in expression.find_all(exp.Ordered):
        if not isinstance(ordered.parent, exp.Order):  # ON CONFLICT keys: no NULL order
            ordered.set("nulls_first", not ordered.args.get("desc"))
    return expression
