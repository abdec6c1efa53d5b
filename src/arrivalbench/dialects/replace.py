"""CREATE OR REPLACE TABLE|VIEW (DuckDB's) as a DROP ... IF EXISTS followed by a CREATE, which
both other engines run; a table built from its own old rows is built under a new name, then
swapped in."""

from __future__ import annotations

from sqlglot import exp


def replace_statements(expression: exp.Expression) -> list[exp.Expression]:
    """The statements that stand for `expression` (itself, unless it is a CREATE OR REPLACE)."""
    if isinstance(expression, exp.Create) and expression.args.get("replace"):
        kind = (expression.kind or "").upper()
        if kind in ("TABLE", "VIEW"):
            target = expression.this
            table = target.this if isinstance(target, exp.Schema) else target
            create = expression.copy()
            create.set("replace", False)
            drop = exp.Drop(tables=[table.copy()], kind=kind, exists=True)
            query = expression.expression
            reads_itself = query is not None and any(
                t.name.lower() == table.name.lower() for t in query.find_all(exp.Table)
            )
            if kind == "TABLE" and reads_itself:  # built from its old rows: build, then swap
                fresh = exp.to_identifier(f"__arrivalbench_new_{table.name}")
                create.this.set("this", fresh) if isinstance(target, exp.Schema) else create.set(
                    "this", exp.Table(this=fresh, db=table.args.get("db"))
                )
                rename = exp.Alter(
                    this=exp.Table(this=fresh.copy(), db=table.args.get("db")),
                    kind="TABLE",
                    actions=[exp.AlterRename(this=exp.Table(this=table.this.copy()))],
                )
                return [create, drop, rename]
            return [drop, create]
    return [expression]
