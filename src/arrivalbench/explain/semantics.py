"""Counterfactual oracles: the target under named wrong semantics, derived from the log and the schedule.

Each semantics transforms what the schedule delivered (the bag of rows with copies, their batches,
their arrival order, crash points, omitted columns) into a set of source tables and runs the
task's own oracle.sql over it; nothing here knows a task. A pipeline whose final table equals one
of these tables (by the grader's typed comparison) made that mistake. A semantics whose table
equals the true oracle's explains nothing and is skipped; several variants of one semantics (a
watermark compared with `>` or `>=`, per source or for all) each get their chance.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from arrivalbench.compare import compare
from arrivalbench.engines import Engine
from arrivalbench.errors import OracleError
from arrivalbench.explain.shapes import (
    Counterfactual,
    boundary_strictness,
    distinct_summed,
    history_by_arrival,
    kept_rows_only,
    sequence_by_arrival,
    window_off_by_one,
)
from arrivalbench.explain.shapes.counterfactual import over
from arrivalbench.logs import Log
from arrivalbench.schedules import Delivery, Schedule
from arrivalbench.spec import Task

SENTENCES: dict[str, str] = {
    "duplicates_counted": (
        "An event delivered more than once is counted once per copy: the table equals the truth "
        "computed over every delivered row, copies included."
    ),
    "late_dropped": (
        "An event older than the newest one already loaded is dropped: the table equals the truth "
        "computed without the events that arrived after a newer one."
    ),
    "arrival_order_wins": (
        "The row received last wins, not the one with the latest event time: the table equals "
        "the truth with arrival order taken for event order."
    ),
    "batch_only": (
        "Only the last delivery counts: each run replaces what earlier runs built, so the table "
        "equals the truth computed over the last batch alone."
    ),
    "crash_partial_apply": (
        "A run stopped part-way leaves its first statements' work committed, and the rerun of the "
        "same batch applies it twice (or skips it): the same schedule without the crash passes."
    ),
    "schema_column_lost": (
        "A column that appeared mid-stream is lost, NULL for the rows delivered before it "
        "appeared or for every row: the table equals the truth with those values missing."
    ),
    "distinct_summed": (
        "A distinct count is added up across loads: the table equals the truth computed over each "
        "batch's new events alone and summed, so an entity seen in two loads counts twice."
    ),
    "kept_rows_only": (
        "A top-k (or filtered) table is kept without the totals it ranks by: a row that drops out "
        "loses its total, so late rows that change the order cannot bring it back."
    ),
    "window_off_by_one": (
        "A window bound is off by one: the table equals the truth with one edge of the window "
        "moved by one unit (a day, a row, a minute)."
    ),
    "boundary_strictness": (
        "A comparison decides the boundary the wrong way: strict where ties or equal values must "
        "count, or inclusive where they must not."
    ),
    "history_by_arrival": (
        "A history chain is built in arrival order, not by effective time: each change is closed "
        "by the change received next, and the one received last is taken as current."
    ),
    "sequence_by_arrival": (
        "Sessions (or runs split by a gap) are built walking an entity's events in the order "
        "received, not by event time: each gap is measured to the event received before it."
    ),
    "unclassified": (
        "The table equals none of the named wrong semantics; read the first batch where it left "
        "the truth, and the rows that differ there."
    ),
}
LABELS: tuple[str, ...] = tuple(SENTENCES)


@dataclass(frozen=True)
class Arrival:
    """One delivered row: its spine position, 0-based delivery index and arrival rank."""

    row: int
    batch: int
    seq: int


def arrivals(schedule: Schedule) -> list[Arrival]:
    seq = 0
    out = []
    for b, delivery in enumerate(schedule.deliveries):
        for row in delivery.rows:
            out.append(Arrival(row, b, seq))
            seq += 1
    return out


def _first(arrived: list[Arrival]) -> list[Arrival]:
    seen: set[int] = set()
    firsts = []
    for a in arrived:
        if a.row not in seen:
            seen.add(a.row)
            firsts.append(a)
    return firsts


Variant = Callable[[Log, Schedule], Iterator[dict[str, pa.Table] | Counterfactual]]


def _tables(log: Log, rows: list[int]) -> dict[str, pa.Table]:
    return log.subset_tables(sorted(rows))


def source_scopes(log: Log, eligible: list[int]) -> list[tuple[set[int], str | None]]:
    """Which sources a mistake concerns, with the words its detail adds: with one source, that
    source (no words); with several, each eligible source alone ("on sales") and, when more than
    one is eligible, every one of them ("on every source"). late_dropped's watermarks say the same
    per source; a schedule that cannot tell the scopes apart names them all, and PROBES may ask."""
    if len(log.sources) == 1:
        return [(set(eligible), None)]
    names = [s.name for s in log.sources]
    scopes: list[tuple[set[int], str | None]] = [({i}, f"on {names[i]}") for i in eligible]
    if len(eligible) > 1:
        scopes.append((set(eligible), "on every source"))
    return scopes


def duplicates_counted(log: Log, schedule: Schedule) -> Iterator[Counterfactual]:
    """Every copy counted; or only the copies within the batch where the event first came
    (a guard against history that lets a batch's own copies through); on one source or on every
    source (source_scopes), the other sources' copies counted once."""
    arrived = arrivals(schedule)
    rows = [a.row for a in arrived]
    if len(set(rows)) == len(rows):
        return
    source = log.spine.source
    first_batch = {a.row: a.batch for a in reversed(arrived)}
    for scope, words in source_scopes(log, list(range(len(log.sources)))):
        seen: set[int] = set()
        every, within = [], []
        for a in arrived:
            again = a.row in seen
            seen.add(a.row)
            if again and int(source[a.row]) not in scope:
                continue
            every.append(a.row)
            if a.batch == first_batch[a.row] or not again:
                within.append(a.row)
        yield over(_tables(log, every), words)
        yield over(_tables(log, within), words)


def duplicates_counted_probes(log: Log, schedule: Schedule) -> Iterator[tuple[Delivery, ...]]:
    """One-batch schedules that tell apart the sources whose copies are counted: the first
    delivered event of every source, and one source's event once more. Counted on that source
    (or on every source) the copy counts, by either variant (every copy, or the copies within
    the batch where the event first came); counted on another source alone it does not."""
    delivered = [row for d in schedule.deliveries for row in d.rows]
    source = log.spine.source
    firsts: dict[int, int] = {}
    for row in delivered:
        firsts.setdefault(int(source[row]), row)
    for i in range(len(log.sources)):
        if i not in firsts:
            rows = np.flatnonzero(source == i)
            if not len(rows):
                continue
            firsts[i] = int(rows[0])
    batch = tuple(firsts[i] for i in sorted(firsts))
    for i in sorted(firsts):
        yield (Delivery(1, (*batch, firsts[i])),)


GRAINS: tuple[tuple[int, str], ...] = ((1, ""), (86_400_000_000, ", at day grain (closed days)"))
"""A watermark compares event times as they are, or truncated to their UTC day: the pipeline that
treats every day before the newest day loaded as closed drops an earlier day's event, and keeps a
late event of the newest day. The day is the coarser explanation, tried only when no watermark on
event times fits."""


def late_dropped(log: Log, schedule: Schedule) -> Iterator[Counterfactual]:
    """A watermark: an event older than (or as old as) the newest one of earlier batches is
    dropped. Per source (each source against its own newest event) on one source or on every
    source, or one watermark across all sources (every event against the newest of any source);
    on event times or on their days (GRAINS); the detail says which."""
    for grain, grain_words in GRAINS:
        yield from _watermarks(log, schedule, grain, grain_words)


def _watermarks(
    log: Log, schedule: Schedule, grain: int, grain_words: str
) -> Iterator[Counterfactual]:
    firsts = _first(arrivals(schedule))
    ts = log.ts_micros() // grain
    source = log.spine.source
    names = [s.name for s in log.sources]
    n_sources = len(names)
    scopes: list[tuple[set[int], bool, str]] = [
        ({i}, False, f"a watermark per source, on {names[i]}") for i in range(n_sources)
    ]
    if n_sources > 1:
        scopes.append((set(range(n_sources)), False, "a watermark per source, on every source"))
        scopes.append((set(range(n_sources)), True, "one watermark across all sources"))
        scopes += [
            ({i}, True, f"one watermark across all sources, on {names[i]}")
            for i in range(n_sources)
        ]
    for scope, shared, words in scopes:
        for strict in (False, True):
            kept: list[int] = []
            newest: dict[int, int] = {}
            batch_newest: dict[int, int] = {}
            current = -1
            for a in firsts:
                if a.batch != current:
                    for s, t in batch_newest.items():
                        newest[s] = max(newest.get(s, t), t)
                    batch_newest, current = {}, a.batch
                s, t = int(source[a.row]), int(ts[a.row])
                mark_of = -1 if shared else s
                batch_newest[mark_of] = max(batch_newest.get(mark_of, t), t)
                mark = newest.get(mark_of)
                late = mark is not None and (t <= mark if strict else t < mark)
                if not (late and s in scope):
                    kept.append(a.row)
            yield over(_tables(log, kept), words + grain_words, coarser=grain > 1)


def late_dropped_probes(log: Log, schedule: Schedule) -> Iterator[tuple[Delivery, ...]]:
    """Two-batch schedules that tell a watermark per source from one across all sources: the
    newest event of one source, then an older event of another. Per source the second is the
    first of its source (kept); across all sources it is older than the newest event loaded
    (dropped). The older event is one the schedule delivered (oldest first), then one at a few
    points in time of the rest of the log."""
    ts, source = log.ts_micros(), log.spine.source
    delivered = sorted({row for d in schedule.deliveries for row in d.rows})
    order = lambda r: (int(ts[r]), r)  # noqa: E731
    for newest_of in range(len(log.sources)):
        rows = np.flatnonzero(source == newest_of)
        if not len(rows):
            continue
        y = int(max(rows, key=order))
        for older_of in range(len(log.sources)):
            if older_of == newest_of:
                continue
            older = sorted(int(r) for r in np.flatnonzero(source == older_of) if ts[r] < ts[y])
            older.sort(key=order)
            if not older:
                continue
            spread = [older[int(q * (len(older) - 1))] for q in (0.0, 0.5, 1.0)]
            mine = sorted(
                (r for r in delivered if source[r] == older_of and ts[r] < ts[y]), key=order
            )
            for x in dict.fromkeys(mine[:3] + spread):
                yield (Delivery(1, (y,)), Delivery(2, (x,)))


def arrival_order_wins(log: Log, schedule: Schedule) -> Iterator[Counterfactual]:
    """For sources with an entity key: only the row received last of each entity; or each
    entity's event times (and ids) handed out again in arrival order, so the last received is
    the newest; on one keyed source or on every keyed source (source_scopes)."""
    keys = log.entity_keys()
    if keys is None:
        return
    arrived = arrivals(schedule)
    source = log.spine.source
    keyed_sources = [i for i, s in enumerate(log.sources) if s.entity_key]
    for scope, words in source_scopes(log, keyed_sources):
        scoped = np.where(np.isin(source, list(scope)), keys, -np.arange(1, len(keys) + 1))
        last_of: dict[int, int] = {}
        order: dict[int, int] = {}
        for a in arrived:
            last_of[int(scoped[a.row])] = a.row
            order[a.row] = a.seq  # the last arrival of an event is its place in arrival order
        if not any(scoped[row] >= 0 for row in order):
            continue
        unkeyed = [row for row in order if scoped[row] < 0]
        yield over(_tables(log, [row for k, row in last_of.items() if k >= 0] + unkeyed), words)
        yield over(_retimed(log, sorted(order), scoped, order), words)


def _retimed(
    log: Log, rows: list[int], keys: np.ndarray, order: dict[int, int]
) -> dict[str, pa.Table]:
    """Per entity, its sorted (ts_event, event_id) pairs assigned to its events in arrival order."""
    by_entity: dict[int, list[int]] = {}
    for row in rows:
        if keys[row] >= 0:
            by_entity.setdefault(int(keys[row]), []).append(row)
    ts, ids = log.ts_micros(), log.event_ids()
    new_ts = {row: int(ts[row]) for row in rows}
    new_id = {row: int(ids[row]) for row in rows}
    for members in by_entity.values():
        pairs = sorted((int(ts[r]), int(ids[r])) for r in members)
        for row, (t, e) in zip(sorted(members, key=order.__getitem__), pairs, strict=True):
            new_ts[row], new_id[row] = t, e
    tables = {}
    for name, (positions, where) in log.split(np.array(rows, dtype=np.int64)).items():
        table = log.tables[name].take(pa.array(positions, pa.int64()))
        spine_rows = [rows[int(i)] for i in where]
        tables[name] = _replace(
            _replace(
                table,
                "ts_event",
                pa.array([new_ts[r] for r in spine_rows], pa.int64()).cast(
                    table.schema.field("ts_event").type
                ),
            ),
            "event_id",
            pa.array([new_id[r] for r in spine_rows], pa.int64()).cast(
                table.schema.field("event_id").type
            ),
        )
    return tables


def _replace(table: pa.Table, column: str, values: pa.Array) -> pa.Table:
    return table.set_column(table.schema.get_field_index(column), column, values)


def batch_only(log: Log, schedule: Schedule) -> Iterator[dict[str, pa.Table]]:
    """The last delivery alone: its distinct events, or its rows with copies."""
    if len(schedule.deliveries) < 2:
        return
    last = list(schedule.deliveries[-1].rows)
    yield _tables(log, list(set(last)))
    if len(set(last)) != len(last):
        yield _tables(log, last)


def crash_partial_apply(log: Log, schedule: Schedule) -> Iterator[dict[str, pa.Table]]:
    """A crashed delivery's rows applied twice, or not at all."""
    crashed = [d for d in schedule.deliveries if d.crash is not None]
    if not crashed:
        return
    distinct = sorted({row for d in schedule.deliveries for row in d.rows})
    again = [row for d in crashed for row in sorted(set(d.rows))]
    yield _tables(log, distinct + again)
    elsewhere = {row for d in schedule.deliveries if d.crash is None for row in d.rows}
    lost = {row for d in crashed for row in d.rows} - elsewhere
    yield _tables(log, [row for row in distinct if row not in lost])


def schema_column_lost(log: Log, schedule: Schedule) -> Iterator[dict[str, pa.Table]]:
    """The evolving column NULL for every event first delivered in a batch that lacked it; or
    NULL throughout (a table whose columns were fixed by the first batch never picks it up)."""
    evolving = log.evolving()
    if evolving is None:
        return
    name, column, _ = evolving
    lacking = {
        row for d in schedule.deliveries if f"{name}.{column}" in d.omit_columns for row in d.rows
    }
    if not lacking:
        return
    firsts = sorted(a.row for a in _first(arrivals(schedule)))
    for blank in ({row for row in firsts if row in lacking}, set(firsts)):
        yield _blanked(log, firsts, name, column, blank)


def _blanked(
    log: Log, rows: list[int], name: str, column: str, blank: set[int]
) -> dict[str, pa.Table]:
    """The source tables of these rows with `column` of source `name` NULL on the `blank` rows."""
    tables = log.subset_tables(rows)
    _, where = log.split(np.array(rows, dtype=np.int64))[name]
    mask = pa.array([rows[int(i)] in blank for i in where], pa.bool_())
    table = tables[name]
    nulls = pa.nulls(table.num_rows, table.schema.field(column).type)
    tables[name] = _replace(table, column, pc.if_else(mask, nulls, table.column(column)))
    return tables


Shape = Callable[[Task, Log, Schedule], Iterator[Counterfactual]]

SHAPES: dict[str, Shape] = {
    "distinct_summed": distinct_summed,
    "kept_rows_only": kept_rows_only,
    "window_off_by_one": window_off_by_one,
    "boundary_strictness": boundary_strictness,
    "history_by_arrival": history_by_arrival,
    "sequence_by_arrival": sequence_by_arrival,
}
"""Mistakes of shape (issue 28), one module each in shapes/; tried after the delivery hazards."""

SEMANTICS: dict[str, Variant] = {
    "duplicates_counted": duplicates_counted,
    "late_dropped": late_dropped,
    "arrival_order_wins": arrival_order_wins,
    "batch_only": batch_only,
    "crash_partial_apply": crash_partial_apply,
    "schema_column_lost": schema_column_lost,
}


Probe = Callable[[Log, Schedule], Iterator[tuple[Delivery, ...]]]

PROBES: dict[str, Probe] = {
    "duplicates_counted": duplicates_counted_probes,
    "late_dropped": late_dropped_probes,
}
"""Per label, small schedules that may tell its variants apart when the schedules diagnosed do
not (a watermark per source or across all sources; copies counted on one source or on every
source): each is replayed only when the variants' tables on it differ, and the variants whose
table equals the pipeline's there remain."""


def _candidates(task: Task, log: Log, schedule: Schedule) -> Iterator[tuple[str, Iterator]]:
    for label, variants in SEMANTICS.items():
        yield label, variants(log, schedule)
    for label, shape in SHAPES.items():
        yield label, shape(task, log, schedule)


def variant_tables(
    task: Task, log: Log, schedule: Schedule, label: str, details: set[str], engine: Engine
) -> dict[str, list[pa.Table]]:
    """Per detail of `label` among `details`, the tables of its variants on this schedule (those
    that apply; one equal to the truth included)."""
    tables: dict[str, list[pa.Table]] = {d: [] for d in details}
    variants = (
        SEMANTICS[label](log, schedule)
        if label in SEMANTICS
        else SHAPES[label](task, log, schedule)
    )
    for item in variants:
        counterfactual = item if isinstance(item, Counterfactual) else over(item)
        if counterfactual.detail not in tables:
            continue
        try:
            table = counterfactual.compute(task, engine)
        except OracleError:
            continue
        if table is not None:
            tables[counterfactual.detail].append(table)
    return tables


def diagnose_details(
    task: Task,
    log: Log,
    schedule: Schedule,
    actual: pa.Table,
    expected: pa.Table,
    engine: Engine,
    tried: set[str] | None = None,
    coarser: set[str | None] | None = None,
) -> dict[str, list[str | None]]:
    """The labels whose counterfactual table equals `actual` (and differs from `expected`), each
    with the details of every variant that matched (which watermark, which bound): on a small
    schedule several can hold at once, and a second schedule tells them apart. The details of
    coarser variants that matched are added to `coarser`."""
    labels: dict[str, list[str | None]] = {}
    for label, variants in _candidates(task, log, schedule):
        for item in variants:
            counterfactual = item if isinstance(item, Counterfactual) else over(item)
            try:
                table = counterfactual.compute(task, engine)
            except OracleError:
                continue
            if table is None or compare(expected, table, task.spec.target).equal:
                continue
            if tried is not None:
                tried.add(label)
            if compare(table, actual, task.spec.target).equal:
                labels.setdefault(label, []).append(counterfactual.detail)
                if coarser is not None and counterfactual.coarser:
                    coarser.add(counterfactual.detail)
    return labels


def diagnose(
    task: Task,
    log: Log,
    schedule: Schedule,
    actual: pa.Table,
    expected: pa.Table,
    engine: Engine,
) -> list[str]:
    """The labels whose counterfactual table equals `actual` (and differs from `expected`)."""
    return list(diagnose_details(task, log, schedule, actual, expected, engine))
