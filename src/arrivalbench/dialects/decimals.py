"""DuckDB's exact DECIMAL on SQLite, which holds it as a binary float: which names hold a decimal
(by declaration, cast and alias: SQLite has no types to ask), and the rounding that keeps sums
exact."""

from __future__ import annotations

from sqlglot import exp

from arrivalbench.dialects.context import AUTHORED, Context
from arrivalbench.spec import Task

DUCKDB_DEFAULT_SCALE = 3
"""DuckDB's bare DECIMAL is DECIMAL(18,3); DECIMAL(p) has scale 0."""


def type_scale(kind: exp.Expression | None) -> int | None:
    """The scale of a DECIMAL type as DuckDB reads it, or None for any other type."""
    if not isinstance(kind, exp.DataType) or not kind.is_type(exp.DataType.Type.DECIMAL):
        return None
    if not kind.expressions:
        return DUCKDB_DEFAULT_SCALE
    return int(kind.expressions[1].this.this) if len(kind.expressions) == 2 else 0


def decimal_scale(node: exp.Expression | None, decimals: dict[str, int]) -> int | None:
    """The scale of an exact DECIMAL the expression holds in DuckDB, or None: a column by its
    name (declared DECIMAL in a source, a CREATE TABLE or an alias of a decimal value), a CAST
    to DECIMAL, or a sum, difference, COALESCE, CASE or one-column subquery of them."""
    if isinstance(node, exp.Column):
        return decimals.get(node.name.lower())
    if isinstance(node, exp.Cast):
        return type_scale(node.to)
    if isinstance(node, exp.Round) and isinstance(node.args.get("decimals"), exp.Literal):
        return int(node.args["decimals"].this)
    if isinstance(node, exp.Paren | exp.Alias | exp.Neg | exp.Sum | exp.Window | exp.Filter):
        return decimal_scale(node.this, decimals)
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
        projections = node.this.expressions
        return decimal_scale(projections[0], decimals) if len(projections) == 1 else None
    if isinstance(node, exp.Add | exp.Sub | exp.Coalesce | exp.Case | exp.If):
        parts = [node.this, node.expression] if isinstance(node, exp.Binary) else []
        if isinstance(node, exp.Coalesce):
            parts = [node.this, *node.expressions]
        if isinstance(node, exp.Case):
            parts = [i.args.get("true") for i in node.args.get("ifs", [])] + [
                node.args.get("default")
            ]
        if isinstance(node, exp.If):
            parts = [node.args.get("true"), node.args.get("false")]
        scales = [
            s for s in (decimal_scale(p, decimals) for p in parts if p is not None) if s is not None
        ]
        return max(scales) if scales else None
    return None


def decimal_names(parsed: list[exp.Expression | None], sources: dict[str, int]) -> dict[str, int]:
    """Every name that holds an exact DECIMAL in a script: the sources' DECIMAL columns, the
    DECIMAL columns its CREATE TABLEs declare, and the aliases of decimal values (to a fixpoint;
    SQLite has no types to ask, so this goes by name, as dates and timestamps do)."""
    names = dict(sources)
    for expression in parsed:
        for column in expression.find_all(exp.ColumnDef) if expression else ():
            scale = type_scale(column.args.get("kind"))
            if scale is not None:
                names[column.name.lower()] = scale
    while True:
        found = {
            alias.alias.lower(): scale
            for expression in parsed
            if expression is not None
            for alias in expression.find_all(exp.Alias)
            if alias.alias.lower() not in names
            and (scale := decimal_scale(alias.this, names)) is not None
        }
        if not found:
            return names
        names.update(found)


def source_decimals(task: Task) -> dict[str, int]:
    """The sources' DECIMAL(p, s) columns with their scales, by lower-case name."""
    out = {}
    for source in task.spec.sources:
        for column, kind in source.columns.items():
            scale = type_scale(exp.DataType.build(kind, dialect=AUTHORED))
            if scale is not None:
                out[column.lower()] = scale
    return out


def _exact_decimals(expression: exp.Expression, decimals: dict[str, int]) -> exp.Expression:
    """DuckDB's DECIMAL is exact; SQLite holds it as a binary float, so sums of the same amounts
    in another order differ in the last bit, break ties and miss "exactly 0". Every decimal
    CAST, SUM (aggregate or window) and sum or difference is rounded to its scale, which
    gives the float nearest the exact decimal whatever the order of addition."""

    def rounded(node: exp.Expression, scale: int) -> exp.Expression:
        return exp.Round(this=node, decimals=exp.Literal.number(scale))

    for node in reversed(list(expression.walk())):  # children before their parents
        if isinstance(node, exp.Cast):
            scale = decimal_scale(node, decimals)
            if scale is not None and decimal_scale(node.this, decimals) == scale:
                node.replace(node.this.copy())  # already rounded to the scale
            elif scale is not None:
                node.replace(rounded(node.this.copy(), scale))
        elif isinstance(node, exp.Sum):
            scale = decimal_scale(node.this, decimals)
            top = node  # the whole aggregate: with its FILTER (WHERE ...) and OVER (...)
            while isinstance(top.parent, exp.Filter | exp.Window) and top.parent.this is top:
                top = top.parent
            if scale is not None:
                top.replace(rounded(top.copy(), scale))
        elif isinstance(node, exp.Add | exp.Sub) and not isinstance(node.parent, exp.Add | exp.Sub):
            scale = decimal_scale(node, decimals)
            if scale is not None:
                node.replace(rounded(node.copy(), scale))
    return expression


def exact_decimals(expression: exp.Expression, context: Context) -> exp.Expression:
    return _exact_decimals(expression, context.decimals)
