"""Spike: sqlglot's own types (qualify + annotate_types) against the name rules of the SQLite
rewrite; writes benchmarks/results/dialect_types.json.

    python benchmarks/dialect_types.py

SQLite has no types to ask, so `dialects/time_arithmetic.py` takes a column for a timestamp or
a date by its name (ts_*, *_at, *_start, *_end; day, *_day, *date) and `dialects/decimals.py`
tracks decimal names through declarations, casts and aliases. This script types every
statement of every gold and control script with sqlglot instead, from a schema built out of the
task spec (each source and its `_batch` table) and, statement by statement, the script's own
CREATE TABLEs (declared columns, or a CREATE ... AS query's annotated projections). It counts,
per column reference, where the two agree and where one knows a type the other does not (by
the kind of statement it is in), and for every difference of two timestamps (the one place a
timestamp drives a rewrite) whether the two would rewrite it alike.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

from arrivalbench.dialects.decimals import decimal_names, source_decimals
from arrivalbench.dialects.name_projections import name_projections
from arrivalbench.dialects.time_arithmetic import _is_date, _is_timestamp
from arrivalbench.spec import Task, load_suite

RESULTS = Path(__file__).parent / "results"
T = exp.DataType.Type
TIMESTAMPS = {T.TIMESTAMP, T.TIMESTAMPNTZ, T.TIMESTAMPLTZ, T.TIMESTAMPTZ, T.DATETIME}


def _kind(t: T | None) -> str | None:
    return "timestamp" if t in TIMESTAMPS else "date" if t == T.DATE else None


def _typed(tree: exp.Expression, schema: dict[str, dict[str, str]]) -> exp.Expression:
    mapping = MappingSchema(schema, dialect="duckdb")
    tree = qualify(tree, schema=mapping, dialect="duckdb", validate_qualify_columns=False)
    return annotate_types(tree, schema=mapping, dialect="duckdb")


def _learn(tree: exp.Expression, schema: dict[str, dict[str, str]]) -> None:
    """The columns (and their types) of a table or view the statement makes."""
    if not isinstance(tree, exp.Create) or (tree.kind or "").upper() not in ("TABLE", "VIEW"):
        return
    target = tree.this
    if isinstance(target, exp.Schema):
        schema[target.this.name] = {
            d.name: d.args["kind"].sql("duckdb")
            for d in target.expressions
            if isinstance(d, exp.ColumnDef) and d.args.get("kind")
        }
    elif isinstance(tree.expression, exp.Query):
        schema[target.name] = {
            p.alias_or_name: p.type.sql("duckdb") if p.type else "UNKNOWN"
            for p in tree.expression.selects
        }


def measure(task: Task, counts: Counter[str]) -> None:
    base: dict[str, dict[str, str]] = {}
    for source in task.spec.sources:
        base[source.name] = dict(source.columns)
        base[f"{source.name}_batch"] = {
            **source.columns,
            "_arrival_seq": "BIGINT",
            "_batch_id": "BIGINT",
        }
    for text in [task.gold_sql, *task.controls.values()]:
        schema = {name: dict(columns) for name, columns in base.items()}
        parsed = [name_projections(e) for e in sqlglot.parse(text, read="duckdb") if e is not None]
        decimals = decimal_names(parsed, source_decimals(task))
        for statement in parsed:
            try:
                tree = _typed(statement.copy(), schema)
            except sqlglot.errors.SqlglotError:
                counts["statements not typed"] += 1
                continue
            counts["statements typed"] += 1
            where = type(tree).__name__
            for node in tree.walk():
                if isinstance(node, exp.Sub) and node.this.type and node.expression.type:
                    typed = (
                        _kind(node.this.type.this)
                        == _kind(node.expression.type.this)
                        == "timestamp"
                    )
                    named = _is_timestamp(node.this) and _is_timestamp(node.expression)
                    if typed or named:
                        counts[f"timestamp difference: typed={typed} named={named}"] += 1
                if not isinstance(node, exp.Column):
                    continue
                t = node.type.this if node.type else None
                by_name = "timestamp" if _is_timestamp(node) else "date" if _is_date(node) else None
                if by_name or _kind(t):
                    same = by_name == _kind(t)
                    counts[
                        "time column: agree"
                        if same
                        else f"time column: name={by_name} type={t.name if t else None} in {where}"
                    ] += 1
                named_decimal = node.name.lower() in decimals
                if named_decimal or t == T.DECIMAL:
                    same = named_decimal == (t == T.DECIMAL)
                    counts[
                        "decimal column: agree"
                        if same
                        else f"decimal column: named={named_decimal} type={t.name if t else None} in {where}"
                    ] += 1
            _learn(tree, schema)


def main() -> None:
    counts: Counter[str] = Counter()
    for _, task in sorted(load_suite().items()):
        measure(task, counts)
    results = {"sqlglot": sqlglot.__version__, "counts": dict(sorted(counts.items()))}
    (RESULTS / "dialect_types.json").write_text(json.dumps(results, indent=2) + "\n")
    for key, value in sorted(counts.items()):
        print(f"{value:6d}  {key}")


if __name__ == "__main__":
    main()
