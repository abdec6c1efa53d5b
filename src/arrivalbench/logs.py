"""A task's two logical logs: the visible one (snapshot test) and the hidden one (every other schedule).

A log holds one table per source. Schedules are built over the log's *spine*: every event of
every source in one canonical order (event time, ties by event id), so one schedule interleaves
all sources per batch and a hazard can hit an event of either stream. A delivery's rows are spine
positions; `split` turns them back into per-source row positions, keeping arrival order.

The event key and event time are the suite's `event_id` and `ts_event` unless a log names other
columns (`key_column`, `time_column`): a user's log (arrivalbench.check) keys its events by a
column of any type and times them by any timestamp or date column, and the schedule builders
work over it unchanged.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

import numpy as np
import pyarrow as pa

from arrivalbench.generators import make_log
from arrivalbench.seeds import derive_seed
from arrivalbench.spec import SourceSpec, Task

LogKind = Literal["visible", "hidden"]
ENTITY_BLOCK = 1 << 32
"""Entity keys of source i are offset by i * ENTITY_BLOCK on the spine, so streams never pair."""


@dataclass(frozen=True)
class Spine:
    source: np.ndarray  # index of the source of each event
    row: np.ndarray  # position of the event in its source's table
    event_id: np.ndarray
    ts: np.ndarray  # event time, microseconds


@dataclass(frozen=True, eq=False)
class Log:
    """One logical log: the primary source's table and any further sources', each in canonical order."""

    task_id: str
    kind: LogKind
    seed: int
    source: SourceSpec
    table: pa.Table = field(repr=False)
    others: tuple[tuple[SourceSpec, pa.Table], ...] = field(default=(), repr=False)
    key_column: str = "event_id"
    """The column that names an event (unique in the log)."""
    time_column: str = "ts_event"
    """The event-time column (a timestamp or a date)."""
    source_columns: tuple[tuple[str, str], ...] = ()
    """(key, event time) columns per source, in `sources` order, when a user's sources name
    them differently (arrivalbench.check); empty: every source uses the two above."""

    def columns_of(self, index: int) -> tuple[str, str]:
        """(key, event time) columns of the source at this index of `sources`."""
        if self.source_columns:
            return self.source_columns[index]
        return self.key_column, self.time_column

    @property
    def sources(self) -> tuple[SourceSpec, ...]:
        return (self.source, *(s for s, _ in self.others))

    @property
    def tables(self) -> dict[str, pa.Table]:
        return {self.source.name: self.table, **{s.name: t for s, t in self.others}}

    @cached_property
    def spine(self) -> Spine:
        tables = list(self.tables.values())
        named = [self.columns_of(i) for i in range(len(tables))]
        ids = np.concatenate(
            [
                t.column(k).to_numpy(zero_copy_only=False)
                for t, (k, _) in zip(tables, named, strict=True)
            ]
        )
        ts = np.concatenate([_micros(t.column(c)) for t, (_, c) in zip(tables, named, strict=True)])
        source = np.concatenate(
            [np.full(t.num_rows, i, dtype=np.int64) for i, t in enumerate(tables)]
        )
        row = np.concatenate([np.arange(t.num_rows, dtype=np.int64) for t in tables])
        if len(tables) == 1:
            order = np.arange(len(ids))
        else:
            try:
                order = np.lexsort((ids, ts))
            except TypeError:  # a user's sources keyed by different types: ties by source, then
                order = np.lexsort((row, source, ts))  # each source's own canonical order
        return Spine(source=source[order], row=row[order], event_id=ids[order], ts=ts[order])

    @property
    def n(self) -> int:
        return len(self.spine.event_id)

    def event_ids(self) -> np.ndarray:
        return self.spine.event_id

    def ts_micros(self) -> np.ndarray:
        return self.spine.ts

    def entity_keys(self) -> np.ndarray | None:
        """Per spine event, the entity whose state it changes; None when no source has an entity key.

        Events of a source without an entity key get distinct negative keys, so they pair with nothing.
        """
        if not any(s.entity_key for s in self.sources):
            return None
        spine = self.spine
        keys = -np.arange(1, self.n + 1, dtype=np.int64)
        for i, (spec, table) in enumerate(zip(self.sources, self.tables.values(), strict=True)):
            if spec.entity_key:
                mine = spine.source == i
                values = _codes(table.column(spec.entity_key))
                keys[mine] = values[spine.row[mine]] + i * ENTITY_BLOCK
        return keys

    def evolving(self) -> tuple[str, str, np.ndarray] | None:
        """(source, column, present-per-spine-event) for the source whose column appears mid-stream."""
        for i, (spec, table) in enumerate(zip(self.sources, self.tables.values(), strict=True)):
            if spec.evolving_column:
                values = table.column(spec.evolving_column).is_null().to_numpy(zero_copy_only=False)
                present = np.zeros(self.n, dtype=bool)
                mine = self.spine.source == i
                present[mine] = ~values[self.spine.row[mine]]
                return spec.name, spec.evolving_column, present
        return None

    def split(self, rows: tuple[int, ...] | np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Spine positions -> per source: (rows of its table, their positions in `rows`), arrival order kept."""
        rows = np.asarray(rows, dtype=np.int64)
        source = self.spine.source[rows]
        parts = {}
        for i, spec in enumerate(self.sources):
            where = np.flatnonzero(source == i)
            parts[spec.name] = (self.spine.row[rows[where]], where)
        return parts

    def subset_tables(self, rows: tuple[int, ...] | np.ndarray) -> dict[str, pa.Table]:
        """Per source, the rows at these spine positions (in the order given, repeats kept): the
        log a shrunk schedule delivers, for an oracle over part of the log."""
        return {
            name: self.tables[name].take(pa.array(part, pa.int64()))
            for name, (part, _) in self.split(rows).items()
        }

    def fingerprint(self) -> str:
        """sha256 over event ids and times: identifies the log a schedule file was built from."""
        digest = hashlib.sha256()
        ids = self.event_ids()
        if ids.dtype.kind in "iu":
            digest.update(ids.astype("<i8").tobytes())
        else:  # a user's key of another type: its values, length-prefixed
            for value in ids:
                data = str(value).encode()
                digest.update(len(data).to_bytes(8, "little") + data)
        digest.update(self.ts_micros().astype("<i8").tobytes())
        return digest.hexdigest()


