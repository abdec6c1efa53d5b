"""Change data for entity state: each event carries an entity's full new state and its version.

Versions count an entity's events in canonical order (event time, ties by event id), so they are
assigned in `_finish`, after make_log has fixed that order.

Edge cases (off by default, so a task's log changes only when it asks): `last_tie_share` stamps
the last event of a share of entities with exactly the time of the one before, so the entity's
current state is decided by the stated tie-break (the event ids are random, so either of the two
may win), not by the time alone. `time_grain_seconds` rounds every time down to a grain (no
random draw), so changes can coincide with events of another feed on the same grain.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from arrivalbench.generators import (
    Generator,
    cents_to_decimal,
    register,
    round_down,
    timestamps,
    ts_array,
)


class EntityChangesParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    events: int = Field(300, ge=10, le=10_000_000)
    entities: int = Field(40, ge=1)
    days: int = Field(10, ge=2)
    start: str = "2026-03-01"
    key: str = Field("entity_id", pattern=r"^[a-z][a-z0-9_]*$")
    attributes: dict[str, list[str]] = Field(
        default_factory=lambda: {"status": ["active", "paused", "closed"]}, min_length=1
    )
    tie_share: float = Field(0.05, ge=0.0, le=0.5)
    """Share of events stamped with exactly the same time as the entity's previous event."""
    delete_share: float = Field(0.0, ge=0.0, le=0.5)
    """Share of non-first events that are deletes (op = 'delete')."""
    last_tie_share: float = Field(0.0, ge=0.0, le=1.0)
    """Share of entities with two or more events whose last two events share one time."""
    time_grain_seconds: int = Field(1, ge=1, le=86_400)
    """Event times rounded down to a multiple of this many seconds (from `start`), so a change
    can share its `ts_event` with an event of another feed on the same grain."""


def _columns(p: EntityChangesParams) -> dict[str, str]:
    cols = {"ts_event": "TIMESTAMP", p.key: "INTEGER", "version": "BIGINT", "op": "VARCHAR"}
    cols.update({name: "VARCHAR" for name in p.attributes})
    cols["amount"] = "DECIMAL(12,2)"
    return cols


def _build(p: EntityChangesParams, random: np.random.Generator) -> dict[str, pa.Array]:
    n = p.events
    entity = random.integers(1, p.entities + 1, n)
    ts = timestamps(random, n, p.start, p.days)
    # Tie some events to the time of their entity's previous event, so "latest" needs a tie-break.
    order = np.lexsort((ts, entity))
    same_entity_as_prev = np.r_[False, entity[order][1:] == entity[order][:-1]]
    tie = same_entity_as_prev & (random.random(n) < p.tie_share)
    sorted_ts = ts[order]
    for i in np.flatnonzero(tie):
        sorted_ts[i] = sorted_ts[i - 1]
    ts[order] = sorted_ts
    columns: dict[str, pa.Array] = {
        "ts_event": ts_array(ts),
        p.key: pa.array(entity, pa.int32()),
    }
    for name, values in p.attributes.items():
        columns[name] = pa.array(
            np.asarray(values, dtype=object)[random.integers(0, len(values), n)], pa.string()
        )
    columns["amount"] = cents_to_decimal(random.integers(0, 100_000, n))
    columns["delete_draw"] = pa.array(random.random(n))
    if p.last_tie_share > 0:  # drawn last: the other columns stay as they were
        ts = _tie_last_two(p, random, ts, entity)
    columns["ts_event"] = ts_array(round_down(ts, p.start, p.time_grain_seconds))
    return columns


def _tie_last_two(
    p: EntityChangesParams, random: np.random.Generator, ts: np.ndarray, entity: np.ndarray
) -> np.ndarray:
    """Give the last event of a share of entities the time of the entity's previous event."""
    order = np.lexsort((ts, entity))
    sorted_entity = entity[order]
    last = np.r_[sorted_entity[1:] != sorted_entity[:-1], True]
    has_previous = np.r_[False, sorted_entity[1:] == sorted_entity[:-1]]
    chosen = np.flatnonzero(last & has_previous)
    chosen = chosen[random.random(len(chosen)) < p.last_tie_share]
    ts = ts.copy()
    ts[order[chosen]] = ts[order[chosen - 1]]
    return ts


def _finish(p: EntityChangesParams, columns: dict[str, pa.Array]) -> dict[str, pa.Array]:
    """Number each entity's events in canonical order; the first is an insert, later ones may delete."""
    entity = columns[p.key].to_numpy()
    n = len(entity)
    by_entity = np.argsort(entity, kind="stable")  # stable: keeps canonical order within an entity
    sorted_entity = entity[by_entity]
    starts = np.r_[True, sorted_entity[1:] != sorted_entity[:-1]]
    group_start = np.maximum.accumulate(np.where(starts, np.arange(n), 0))
    version = np.empty(n, dtype=np.int64)
    version[by_entity] = np.arange(n) - group_start + 1
    draw = columns["delete_draw"].to_numpy()
    op = np.where(version == 1, "insert", np.where(draw < p.delete_share, "delete", "update"))
    return columns | {"version": pa.array(version), "op": pa.array(op.astype(object), pa.string())}


register(
    Generator(
        kind="entity_changes",
        params=EntityChangesParams,
        columns=_columns,
        build=_build,
        finish=_finish,
    )
)
