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
            raise OracleError(
                f"{where}: column {column} does not cast to {type_name} ({exc})."
            ) from None
    return pa.table(arrays)


def compute_oracle(task: Task, log: Log, engine: Engine) -> pa.Table:
    """Expected target for one log of a task."""
    return oracle_over(task, log.tables, engine, f"the {log.kind} log")


def oracle_over(task: Task, tables: dict[str, pa.Table], engine: Engine, what: str) -> pa.Table:
    """The oracle query over given source tables: part of a log (a shrunk schedule delivers only
    some events) or a transformed one (explain's counterfactual semantics)."""
    where = str(task.folder / "oracle.sql")
    try:
        result = engine.query(tables, task.oracle_sql)
    except Exception as exc:
        raise OracleError(f"{where}: the oracle query failed on {what}: {exc}") from None
    return conform(result, task.spec.target, where)


def oracle_defects(
    task: Task, log: Log, engine: Engine, seed: int, label: str | None = None
) -> list[str]:
    """Why this log's oracle result would be ambiguous: a repeated key, or dependence on row order.

    The oracle runs again on every source table shuffled (seeded); the two results must be equal.
    Messages name the seed as `label` when given (a private seed is never printed).
    """
    from arrivalbench.compare import compare
    from arrivalbench.seeds import rng

    label = label or f"seed {seed}"
    expected = compute_oracle(task, log, engine)
    defects = []
    keys = expected.select(task.spec.target.key)
    distinct = keys.group_by(task.spec.target.key).aggregate([]).num_rows
    if distinct != keys.num_rows:
        defects.append(f"the oracle repeats a key of the target on the {log.kind} log ({label})")
    r = rng("oracle-shuffle", task.id, seed)
    shuffled = {name: t.take(r.permutation(t.num_rows)) for name, t in log.tables.items()}
    first, *rest = log.sources
    shuffled_log = Log(
        task_id=log.task_id,
        kind=log.kind,
        seed=log.seed,
        source=first,
        table=shuffled[first.name],
        others=tuple((s, shuffled[s.name]) for s in rest),
    )
    again = compute_oracle(task, shuffled_log, engine)
    comparison = compare(expected, again, task.spec.target)
    if not comparison.equal:
        counts = {k: v for k, v in comparison.diff["counts"].items() if v}
        defects.append(
            f"the oracle's result depends on row order ({label}: {counts}); make its ties explicit"
        )
    return defects