def _micros(column: pa.ChunkedArray) -> np.ndarray:
    """Event times as int64 microseconds since the epoch (a date is its midnight)."""
    if pa.types.is_date(column.type):
        column = column.cast(pa.date32()).cast(pa.int32()).cast(pa.int64())
        return column.to_numpy() * 86_400_000_000
    if pa.types.is_timestamp(column.type) and column.type != pa.timestamp("us"):
        column = column.cast(pa.timestamp("us", tz=column.type.tz))
    return column.cast(pa.int64()).to_numpy()


def _codes(column: pa.ChunkedArray) -> np.ndarray:
    """Entity keys as int64: integers as they are, any other type by order of first appearance.
    A NULL entity key (a user's log may hold one) is a distinct negative value: it pairs with nothing."""
    if pa.types.is_integer(column.type) and not column.null_count:
        return column.to_numpy(zero_copy_only=False).astype(np.int64)
    indices = column.combine_chunks().dictionary_encode().indices
    nulls = indices.is_null().to_numpy(zero_copy_only=False)
    codes = indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    codes[nulls] = -1 - np.flatnonzero(nulls)
    return codes


def log_seed(task_id: str, kind: LogKind, base_seed: int) -> int:
    return derive_seed(task_id, "log", kind, base_seed)


_CACHE: OrderedDict[tuple[str, str, int, str], Log] = OrderedDict()
_CACHE_SIZE = 16


def task_log(task: Task, kind: LogKind, base_seed: int) -> Log:
    """The visible or hidden log of a task for a base seed (cached: generation is deterministic)."""
    return log_from_seed(task, kind, log_seed(task.id, kind, base_seed))


def log_from_seed(task: Task, kind: LogKind, seed: int) -> Log:
    sources = task.spec.sources
    key = (task.id, kind, seed, "|".join(s.model_dump_json() for s in sources))
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    tables = [make_log(s, seed, index=i) for i, s in enumerate(sources)]
    log = Log(
        task_id=task.id,
        kind=kind,
        seed=seed,
        source=sources[0],
        table=tables[0],
        others=tuple(zip(sources[1:], tables[1:], strict=True)),
    )
    _CACHE[key] = log
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return log
