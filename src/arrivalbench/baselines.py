"""Model-free pipelines derived from any task's spec and oracle: naive baselines and key templates.

Each keeps (or not) some history and then rebuilds the target with the task's own oracle query
over that history. All are reference arms (role `reference`).

- The naive baselines (`NAIVE`) are what a hurried engineer writes. The gate shows them
  beside the controls; they never earn a hazard declaration there (`batch_only` fails the
  in-order stream already, and a declaration needs a plausible mistake that is right in order).
- The key templates (`TEMPLATES`) answer the paper's open question, whether the idempotency
  failure is about knowing the constraint or writing the query: one uniform template per task,
  keyed on the source's declared `event_id`, built from the columns task.yaml declares.
  `pk_constraint` declares the key and inserts plainly, so any second copy of an event (in one
  batch or a later one) is a loud constraint error; `pk_dedup` keeps the key, skips events
  already stored and keeps one row per `event_id` of the arriving batch (the paper's template).
  They appear in the reference corpus, not in the gate.

`BASELINES` holds both, naive first: the arms make-corpus adds after gold and controls.

A pipeline exists only for a task whose oracle is a single query (a prefix of set-up statements
could not be re-run every batch).

The scripts are DuckDB SQL, carried to another engine by dialects.transpile. The naive history
appends with DuckDB's `UNION ALL BY NAME`, which keeps a column that appears only in later
deliveries and which no other engine has; for another engine (`baseline_script(..., engine)`) it
appends with `INSERT ... BY NAME` instead, which the transpiler spells with every declared column
(the evolving one included), so the history holds that column from the first delivery.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from arrivalbench.engines import DEFAULT_ENGINE, engine_info
from arrivalbench.spec import SourceSpec, Task

_META = "EXCLUDE (_arrival_seq, _batch_id)"


def _history(source: SourceSpec, where: str = "", portable: bool = False) -> list[str]:
    """Append the batch to a history table by column name, so a column that appears later is kept
    (portable: by INSERT ... BY NAME, which the transpiler spells out for another engine)."""
    table = f"naive_{source.name}_history"
    append = (
        f"INSERT INTO {table} BY NAME SELECT * {_META} FROM {source.name}_batch {where}"
        if portable
        else f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM {table} "
        f"UNION ALL BY NAME SELECT * {_META} FROM {source.name}_batch {where}"
    )
    return [
        f"CREATE TABLE IF NOT EXISTS {table} AS SELECT * {_META} FROM {source.name}_batch LIMIT 0",
        append.rstrip(),
        f"CREATE OR REPLACE TEMP VIEW {source.name} AS SELECT * FROM {table}",
    ]


def _append(source: SourceSpec, portable: bool = False) -> list[str]:
    """Every delivered row goes into history, as delivered."""
    return _history(source, portable=portable)


def _watermark(source: SourceSpec, portable: bool = False) -> list[str]:
    """Only rows at or after the newest event time already stored are kept."""
    table = f"naive_{source.name}_history"
    floor = f"(SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM {table})"
    return _history(source, where=f"WHERE ts_event >= {floor}", portable=portable)


def _batch_only(source: SourceSpec, portable: bool = False) -> list[str]:
    """No history at all: the target is rebuilt from the current delivery alone."""
    return [
        f"CREATE OR REPLACE TEMP VIEW {source.name} AS SELECT * {_META} FROM {source.name}_batch"
    ]


@dataclass(frozen=True)
class Baseline:
    name: str
    summary: str
    stage: Callable[[SourceSpec, bool], list[str]]  # (source, portable) -> staging statements


NAIVE: dict[str, Baseline] = {
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


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _keyed_history(source: SourceSpec) -> str:
    """The history table with the source's declared columns and types, keyed on `event_id`."""
    columns = ", ".join(
        f"{_quote(c)} {t}{' PRIMARY KEY' if c == 'event_id' else ''}"
        for c, t in source.columns.items()
    )
    return f"CREATE TABLE IF NOT EXISTS tpl_{source.name}_history ({columns})"


def _pk_constraint(source: SourceSpec, portable: bool = False) -> list[str]:
    """Plain INSERT into a history with a declared key: a second copy of an event is an error."""
    table = f"tpl_{source.name}_history"
    return [
        _keyed_history(source),
        f"INSERT INTO {table} BY NAME SELECT * {_META} FROM {source.name}_batch",
        f"CREATE OR REPLACE TEMP VIEW {source.name} AS SELECT * FROM {table}",
    ]


def _pk_dedup(source: SourceSpec, portable: bool = False) -> list[str]:
    """Insert only events not yet stored, one row per `event_id` of the batch (its first arrival)."""
    table = f"tpl_{source.name}_history"
    return [
        _keyed_history(source),
        f"INSERT INTO {table} BY NAME SELECT * {_META} FROM {source.name}_batch AS b "
        f"WHERE NOT EXISTS (SELECT 1 FROM {table} AS h WHERE h.event_id = b.event_id) "
        "QUALIFY row_number() OVER (PARTITION BY b.event_id ORDER BY b._arrival_seq) = 1",
        f"CREATE OR REPLACE TEMP VIEW {source.name} AS SELECT * FROM {table}",
    ]


TEMPLATES: dict[str, Baseline] = {
    b.name: b
    for b in (
        Baseline(
            "pk_constraint",
            "history with a declared PRIMARY KEY on event_id, plain INSERT, rebuild the target",
            _pk_constraint,
        ),
        Baseline(
            "pk_dedup",
            "history keyed on event_id, insert unseen events once per batch, rebuild the target",
            _pk_dedup,
        ),
    )
}
BASELINES: dict[str, Baseline] = {**NAIVE, **TEMPLATES}


def baseline_script(task: Task, name: str, engine: str = DEFAULT_ENGINE) -> str | None:
    """The SQL of a baseline or template for this task, or None when the oracle is not a single
    query; for an engine other than DuckDB, in the form dialects.transpile carries to it."""
    try:
        statements = duckdb.extract_statements(task.oracle_sql)
    except duckdb.Error:  # an oracle that does not parse: the gate reports it, there is no baseline
        return None
    if len(statements) != 1:
        return None
    query = statements[0].query.strip().rstrip(";")
    portable = not engine_info(engine).authored
    lines = [
        stmt for source in task.spec.sources for stmt in BASELINES[name].stage(source, portable)
    ]
    lines.append(f"CREATE OR REPLACE TABLE {task.spec.target.name} AS\n{query}")
    return ";\n".join(lines) + ";\n"
