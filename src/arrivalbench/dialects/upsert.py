"""INSERT OR IGNORE and INSERT OR REPLACE (DuckDB's) as PostgreSQL's ON CONFLICT: REPLACE needs
the primary key of a table the script made."""

from __future__ import annotations

from pathlib import Path

from sqlglot import exp

from arrivalbench.dialects.context import Context, TranspileError


def tables_made(parsed: list[exp.Expression | None]) -> dict[str, tuple[list[str], list[str]]]:
    """The script's own CREATE TABLE column lists: name -> (columns, primary key)."""
    made: dict[str, tuple[list[str], list[str]]] = {}
    for expression in parsed:
        if not isinstance(expression, exp.Create) or not isinstance(expression.this, exp.Schema):
            continue
        schema = expression.this
        columns = [d.name for d in schema.expressions if isinstance(d, exp.ColumnDef)]
        key = [
            d.name
            for d in schema.expressions
            if isinstance(d, exp.ColumnDef) and d.find(exp.PrimaryKeyColumnConstraint)
        ]
        for constraint in schema.expressions:
            if isinstance(constraint, exp.PrimaryKey):
                key = [c.name for c in constraint.expressions]
        made[schema.this.name.lower()] = (columns, key)
    return made


def upsert(expression: exp.Expression, context: Context) -> exp.Expression:
    if isinstance(expression, exp.Insert):
        alternative = str(expression.args.get("alternative") or "").upper()
        target = expression.this
        table = target.this if isinstance(target, exp.Schema) else target
        columns, key = context.made.get(table.name.lower(), ([], []))
        if isinstance(target, exp.Schema):
            columns = [c.name for c in target.expressions]
        if alternative == "IGNORE":
            expression.set("alternative", None)
            expression.set("conflict", exp.OnConflict(action=exp.var("DO NOTHING")))
        elif alternative == "REPLACE" and key and columns:
            updates = [
                exp.EQ(this=exp.column(c), expression=exp.column(c, table="excluded"))
                for c in columns
                if c not in key
            ]
            expression.set("alternative", None)
            expression.set(
                "conflict",
                exp.OnConflict(
                    conflict_keys=[exp.to_identifier(k) for k in key],
                    action=exp.var("DO UPDATE"),
                    expressions=updates,
                ),
            )
        elif alternative:
            raise TranspileError(
                f"{context.where}: INSERT OR {alternative} has no PostgreSQL form without the conflict "
                f"columns; write the script by hand beside it as "
                f"{Path(context.where).name.removesuffix('.sql')}.postgres.sql."
            )
    return expression
