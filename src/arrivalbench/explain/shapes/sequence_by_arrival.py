"""`sequence_by_arrival`: sessions (or any run of an entity's events split by a gap) built walking
the entity's events in the order received, each gap measured to the event received before it,
instead of in event-time order.

The counterfactual runs the task's oracle twice. First over warped times: per entity, in first-
arrival order, each event's time is the previous one's plus its forward step (a step back in time
counts as no gap, as the arrival walker sees none), so the oracle cuts where the walker cuts; its
result's time intervals name the groups. Then over each group's events given times a microsecond
apart (in their own order) and groups placed far apart, so each group is one run; every time in
that result is mapped back to its event's own time. It abstains unless the groups read back cover
every event exactly once, and when every entity arrived in time order (nothing to explain). Only
sources whose entity the target names (entity_columns), and targets with timestamps, apply."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise

import numpy as np
import pyarrow as pa

from arrivalbench.engines import Engine
from arrivalbench.explain.shapes.counterfactual import Counterfactual, first_arrivals
from arrivalbench.logs import Log
from arrivalbench.oracle import oracle_over
from arrivalbench.schedules import Schedule
from arrivalbench.spec import Task

DAY = 86_400_000_000
SPAN = 10_000 * DAY
"""Microseconds between an entity's groups in the second pass: far beyond any gap an oracle cuts at."""
EARLIEST, LATEST = -2_208_988_800_000_000, 221_845_392_000_000_000
"""1900-01-01 and 9000-01-01 in microseconds: the range the second pass places groups in."""


def _micros(column: pa.ChunkedArray | pa.Array) -> list[int | None]:
    if column.type != pa.timestamp("us", tz=column.type.tz):
        column = column.cast(pa.timestamp("us", tz=column.type.tz))
    return column.cast(pa.int64()).to_pylist()


def _stamped(values: list[int | None], like: pa.DataType) -> pa.Array:
    return pa.array(values, pa.int64()).cast(pa.timestamp("us", tz=like.tz)).cast(like)


def _replaced(table: pa.Table, column: str, values: list[int | None]) -> pa.Table:
    index = table.schema.get_field_index(column)
    return table.set_column(index, column, _stamped(values, table.schema.field(column).type))


def _entities(table: pa.Table, columns: list[str]) -> list[tuple[object, ...]]:
    return list(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def _groups(
    out: pa.Table, key: list[str], times: list[str], warped: dict[object, list[int]]
) -> dict[object, list[list[int]]] | None:
    """Per entity, its events (indices into the source rows) in each group the oracle formed over
    warped times, groups in time order; None unless they cover every event exactly once."""
    entities = _entities(out, key)
    stamps = [_micros(out.column(c)) for c in times]
    intervals: dict[object, list[tuple[int, int]]] = {}
    for r, entity in enumerate(entities):
        values = [s[r] for s in stamps if s[r] is not None]
        if not values:
            return None
        intervals.setdefault(entity, []).append((min(values), max(values)))
    groups: dict[object, list[list[int]]] = {}
    for entity, members in warped.items():
        spans = sorted(intervals.pop(entity, []))
        if not spans or any(a[1] >= b[0] for a, b in pairwise(spans)):
            return None
        found = [[i for i, s in members if lo <= s <= hi] for lo, hi in spans]
        if sum(map(len, found)) != len(members) or not all(found):
            return None
        groups[entity] = found
    return None if intervals else groups


def entity_columns(task: Task, log: Log, index: int) -> list[str]:
    """The columns naming the entity whose events a source's sequences walk: its `entity_key`
    when the target carries it, else the target's key columns it carries (other than its event
    time and id), as web_sessions' `user_id` of (`user_id`, `session_start`)."""
    source, target = log.sources[index], task.spec.target
    if source.entity_key:
        return [source.entity_key] if source.entity_key in target.columns else []
    own = log.columns_of(index)
    return [c for c in target.key if c in source.columns and c not in own]


def sequence_by_arrival(task: Task, log: Log, schedule: Schedule) -> Iterator[Counterfactual]:
    target = task.spec.target
    times = [c for c, kind in target.columns.items() if kind.upper().startswith("TIMESTAMP")]
    keyed = [
        (i, s, entity_columns(task, log, i))
        for i, s in enumerate(log.sources)
        if pa.types.is_timestamp(log.tables[s.name].schema.field(log.columns_of(i)[1]).type)
    ]
    keyed = [(i, s, k) for i, s, k in keyed if k]
    if not keyed or not times:
        return
    order = {row: seq for row, _, seq in first_arrivals(schedule)}
    rows = sorted(order)

    def compute(
        task: Task, engine: Engine, index: int, name: str, key: list[str]
    ) -> pa.Table | None:
        time_column = log.columns_of(index)[1]
        positions, where = log.split(np.array(rows, dtype=np.int64))[name]
        table = log.tables[name].take(pa.array(positions, pa.int64()))
        arrived = [order[rows[int(w)]] for w in where]
        own = _micros(table.column(time_column))
        entities = _entities(table, key)
        by_entity: dict[object, list[int]] = {}
        for i in sorted(range(len(own)), key=arrived.__getitem__):
            by_entity.setdefault(entities[i], []).append(i)
        warp = list(own)
        for members in by_entity.values():
            for previous, i in pairwise(members):
                warp[i] = warp[previous] + max(0, own[i] - own[previous])
        if warp == own:
            return None  # every entity arrived in time order: nothing to explain
        tables = log.subset_tables(rows)
        tables[name] = _replaced(table, time_column, warp)
        first = oracle_over(task, tables, engine, "the sequence walked in arrival order")
        groups = _groups(
            first, key, times, {e: [(i, warp[i]) for i in m] for e, m in by_entity.items()}
        )
        if groups is None:
            return None
        widest = max(len(g) for gs in groups.values() for g in gs)
        span = min(SPAN, (LATEST - EARLIEST) // max(len(gs) for gs in groups.values()))
        if span <= widest + DAY:
            return None
        packed = list(own)
        back: dict[tuple[object, int], int] = {}
        for entity, entity_groups in groups.items():
            for g, members in enumerate(entity_groups):
                distinct = sorted({own[i] for i in members})
                base = EARLIEST + g * span
                rank = {t: base + k for k, t in enumerate(distinct)}
                for i in members:
                    packed[i] = rank[own[i]]
                back |= {((entity, c)): t for t, c in rank.items()}
        tables[name] = _replaced(table, time_column, packed)
        second = oracle_over(task, tables, engine, "each sequence walked in arrival order")
        entities_out = _entities(second, key)
        for column in times:
            mapped = []
            for entity, value in zip(entities_out, _micros(second.column(column)), strict=True):
                if value is not None and (entity, value) not in back:
                    return None
                mapped.append(None if value is None else back[(entity, value)])
            second = _replaced(second, column, mapped)
        return second

    several = len(keyed) > 1
    for index, source, key in keyed:
        detail = "each gap measured to the event received before it"
        yield Counterfactual(
            lambda task, engine, i=index, n=source.name, k=key: compute(task, engine, i, n, k),
            f"{detail}, on {source.name}" if several else detail,
        )
