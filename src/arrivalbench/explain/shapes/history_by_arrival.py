"""`history_by_arrival`: a history chain (SCD2-style: each change valid until the next) closed or
opened by arrival instead of by effective time: a change is closed by the change of its entity
received next, and the change received last is the current one.

The counterfactual hands each entity's (event time, event id) pairs out again in the order its
changes were first received, runs the task's oracle, and maps the times and ids in the result
back to the changes that received them: every change keeps its own values, chained in arrival
order. Only sources with an entity key whose column the target carries are rechained."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from arrivalbench.engines import Engine
from arrivalbench.explain.shapes.counterfactual import Counterfactual, first_arrivals
from arrivalbench.logs import Log
from arrivalbench.oracle import oracle_over
from arrivalbench.schedules import Schedule
from arrivalbench.spec import Task


def _rechained(
    log: Log, rows: list[int], order: dict[int, int], name: str, key: str
) -> tuple[pa.Table, dict[object, object], dict[tuple[object, object], set[object]]]:
    """Source `name`'s delivered rows with each entity's (time, id) pairs in arrival order, and
    the maps back: new id -> own id, (entity, new time) -> own times."""
    positions, where = log.split(np.array(rows, dtype=np.int64))[name]
    table = log.tables[name].take(pa.array(positions, pa.int64()))
    spine_rows = [rows[int(i)] for i in where]
    ts, ids, keys = (table.column(c).to_pylist() for c in (log.time_column, log.key_column, key))
    by_entity: dict[object, list[int]] = {}
    for i, k in enumerate(keys):
        by_entity.setdefault(k, []).append(i)
    new_ts, new_id = list(ts), list(ids)
    for members in by_entity.values():
        pairs = sorted((ts[i], ids[i]) for i in members)
        for i, (t, e) in zip(
            sorted(members, key=lambda i: order[spine_rows[i]]), pairs, strict=True
        ):
            new_ts[i], new_id[i] = t, e
    id_back = dict(zip(new_id, ids, strict=True))
    ts_back: dict[tuple[object, object], set[object]] = {}
    for k, t, own in zip(keys, new_ts, ts, strict=True):
        ts_back.setdefault((k, t), set()).add(own)
    for column, values in ((log.time_column, new_ts), (log.key_column, new_id)):
        index = table.schema.get_field_index(column)
        table = table.set_column(index, column, pa.array(values, table.schema.field(column).type))
    return table, id_back, ts_back


def history_by_arrival(task: Task, log: Log, schedule: Schedule) -> Iterator[Counterfactual]:
    target = task.spec.target
    chained = [s for s in log.sources if s.entity_key and s.entity_key in target.columns]
    times = [c for c, kind in target.columns.items() if kind.upper().startswith("TIMESTAMP")]
    if not chained or not times:
        return
    firsts = first_arrivals(schedule)
    order = {row: seq for row, _, seq in firsts}
    rows = sorted(order)

    def compute(task: Task, engine: Engine) -> pa.Table | None:
        tables = log.subset_tables(rows)
        id_back: dict[object, object] = {}
        ts_back: dict[tuple[object, object], set[object]] = {}
        for source in chained:
            assert source.entity_key is not None
            tables[source.name], ids, stamps = _rechained(
                log, rows, order, source.name, source.entity_key
            )
            id_back |= ids
            ts_back |= stamps
        if all(t.equals(tables[n]) for n, t in log.subset_tables(rows).items()):
            return None  # arrival order is event order here: nothing rechained
        out = oracle_over(task, tables, engine, "the history chained in arrival order")
        key = chained[0].entity_key
        records = out.to_pylist()
        for record in records:
            if log.key_column in record:
                record[log.key_column] = id_back.get(record[log.key_column], record[log.key_column])
            for column in times:
                value = record[column]
                own = ts_back.get((record[key], value))
                if own is None:
                    continue
                if len(own) > 1:
                    return None  # two changes received the same time: cannot map back
                record[column] = next(iter(own))
        return pa.Table.from_pylist(records, out.schema)

    yield Counterfactual(compute, "each change closed by the one received next")
