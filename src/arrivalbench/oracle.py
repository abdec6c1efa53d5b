"""The oracle: an independent batch query over the complete logical log, in a fresh database.

It is never the gold pipeline run once: oracle.sql is written separately, as a plain query over
the whole log (table `<source>`, final schema), so a gold that is wrong under some schedule cannot
certify itself.
"""

from __future__ import annotations

import pyarrow as pa

from arrivalbench.engines import Engine
from arrivalbench.errors import OracleError
from arrivalbench.logs import Log
from arrivalbench.spec import TargetSpec, Task
from arrivalbench.sqltypes import arrow_type


def conform(table: pa.Table, target: TargetSpec, where: str) -> pa.Table:
    """The table with exactly the target's columns, in order, cast to the declared types."""
    by_lower = {name.lower(): name for name in table.column_names}
    missing = [c for c in target.columns if c.lower() not in by_lower]
    extra = [n for n in table.column_names if n.lower() not in {c.lower() for c in target.columns}]
    if missing or extra:
        raise OracleError(
            f"{where}: result columns {table.column_names} do not match the target {list(target.columns)} "
            f"(missing {missing}, extra {extra}); fix the oracle query."
        )
    arrays = {}
    for column, type_name in target.columns.items():
        try:
            arrays[column] = table.column(by_lower[column.lower()]).cast(arrow_type(type_name))
        except pa.ArrowInvalid as exc:
            raise OracleError(f"{where}: column {column} does not cast to {type_name} ({exc}).") from None
    return pa.table(arrays)


def compute_oracle(task: Task, log: Log, engine: Engine) -> pa.Table:
    """Expected target for one log of a task."""
    where = str(task.folder / "oracle.sql")
    try:
        result = engine.query(log.tables, task.oracle_sql)
    except Exception as exc:
        raise OracleError(f"{where}: the oracle query failed on the {log.kind} log: {exc}") from None
    return conform(result, task.spec.target, where)
