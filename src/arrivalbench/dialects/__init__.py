"""A task's reference scripts (gold, controls, existing pipeline) in another engine's SQL.

The suite is authored in DuckDB SQL. For another engine each script is transpiled with sqlglot,
unless the task holds an override beside it: `gold.sqlite.sql` for `gold.sql`,
`controls/x.postgres.sql` for `controls/x.sql`. An override is written by hand where a
transpile is wrong or impossible (DuckDB's DISTINCT ON, `* EXCLUDE`, `UNION ALL BY NAME`,
IGNORE NULLS). Beyond sqlglot, each engine rewrites every statement by an ordered tuple of
rules, one module each (`dialect.py` holds the tuples): `CREATE OR REPLACE TABLE|VIEW`
(DuckDB's) becomes a DROP ... IF EXISTS followed by a CREATE, which both other engines run.
SQLite holds DuckDB's exact DECIMAL as a binary float, so there every decimal sum, difference
and cast is rounded to its scale (`decimals.py`); decimal-ness goes by name, as SQLite has no
types to ask.
"""

from arrivalbench.dialects.context import AUTHORED, Context, Rule, TranspileError
from arrivalbench.dialects.decimals import (
    DUCKDB_DEFAULT_SCALE,
    decimal_names,
    source_decimals,
)
from arrivalbench.dialects.delivery_stars import delivery_columns
from arrivalbench.dialects.dialect import DIALECTS, Dialect
from arrivalbench.dialects.merge import MERGE_SOURCE
from arrivalbench.dialects.scripts import engine_task, orphan_overrides, override_path, script_for
from arrivalbench.dialects.transpile import transpile

__all__ = [
    "AUTHORED",
    "DIALECTS",
    "DUCKDB_DEFAULT_SCALE",
    "MERGE_SOURCE",
    "Context",
    "Dialect",
    "Rule",
    "TranspileError",
    "decimal_names",
    "delivery_columns",
    "engine_task",
    "orphan_overrides",
    "override_path",
    "script_for",
    "source_decimals",
    "transpile",
]
