"""Each engine's rewrite rules, in the order they apply, and how it keeps several statements
that stand for one atomic.

A rule is one module exporting one function of the same name over one parsed statement
(sqlglot's optimizer shape); rules shared by two engines are the same function. The order is
part of the output: each rule sees what the rules before it made.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from arrivalbench.dialects.any_value import any_value
from arrivalbench.dialects.arg_extremes import arg_extremes
from arrivalbench.dialects.conflict_where import conflict_where
from arrivalbench.dialects.context import Rule
from arrivalbench.dialects.decimals import exact_decimals
from arrivalbench.dialects.delete_using import delete_using
from arrivalbench.dialects.delivery_stars import (
    delivered_postgres,
    delivered_sqlite,
    delivery_stars,
)
from arrivalbench.dialects.distinct_window import distinct_window
from arrivalbench.dialects.group_by_all import group_by_all
from arrivalbench.dialects.in_row_select import in_row_select
from arrivalbench.dialects.interval import interval
from arrivalbench.dialects.merge import merge
from arrivalbench.dialects.null_order import null_order
from arrivalbench.dialects.range_window import range_window
from arrivalbench.dialects.subquery_alias import subquery_alias
from arrivalbench.dialects.time_arithmetic import time_arithmetic
from arrivalbench.dialects.upsert import upsert
from arrivalbench.engines import POSTGRES, SQLITE


@dataclass(frozen=True)
class Dialect:
    """`rules` rewrite each statement in order; `delivered` spells a delivery column; `merge`
    writes a MERGE as statements of the engine's own (None: sqlglot prints it); `savepoint`:
    statements standing for one (a CREATE OR REPLACE) are made atomic by a SAVEPOINT, which
    needs no transaction (SQLite), else by BEGIN ... COMMIT outside the script's own
    transaction (PostgreSQL, where a SAVEPOINT needs a BEGIN)."""

    rules: tuple[Rule, ...]
    delivered: Callable[[str, str], exp.Expression]
    merge: Callable[[exp.Merge, str], list[str]] | None = None
    savepoint: bool = False


SQLITE_RULES: tuple[Rule, ...] = (
    range_window,
    arg_extremes,
    exact_decimals,
    null_order,
    group_by_all,
    interval,
    in_row_select,
    time_arithmetic,
    distinct_window,
    any_value,
    delivery_stars,
    delete_using,
    conflict_where,
)
"""DuckDB forms SQLite lacks, rewritten where the meaning is certain."""

POSTGRES_RULES: tuple[Rule, ...] = (
    any_value,
    group_by_all,
    in_row_select,
    arg_extremes,
    distinct_window,
    subquery_alias,
    delivery_stars,
    upsert,
)
"""DuckDB forms PostgreSQL lacks."""

DIALECTS: dict[str, Dialect] = {
    SQLITE.name: Dialect(SQLITE_RULES, delivered_sqlite, merge=merge, savepoint=True),
    POSTGRES.name: Dialect(POSTGRES_RULES, delivered_postgres),
}
"""The rewrite of every engine that is not the authored one, by engine name."""
