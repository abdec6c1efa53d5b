"""Naive baseline pipelines, derived from any task's spec and oracle: what a hurried engineer writes.

Each baseline keeps (or not) some history and then rebuilds the target with the task's own oracle
query over that history. They are used by the gate, to prove that a declared hazard can change a
pipeline's final state, and as reference arms. A baseline exists only for a task whose oracle is
a single query (a prefix of set-up statements could not be re-run every batch).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from arrivalbench.spec import SourceSpec, Task

_META = "EXCLUDE (_arrival_seq, _batch_id)"


def _history(source: SourceSpec, where: str = "") -> list[str]:
    """Append the batch to a history table by column name, so a column that appears later is kept."""
    table = f"naive_{source.name}_history"
    return [
        f"CREATE TABLE IF NOT EXISTS {table} AS SELECT * {_META} FROM {source.name}_batch LIMIT 0",
        f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM {table} "
        f"UNION ALL BY NAME SELECT * {_META} FROM {source.name}_batch {where}".rstrip(),
        f"CREATE OR REPLACE TEMP VIEW {source.name} AS SELECT * FROM {table}",
    ]


def _append(source: SourceSpec) -> list[str]:
    """Every delivered row goes into history, as delivered."""
    return _history(source)


def _watermark(source: SourceSpec) -> list[str]:
    """Only rows at or after the newest event time already stored are kept."""
    table = f"naive_{source.name}_history"
    floor = f"(SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM {table})"
    return _history(source, where=f"WHERE ts_event >= {floor}")


def _batch_only(source: SourceSpec) -> list[str]:
    """No history at all: the target is rebuilt from the current delivery alone."""
    return [
        f"CREATE OR REPLACE TEMP VIEW {source.name} AS SELECT * {_META} FROM {source.name}_batch"
    ]


@dataclass(frozen=True)
class Baseline:
    name: str
    summary: str
    stage: Callable[[SourceSpec], list[str]]


BASELINES: dict[str, Baseline] = {
    b.name: b
    for b in (
        Baseline(
            "naive_append", "append every delivered row to history, rebuild the target", _append
        ),
        Baseline(
            "naive_watermark",
            "keep rows not older than the newest stored, rebuild the target",
            _watermark,
        ),
        Baseline("batch_only", "rebuild the target from the current delivery only", _batch_only),
    )
}


def baseline_script(task: Task, name: str) -> str | None:
    """The baseline's SQL for this task, or None when the oracle is not a single query (or no query)."""
    try:
        statements = duckdb.extract_statements(task.oracle_sql)
    except duckdb.Error:  # an oracle that does not parse: the gate reports it, there is no baseline
        return None
    if len(statements) != 1:
        return None
    query = statements[0].query.strip().rstrip(";")
    lines = [stmt for source in task.spec.sources for stmt in BASELINES[name].stage(source)]
    lines.append(f"CREATE OR REPLACE TABLE {task.spec.target.name} AS\n{query}")
    return ";\n".join(lines) + ";\n"
