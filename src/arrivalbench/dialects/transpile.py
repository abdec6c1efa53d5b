"""One DuckDB script in another engine's SQL: parse, rewrite each statement by the engine's
rules (`dialects.dialect`), print with sqlglot, one statement a line group ending with ';'."""

from __future__ import annotations

from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from arrivalbench.dialects.context import AUTHORED, Context, TranspileError
from arrivalbench.dialects.decimals import decimal_names
from arrivalbench.dialects.dialect import DIALECTS
from arrivalbench.dialects.name_projections import name_projections
from arrivalbench.dialects.replace import replace_statements
from arrivalbench.dialects.upsert import tables_made
from arrivalbench.engines import engine_info


def transpile(
    sql: str,
    engine: str,
    where: str = "script",
    columns: dict[str, list[str]] | None = None,
    decimals: dict[str, int] | None = None,
) -> str:
    """`sql` (DuckDB) in `engine`'s SQL, one statement a line group, each ending with ';'.
    `columns` are the delivery tables' columns and `decimals` the sources' DECIMAL columns with
    their scales (`delivery_columns`, `source_decimals`)."""
    info = engine_info(engine)
    if info.authored:
        return sql
    dialect = DIALECTS[info.name]
    try:
        parsed = sqlglot.parse(sql, read=AUTHORED)
        parsed = [None if e is None else name_projections(e) for e in parsed]
        context = Context(
            where=where,
            columns=columns or {},
            decimals=decimal_names(parsed, decimals or {}),
            made=tables_made(parsed),
            delivered=dialect.delivered,
        )
        out = []
        in_transaction = False  # the script's own BEGIN ... COMMIT, read in order
        for expression in parsed:
            if expression is None:
                continue
            for rule in dialect.rules:
                expression = rule(expression, context)
            if isinstance(expression, exp.Transaction):
                in_transaction = True
            elif isinstance(expression, exp.Commit | exp.Rollback):
                in_transaction = False
            if dialect.merge is not None and isinstance(expression, exp.Merge):
                out += dialect.merge(expression, where)
                continue
            parts = [
                s.sql(dialect=info.dialect, pretty=True, unsupported_level=ErrorLevel.RAISE)
                for s in replace_statements(expression)
            ]
            if dialect.savepoint and len(parts) > 1:  # atomic, as DuckDB's one statement was
                parts = ["SAVEPOINT arrivalbench_replace", *parts, "RELEASE arrivalbench_replace"]
            elif len(parts) > 1 and not in_transaction:  # a SAVEPOINT needs a BEGIN
                parts = ["BEGIN", *parts, "COMMIT"]
            out += parts
    except SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TranspileError(
            f"{where}: does not transpile from DuckDB to {engine} SQL ({first}); write it by "
            f"hand beside it as {Path(where).name.removesuffix('.sql')}.{engine}.sql."
        ) from None
    return "".join(statement + ";\n" for statement in out)
