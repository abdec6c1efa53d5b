"""One-site rewrites of a task's oracle query (sqlglot), for the shapes that are a wrong bound or
comparison rather than a wrong set of rows: the oracle with that one site changed is the target
the mistaken pipeline builds.

A rewrite is trusted only when the query regenerated without any change still gives the true
table (sqlglot round-trips DuckDB, but a construct it cannot express must not yield labels).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import pyarrow as pa
import sqlglot
from sqlglot import exp

from arrivalbench.compare import compare
from arrivalbench.engines import Engine
from arrivalbench.errors import OracleError
from arrivalbench.explain.shapes.counterfactual import Counterfactual, rewritten
from arrivalbench.oracle import oracle_over
from arrivalbench.spec import Task

Rewrite = Callable[[exp.Expression], Iterator[tuple[exp.Expression, str]]]
"""Given a node, its replacements and a few words naming each (none: the node is no site)."""

DIALECT = "duckdb"


def parsed(task: Task) -> exp.Expression | None:
    try:
        return sqlglot.parse_one(task.oracle_sql, read=DIALECT)
    except sqlglot.errors.ParseError:
        return None


def mutants(task: Task, tables: dict[str, pa.Table], rewrite: Rewrite) -> Iterator[Counterfactual]:
    """The oracle rewritten at one site at a time, over these source tables; none at all when the
    regenerated, unchanged oracle does not give the true table."""
    tree = parsed(task)
    if tree is None:
        return
    trusted: dict[str, bool] = {}

    def round_trips(engine: Engine) -> bool:
        if "ok" not in trusted:
            again = dataclasses.replace(task, oracle_sql=tree.sql(dialect=DIALECT))
            try:
                truth = oracle_over(task, tables, engine, "the delivered events")
                same = oracle_over(again, tables, engine, "the regenerated oracle")
                trusted["ok"] = compare(truth, same, task.spec.target).equal
            except OracleError:
                trusted["ok"] = False
        return trusted["ok"]

    for i, node in enumerate(tree.walk()):
        for k, (_, words) in enumerate(rewrite(node)):
            copy = tree.copy()
            target = list(copy.walk())[i]
            replacement = list(rewrite(target))[k][0]  # built from the copy's own children
            if target is copy:
                copy = replacement
            else:
                target.replace(replacement)
            mutant = rewritten(copy.sql(dialect=DIALECT), tables, words)

            def compute(
                t: Task, engine: Engine, mutant: Counterfactual = mutant
            ) -> pa.Table | None:
                return mutant.compute(t, engine) if round_trips(engine) else None

            yield Counterfactual(compute, words)


def is_integer(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and str(node.this).lstrip("-").isdigit()
