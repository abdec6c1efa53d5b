"""`window_off_by_one`: a window bound one unit too wide or too narrow at its edge (seven days
where the window spans six back and the day itself, a frame of three rows for two, 31 minutes for
30). The counterfactual is the task's oracle with one bound moved by one: an integer in an
INTERVAL, in a window frame, or added to or subtracted from a value that a comparison or a
BETWEEN bounds."""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp

from arrivalbench.explain.shapes.counterfactual import Counterfactual, delivered
from arrivalbench.explain.shapes.oracle_rewrite import is_integer, mutants
from arrivalbench.logs import Log
from arrivalbench.schedules import Schedule
from arrivalbench.spec import Task

BOUNDED = (exp.Between, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ)


def _moved(literal: exp.Expression, step: int) -> exp.Expression | None:
    value = int(str(literal.this)) + step
    if value < 0:
        return None
    return exp.Literal(this=str(value), is_string=literal.is_string)


def _is_bound(node: exp.Expression) -> bool:
    """An integer whose move by one moves a window's edge."""
    parent = node.parent
    if isinstance(parent, exp.Interval):
        return True
    if isinstance(parent, exp.WindowSpec):
        return node.arg_key in ("start", "end")
    if isinstance(parent, exp.Add | exp.Sub):
        return isinstance(parent.find_ancestor(*BOUNDED, exp.Select), BOUNDED)
    return False


def moved(node: exp.Expression) -> Iterator[tuple[exp.Expression, str]]:
    if not (is_integer(node) and _is_bound(node)):
        return
    context = node.parent
    assert context is not None
    for step in (-1, 1):
        new = _moved(node, step)
        if new is None:
            continue
        shown = context.copy()
        for child in shown.iter_expressions():
            if child == node:
                child.replace(new.copy())
                break
        yield new, f"`{context.sql(dialect='duckdb')}` taken as `{shown.sql(dialect='duckdb')}`"


def window_off_by_one(task: Task, log: Log, schedule: Schedule) -> Iterator[Counterfactual]:
    yield from mutants(task, delivered(log, schedule), moved)
