"""`* EXCLUDE`, INSERT ... BY NAME and UNION ALL BY NAME over a delivery table, as explicit
columns: how each engine spells a delivery column, the evolving one included."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from arrivalbench.dialects.context import Context
from arrivalbench.spec import Task


def _delivery_stars(
    expression: exp.Expression,
    columns: dict[str, list[str]],
    delivered: Callable[[str, str], exp.Expression],
) -> exp.Expression:
    """`* EXCLUDE`, INSERT ... BY NAME and a batch padded by UNION ALL BY NAME, over a delivery
    table, as explicit columns (`delivered` spells each, the evolving one included)."""
    for union in list(expression.find_all(exp.Union)):  # padding: (no rows) UNION ALL BY NAME batch
        right = union.expression
        source = right.args.get("from_") if isinstance(right, exp.Select) else None
        if (
            union.args.get("by_name")
            and not union.args.get("distinct")
            and isinstance(union.this, exp.Select)
            and isinstance(union.this.args.get("where"), exp.Where)
            and union.this.args["where"].this == exp.false()
            and source is not None
            and isinstance(source.this, exp.Table)
            and source.this.name.lower() in columns
            and [type(e) for e in right.expressions] == [exp.Star]
        ):
            known = columns[source.this.name.lower()]
            union.replace(
                exp.select(*[delivered(c, source.this.alias_or_name) for c in known]).from_(
                    source.this.copy()
                )
            )
    by_name = isinstance(expression, exp.Insert) and expression.args.get("by_name")
    for star in list(expression.find_all(exp.Star)):
        dropped = star.args.get("except_") or star.args.get("except") or []
        select = star.parent
        if not (dropped or by_name) or not isinstance(select, exp.Select):
            continue
        source = select.args.get("from_") or select.args.get("from")
        table = source.this if source is not None else None
        if select.args.get("joins") or not isinstance(table, exp.Table):
            continue
        known = columns.get(table.name.lower())
        if known is None:
            continue
        drop = {c.name.lower() for c in dropped}
        kept = [
            delivered(c, table.alias_or_name)
            for c in known
            if c.lstrip("?").partition(":")[0].lower() not in drop
        ]
        index = select.expressions.index(star)
        select.set(
            "expressions", select.expressions[:index] + kept + select.expressions[index + 1 :]
        )
    select = expression.expression if by_name else None
    if isinstance(select, exp.Select) and all(e.alias_or_name for e in select.expressions):
        names = [exp.to_identifier(e.alias_or_name) for e in select.expressions]
        target = expression.this
        expression.set("by_name", None)
        expression.set("this", exp.Schema(this=target.copy(), expressions=names))
    return expression


def delivery_stars(expression: exp.Expression, context: Context) -> exp.Expression:
    return _delivery_stars(expression, context.columns, context.delivered)


def delivered_sqlite(column: str, table: str = "") -> exp.Expression:
    """A delivery column by name; `?name` marks the evolving column, absent from some
    deliveries: SQLite reads a double-quoted name that is no column as that text, so
    NULLIF("page", 'page') is the column when delivered and NULL when not."""
    if not column.startswith("?"):
        return exp.column(column)
    name = column[1:].partition(":")[0]
    value = exp.Nullif(this=exp.column(name, quoted=True), expression=exp.Literal.string(name))
    return exp.alias_(value, name)


def delivered_postgres(column: str, table: str = "") -> exp.Expression:
    """A delivery column by name; the evolving one (`?name:TYPE`) read from the row as JSON,
    which has the key only when the delivery has the column: NULL otherwise."""
    if not column.startswith("?"):
        return exp.column(column)
    name, _, kind = column[1:].partition(":")
    row = exp.Anonymous(this="to_jsonb", expressions=[exp.column(table)])
    value = exp.JSONExtractScalar(this=row, expression=exp.Literal.string(name))
    return exp.alias_(exp.Cast(this=value, to=exp.DataType.build(kind or "TEXT")), name)


def delivery_columns(task: Task) -> dict[str, list[str]]:
    """Each delivery table's columns, as the harness loads them (for `* EXCLUDE` and INSERT
    ... BY NAME); the evolving column, which some deliveries lack, is marked `?name`."""
    return {
        f"{source.name}_batch".lower(): [
            f"?{c}:{t}" if c == source.evolving_column else c for c, t in source.columns.items()
        ]
        + ["_arrival_seq", "_batch_id"]
        for source in task.spec.sources
    }
