"""What every rewrite rule is handed: the script's place and what the task and the whole script say.

A rule is `rule(expression, context) -> expression` over one parsed statement (sqlglot's
optimizer shape); a dialect applies its rules in order (`dialects.dialect`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from arrivalbench.engines import AUTHORED as AUTHORED_ENGINE
from arrivalbench.errors import ArrivalBenchError

AUTHORED = AUTHORED_ENGINE.dialect
"""The SQL the suite is written in (sqlglot's name)."""


class TranspileError(ArrivalBenchError):
    """A reference script that sqlglot cannot carry into an engine's SQL."""


@dataclass(frozen=True)
class Context:
    """`where` names the script in errors; `columns` are the delivery tables' columns
    (`delivery_columns`), `decimals` every name that holds an exact DECIMAL in the script with
    its scale (`decimal_names`), `made` the script's own CREATE TABLE columns and keys
    (`tables_made`), and `delivered` spells one delivery column in the engine's SQL."""

    where: str = "script"
    columns: dict[str, list[str]] = field(default_factory=dict)
    decimals: dict[str, int] = field(default_factory=dict)
    made: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)
    delivered: Callable[[str, str], exp.Expression] = exp.column


Rule = Callable[[exp.Expression, Context], exp.Expression]
