"""DuckDB's MERGE as SQLite statements."""

from __future__ import annotations

from pathlib import Path

from sqlglot import exp
from sqlglot.errors import ErrorLevel

from arrivalbench.dialects.context import TranspileError

MERGE_SOURCE = "__arrivalbench_merge_source"


def merge(merge: exp.Merge, where: str) -> list[str]:
    """DuckDB's MERGE as SQLite statements inside one SAVEPOINT (atomic, as the MERGE was).

    The source is kept once in a TEMP table with, for each row, whether it matched the target
    before the MERGE and which WHEN MATCHED clause took it then (the first whose condition
    held: an ON that matches at most one target row, as a MERGE's should); each matched clause
    then changes only its own rows, and the INSERT clauses take the rows that matched nothing,
    each excluding those an earlier INSERT clause took.
    """

    def fail(why: str) -> TranspileError:
        return TranspileError(
            f"{where}: a MERGE {why} has no SQLite form here; write the script by hand beside "
            f"it as {Path(where).name.removesuffix('.sql')}.sqlite.sql."
        )

    def sql(node: exp.Expression) -> str:
        return node.sql(dialect="sqlite", unsupported_level=ErrorLevel.RAISE)

    target = merge.this
    using = merge.args.get("using")
    on = merge.args.get("on")
    whens = merge.args.get("whens")
    if not isinstance(target, exp.Table) or using is None or on is None or whens is None:
        raise fail("without a plain target, source and ON condition")
    talias = target.alias or target.name
    table = sql(exp.table_(target.name, db=target.args.get("db")))
    salias = using.alias or (using.name if isinstance(using, exp.Table) else "")
    if not salias:
        raise fail("whose source has no name")
    source = using.copy()
    source.set("alias", None)
    cond = sql(on)

    def matches(extra: str = "") -> str:
        return f"EXISTS (SELECT 1 FROM {table} AS {talias} WHERE {cond}{extra})"

    arms: list[str] = []
    changes: list[str] = []
    inserts: list[str] = []
    unmatched_before: list[str] = []
    for when in whens.expressions:
        if when.args.get("source"):
            raise fail("with WHEN NOT MATCHED BY SOURCE")
        condition = when.args.get("condition")
        then = when.args.get("then")
        extra = f" AND ({sql(condition)})" if condition is not None else ""
        if when.args.get("matched"):
            clause = len(arms) + 1
            arms.append(f"WHEN {matches(extra)} THEN {clause}")
            mine = f"{cond} AND {salias}.__clause = {clause}"
            if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
                changes.append(
                    f"DELETE FROM {table} AS {talias} WHERE EXISTS (SELECT 1 FROM "
                    f"temp.{MERGE_SOURCE} AS {salias} WHERE {mine})"
                )
            elif isinstance(then, exp.Update) and then.expressions:
                sets = ", ".join(
                    f"{sql(exp.to_identifier(e.this.name))} = {sql(e.expression)}"
                    for e in then.expressions
                )
                changes.append(
                    f"UPDATE {table} AS {talias} SET {sets} FROM temp.{MERGE_SOURCE} AS "
                    f"{salias} WHERE {mine}"
                )
            else:
                raise fail("clause other than UPDATE SET or DELETE")
        else:
            if not isinstance(then, exp.Insert) or not isinstance(then.expression, exp.Tuple):
                raise fail("clause other than INSERT ... VALUES")
            columns = (
                f" ({', '.join(sql(c) for c in then.this.expressions)})"
                if isinstance(then.this, exp.Tuple)
                else ""
            )
            values = ", ".join(sql(v) for v in then.expression.expressions)
            guard = "".join(f" AND NOT coalesce(({e}), FALSE)" for e in unmatched_before)
            inserts.append(
                f"INSERT INTO {table}{columns} SELECT {values} FROM temp.{MERGE_SOURCE} AS "
                f"{salias} WHERE NOT {salias}.__matched{extra}{guard}"
            )
            unmatched_before.append(sql(condition) if condition is not None else "TRUE")
    clause = f"CASE {' '.join(arms)} END" if arms else "NULL"
    out = [
        "SAVEPOINT arrivalbench_merge",
        f"DROP TABLE IF EXISTS temp.{MERGE_SOURCE}",
        f"CREATE TEMP TABLE {MERGE_SOURCE} AS SELECT {salias}.*, {matches()} AS __matched, "
        f"{clause} AS __clause FROM {sql(source)} AS {salias}",
        *changes,
        *inserts,
    ]
    out += [f"DROP TABLE temp.{MERGE_SOURCE}", "RELEASE arrivalbench_merge"]
    return out
