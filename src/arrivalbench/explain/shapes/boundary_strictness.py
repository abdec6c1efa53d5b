"""`boundary_strictness`: a strict comparison where ties must count, or an inclusive one where
they must not (`>` for `>=`, `<=` for `<`): a threshold or a tie at the boundary decided the
wrong way. The counterfactual is the task's oracle with one of its comparisons flipped."""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from arrivalbench.explain.shapes.counterfactual import Counterfactual, delivered
from arrivalbench.explain.shapes.oracle_rewrite import mutants
from arrivalbench.logs import Log
from arrivalbench.schedules import Schedule
from arrivalbench.spec import Task

FLIPS: dict[type[exp.Expression], type[exp.Expression]] = {
    exp.GT: exp.GTE,
    exp.GTE: exp.GT,
    exp.LT: exp.LTE,
    exp.LTE: exp.LT,
}


def flipped(node: exp.Expression) -> Iterator[tuple[exp.Expression, str]]:
    other = FLIPS.get(type(node))
    if other is None:
        return
    new = other(this=node.this.copy(), expression=node.expression.copy())
    yield new, f"`{node.sql(dialect='duckdb')}` taken as `{new.sql(dialect='duckdb')}`"


def boundary_strictness(task: Task, log: Log, schedule: Schedule) -> Iterator[Counterfactual]:
    yield from mutants(task, delivered(log, schedule), flipped)
