"""Delivery schedules: the snapshot, two benign controls and six hazards, each a pure function (log, seed).

Every schedule partitions one logical log into delivery batches. The in-order partition (contiguous
chunks of the canonical order) is the common base; a hazard perturbs it and counts what it did in
`perturbation`, so the gate can prove the hazard bit. A schedule is plain data: it serialises to
JSON with event ids (not row positions) and a fingerprint of the log it was built from, and it is
rebuilt from that file with `schedule_from_json`.

A schedule of the hidden log built from a private seed (seeds.PrivateSeed) keeps its log seed out
of the file: the file names the secret's commitment instead, and replaying it needs the seed file.
The snapshot always delivers the visible log of the public base seed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from arrivalbench.chunked_list import ChunkedList as _ChunkedList
from arrivalbench.errors import UnknownNameError, UsageError
from arrivalbench.hazards import BENIGN as BENIGN
from arrivalbench.hazards import REGISTRY as ROLES
from arrivalbench.hazards import SCHEDULE_NAMES, Group, Hazard
from arrivalbench.logs import Log, LogKind, task_log
from arrivalbench.seeds import PrivateSeed, derive_seed, rng
from arrivalbench.spec import Task

BATCHES = 6
SCHEDULE_FORMAT = 1
SYNTHETIC_COLUMN = ("source_system", "VARCHAR")
"""The payload column schema evolution adds to a task whose own columns do not evolve."""


@dataclass(frozen=True)
class Crash:
    """Stop the script after one statement, chosen at replay: crash `slot` of `of` in this schedule."""

    slot: int
    of: int

    PER_DELIVERY = 4
    """Up to `of * PER_DELIVERY` boundaries, every boundary is crashed unconditionally (each stop
    re-runs a prefix); a longer script's boundaries are watched instead (see `watched`), so that
    padding a script with statements that change nothing cannot make its executions grow with
    the square of its length (a 1,000-statement script once ran ~500,000 statements)."""

    def _dealt(self, n_statements: int) -> tuple[int, ...]:
        """This crash's share of the boundaries 1..n-1, dealt round-robin over the schedule's crashes."""
        return tuple(range(1 + self.slot, n_statements, self.of))

    def statements(self, n_statements: int) -> tuple[int, ...]:
        """1-based statements after which successive attempts at this delivery stop, whatever they did.

        The boundaries 1..n-1 are dealt round-robin over the schedule's crashes, so together the
        crashes of one schedule stop the script after every statement once, as long as it has no
        more boundaries than `of * PER_DELIVERY` (every script of the built-in suite). A short
        script (no more boundaries than crashes) is crashed once per delivery, cycling through
        its boundaries. A longer script gets () here: its boundaries are `watched`. Each stop is
        followed by a redelivery of the same batch; the last attempt runs the whole script.
        """
        points = n_statements - 1
        if points < 1:
            return ()
        if points <= self.of:
            return (1 + self.slot % points,)
        if points <= self.of * self.PER_DELIVERY:
            return self._dealt(n_statements)
        return ()

    def watched(self, n_statements: int) -> tuple[int, ...]:
        """The boundaries of a script longer than `of * PER_DELIVERY + 1` statements that this
        delivery stops at, attempt after attempt, wherever the statement before the boundary
        changed the committed persistent state during that attempt (the replay proves it with
        the engine's committed-state fingerprint, see replay.py); () for a shorter script.

        Dealt round-robin like `statements`, so the crashes of a schedule watch every boundary
        exactly once between them. A boundary whose statement changed nothing leaves the same
        database a crash before that statement would: skipping it loses no crash state of the
        script, and padding (`SELECT n;`) costs one pass instead of one prefix per boundary.
        """
        if n_statements - 1 <= self.of * self.PER_DELIVERY:
            return ()
        return self._dealt(n_statements)


@dataclass(frozen=True)
class Delivery:
    """One batch: row positions of the log, in arrival order, optionally crashed and redelivered."""

    batch_id: int
    rows: tuple[int, ...]
    crash: Crash | None = None
    omit_columns: tuple[str, ...] = ()
    """'source.column' entries absent from this delivery's batch table."""
    add_synthetic: bool = False
    """Whether the primary source's batch carries SYNTHETIC_COLUMN."""


@dataclass(frozen=True)
class Schedule:
    name: str
    task_id: str
    seed: int
    log_kind: LogKind
    log_seed: int
    log_fingerprint: str
    source: str
    deliveries: tuple[Delivery, ...]
    perturbation: Mapping[str, int] = field(default_factory=dict)
    seed_commitment: str | None = None
    """Set when the log came from a private seed: its commitment (the file then omits the log seed)."""
    partial: bool = False
    """Delivers only some events of the log (a shrunk counterexample from `explain`): the oracle
    is then computed over the distinct events it delivers, not the whole log."""

    def delivered_rows(self) -> int:
        return sum(len(d.rows) for d in self.deliveries)

    def bites(self) -> bool:
        """True when the schedule changed delivery (used by the gate for declared hazards).

        A hazard that reports per-feed counts (`moved_events.<feed>`, multi-source logs) bites
        only when it moved events of every feed: a fact feed left in order is a blind spot.
        """
        per_feed = [v for k, v in self.perturbation.items() if k.startswith("moved_events.")]
        if per_feed and min(per_feed) == 0:
            return False
        return any(v > 0 for v in self.perturbation.values())


Builder = Callable[[Log, int], Schedule]


@dataclass(frozen=True)
class ScheduleKind:
    name: str
    log_kind: LogKind
    build: Builder
    label: str
    """A short column header for tables."""

    @property
    def role(self) -> Hazard:
        """Its group and capabilities (hazards.REGISTRY)."""
        return ROLES[self.name]

    @property
    def group(self) -> Group:
        return self.role.group


def _chunks(n: int, batches: int = BATCHES) -> list[list[int]]:
    """Contiguous, near-equal chunks of 0..n-1 (fewer when n is small; never an empty batch)."""
    batches = max(1, min(batches, n))
    return [list(map(int, part)) for part in np.array_split(np.arange(n), batches)]


def _schedule(name: str, log: Log, seed: int, batches: list[list[int]], **kw: object) -> Schedule:
    deliveries = kw.pop("deliveries", None) or tuple(
        Delivery(batch_id=i + 1, rows=tuple(rows)) for i, rows in enumerate(batches)
    )
    return Schedule(
        name=name,
        task_id=log.task_id,
        seed=seed,
        log_kind=log.kind,
        log_seed=log.seed,
        log_fingerprint=log.fingerprint(),
        source=log.source.name,
        deliveries=tuple(deliveries),
        perturbation=dict(kw.pop("perturbation", {})),
    )


@dataclass(frozen=True)
class _Feed:
    """One source's share of the spine, perturbed with a generator of its own."""

    name: str
    mine: np.ndarray
    """Per spine event: whether it belongs to this feed."""
    rng: np.random.Generator
    keyed: bool


def _feeds(log: Log, hazard: str, seed: int, r: np.random.Generator) -> list[_Feed]:
    """The feeds a hazard perturbs one by one, so it moves events of every feed.

    A single-source log is one feed drawing from the schedule's own generator `r`, exactly as
    before feeds existed (its schedules, and so its stored verdicts, are unchanged); each feed of
    a multi-source log draws from a generator of its own, derived from the hazard, the seed and
    the feed's name.
    """
    if len(log.sources) == 1:
        return [_Feed(log.source.name, np.ones(log.n, dtype=bool), r, bool(log.source.entity_key))]
    return [
        _Feed(spec.name, log.spine.source == i, rng(hazard, seed, spec.name), bool(spec.entity_key))
        for i, spec in enumerate(log.sources)
    ]


def _per_feed(log: Log, feeds: list[_Feed], rows: object) -> dict[str, int]:
    """`moved_events.<feed>` counts of a multi-source log ({} for a single source, whose
    perturbation keeps the keys it always had)."""
    if len(feeds) == 1:
        return {}
    chosen = np.zeros(log.n, dtype=bool)
    chosen[np.fromiter(rows, dtype=np.int64)] = True
    return {f"moved_events.{f.name}": int((chosen & f.mine).sum()) for f in feeds}


def snapshot(log: Log, seed: int) -> Schedule:
    """The visible log as one batch in canonical order: the test the agent sees."""
    return _schedule("snapshot", log, seed, [list(range(log.n))])


def single_batch(log: Log, seed: int) -> Schedule:
    """The hidden log as one in-order batch."""
    return _schedule("single_batch", log, seed, [list(range(log.n))])


def in_order_stream(log: Log, seed: int) -> Schedule:
    """The hidden log as several in-order batches."""
    return _schedule("in_order_stream", log, seed, _chunks(log.n))


def late_arrival(log: Log, seed: int) -> Schedule:
    """Some events arrive one or two batches late; a deep tail from early batches arrives only at the end.

    Each feed of a multi-source log loses its own share, so facts and dimensions are both late.
    """
    r = rng("late_arrival", seed)
    base = _chunks(log.n)
    last = len(base) - 1
    batch_of = {row: b for b, rows in enumerate(base) for row in rows}
    feeds = _feeds(log, "late_arrival", seed, r)
    arrives: dict[int, int] = {}
    deep_total = 0
    for feed in feeds:
        fr = feed.rng
        eligible = np.array(
            [row for rows in base[:-1] for row in rows if feed.mine[row]], dtype=np.int64
        )
        early = eligible[eligible < log.n // 2]
        deep_n = max(1, round(0.05 * len(eligible))) if len(early) else 0
        deep = (
            set(map(int, fr.choice(early, size=min(deep_n, len(early)), replace=False)))
            if deep_n
            else set()
        )
        rest = np.array([row for row in eligible if row not in deep], dtype=np.int64)
        moderate_n = min(len(rest), max(1, round(0.15 * len(eligible)))) if len(rest) else 0
        moderate = fr.choice(rest, size=moderate_n, replace=False) if moderate_n else []
        arrives.update({row: last for row in deep})
        for row in map(int, moderate):
            arrives[row] = min(last, batch_of[row] + int(fr.integers(1, 3)))
        deep_total += len(deep)
    batches = [[row for row in rows if row not in arrives] for rows in base]
    for row in sorted(arrives):
        batches[arrives[row]].append(row)
    return _schedule(
        "late_arrival",
        log,
        seed,
        batches,
        perturbation={
            "late_events": len(arrives),
            "deep_tail_events": deep_total,
            **_per_feed(log, feeds, arrives),
        },
    )


def _same_key_pairs(log: Log, key: np.ndarray) -> list[tuple[int, int]]:
    """Consecutive events (older, newer) of the same entity, by canonical position."""
    order = np.lexsort((np.arange(log.n), key))
    same = key[order][1:] == key[order][:-1]
    return [(int(a), int(b)) for a, b in zip(order[:-1][same], order[1:][same], strict=True)]


def _keyed_moves(
    r: np.random.Generator, pairs: list[tuple[int, int]], batch_of: dict[int, int], batches: int
) -> tuple[dict[int, int], list[tuple[int, int]]]:
    """Older updates placed behind newer ones of the same entity: a batch later or later in the
    same batch. Returns the moved rows' batches and the (older, newer) pairs sharing a batch."""
    moved: dict[int, int] = {}
    within_pairs: list[tuple[int, int]] = []
    taken: set[int] = set()
    for idx in r.permutation(len(pairs)):
        older, newer = pairs[idx]
        if older in taken or newer in taken:
            continue
        taken.update((older, newer))
        if batch_of[newer] < batches - 1 and r.random() < 0.5:
            moved[older] = (
                batch_of[newer] + 1
            )  # the older update arrives a batch after the newer one
        else:
            moved[older] = batch_of[newer]
            within_pairs.append((older, newer))
    return moved, within_pairs


def _neighbour_swaps(r: np.random.Generator, base: list[list[int]]) -> dict[int, int]:
    """A tenth of each batch moves to the next one and a tenth of the next moves back, so older
    events arrive after newer ones across batches (what a watermark trips on)."""
    moved: dict[int, int] = {}
    for b in range(len(base) - 1):
        if not base[b] or not base[b + 1]:
            continue  # a feed with no events in one of the two batches: nothing to swap
        k = max(1, len(base[b]) // 10)
        for row in r.choice(base[b], size=min(k, len(base[b])), replace=False):
            moved[int(row)] = b + 1
        for row in r.choice(base[b + 1], size=min(k, len(base[b + 1])), replace=False):
            if int(row) not in moved:
                moved[int(row)] = b
    return moved


def out_of_order(log: Log, seed: int) -> Schedule:
    """Arrival order differs from event order, across batches and within them.

    With an entity key, older updates of an entity arrive after newer ones: some in a later batch,
    others later within the same batch. Without one, events swap between neighbouring batches and
    every batch arrives shuffled. Each feed of a multi-source log is reordered by its own rule, so
    a fact feed without a key has older facts arriving behind newer ones too.
    """
    r = rng("out_of_order", seed)
    base = _chunks(log.n)
    batch_of = {row: b for b, rows in enumerate(base) for row in rows}
    moved: dict[int, int] = {}
    within_pairs: list[tuple[int, int]] = []
    keys = log.entity_keys()
    feeds = _feeds(log, "out_of_order", seed, r)
    for feed in feeds:
        if feed.keyed and keys is not None:
            pairs = [p for p in _same_key_pairs(log, keys) if feed.mine[p[0]]]
            feed_moved, feed_within = _keyed_moves(feed.rng, pairs, batch_of, len(base))
            within_pairs += feed_within
        else:
            feed_moved = _neighbour_swaps(
                feed.rng, [[row for row in rows if feed.mine[row]] for rows in base]
            )
        moved.update(feed_moved)
    batches: list[list[int]] = [[] for _ in base]
    for row in range(log.n):
        batches[moved.get(row, batch_of[row])].append(row)
    arrival = [list(map(int, r.permutation(rows))) for rows in batches]
    # An older update placed in its newer sibling's batch must arrive after it.
    for older, newer in within_pairs:
        rows = arrival[moved[older]]
        i, j = rows.index(older), rows.index(newer)
        if i < j:
            rows[i], rows[j] = rows[j], rows[i]
    across = [row for row, b in moved.items() if b != batch_of[row]]
    within = sum(1 for rows in arrival for a, b in pairwise(rows) if b < a)
    return _schedule(
        "out_of_order",
        log,
        seed,
        arrival,
        perturbation={
            "cross_batch_moves": len(across),
            "within_batch_inversions": within,
            "same_key_within_batch": len(within_pairs),
            **_per_feed(log, feeds, across),
        },
    )


def duplicate_delivery(log: Log, seed: int) -> Schedule:
    """Some events arrive twice in the same batch; others arrive again in a later batch."""
    r = rng("duplicate_delivery", seed)
    base = _chunks(log.n)
    last = len(base) - 1
    batches = [list(rows) for rows in base]
    pool = r.permutation(log.n)
    n_each = max(1, round(0.08 * log.n))
    within = [int(x) for x in pool[:n_each]]
    later = [int(x) for x in pool[n_each : 2 * n_each]]
    batch_of = {row: b for b, rows in enumerate(base) for row in rows}
    growing = [_ChunkedList(rows) for rows in batches]
    for row in within:
        rows = growing[batch_of[row]]
        pos = rows.index(row)
        rows.insert(int(r.integers(pos + 1, len(rows) + 1)), row)
    batches = [rows.to_list() for rows in growing]
    cross = 0
    for row in later:
        b = batch_of[row]
        if b == last:
            batches[b].append(
                row
            )  # nothing later to redeliver into: a second copy in the same batch
        else:
            batches[min(last, b + int(r.integers(1, 3)))].append(row)
            cross += 1
    return _schedule(
        "duplicate_delivery",
        log,
        seed,
        batches,
        perturbation={
            "within_batch_duplicates": len(within) + len(later) - cross,
            "cross_batch_duplicates": cross,
        },
    )


def crash_retry(log: Log, seed: int) -> Schedule:
    """In four of the six batches the script stops after one statement and the batch is delivered again."""
    r = rng("crash_retry", seed)
    base = _chunks(log.n)
    n_crash = min(len(base), 4)
    crashed = sorted(int(b) for b in r.choice(len(base), size=n_crash, replace=False))
    slot_of = {b: i for i, b in enumerate(crashed)}
    deliveries = tuple(
        Delivery(
            batch_id=b + 1,
            rows=tuple(rows),
            crash=Crash(slot=slot_of[b], of=n_crash) if b in slot_of else None,
        )
        for b, rows in enumerate(base)
    )
    return _schedule(
        "crash_retry",
        log,
        seed,
        base,
        deliveries=deliveries,
        perturbation={"crashed_batches": n_crash},
    )


def backfill(log: Log, seed: int) -> Schedule:
    """A past day is redelivered whole, releasing events that were withheld from its first delivery.

    On a multi-source log the day is one where every feed has events to repeat and to withhold,
    and each feed withholds its own share.
    """
    r = rng("backfill", seed)
    base = _chunks(log.n)
    day = log.ts_micros() // 86_400_000_000
    feeds = _feeds(log, "backfill", seed, r)
    half = slice(0, max(1, log.n // 2))
    days = np.unique(day[half])
    enough = np.ones(len(days), dtype=bool)
    for feed in feeds:
        of_feed = day[half][feed.mine[half]]
        enough &= np.array([(of_feed == d).sum() >= 2 for d in days], dtype=bool)
    candidates = days[enough] if enough.any() else days
    chosen = int(r.choice(candidates))
    partition = [int(i) for i in np.flatnonzero(day == chosen)]
    withheld: set[int] = set()
    for feed in feeds:
        part = [row for row in partition if feed.mine[row]]
        if not part:
            continue
        n_withheld = max(1, round(0.3 * len(part)))
        size = min(n_withheld, len(part) - 1 or 1)
        withheld |= set(map(int, feed.rng.choice(part, size=size, replace=False)))
    batch_of = {row: b for b, rows in enumerate(base) for row in rows}
    after = min(len(base) - 1, max(batch_of[row] for row in partition) + 2)
    batches = [[row for row in rows if row not in withheld] for rows in base]
    batches.insert(after + 1, partition)
    batches = [rows for rows in batches if rows]
    redelivered = [row for row in partition if row not in withheld]
    per_feed = _per_feed(log, feeds, withheld)
    if per_feed:
        repeated = _per_feed(log, feeds, redelivered)
        per_feed |= {k.replace("moved_", "redelivered_"): v for k, v in repeated.items()}
    return _schedule(
        "backfill",
        log,
        seed,
        batches,
        perturbation={
            "redelivered_events": len(redelivered),
            "released_events": len(withheld),
            **per_feed,
        },
    )


def schema_evolution(log: Log, seed: int) -> Schedule:
    """A payload column is absent from the first batches and present from a batch mid-stream on.

    The task's own evolving column when it declares one (NULL in the log until it appears), or
    otherwise a synthetic column the target does not need.
    """
    r = rng("schema_evolution", seed)
    base = _chunks(log.n)
    evolving = log.evolving()
    if evolving:
        source, column, present = evolving
        first_row = int(np.flatnonzero(present)[0]) if present.any() else log.n
        starts = next(
            (b for b, rows in enumerate(base) if rows and rows[-1] >= first_row), len(base)
        )
    else:
        starts = int(r.integers(len(base) // 2, len(base))) if len(base) > 1 else 0
    omit = (f"{source}.{column}",) if evolving else ()
    deliveries = tuple(
        Delivery(
            batch_id=b + 1,
            rows=tuple(rows),
            omit_columns=omit if b < starts else (),
            add_synthetic=evolving is None and b >= starts,
        )
        for b, rows in enumerate(base)
    )
    return _schedule(
        "schema_evolution",
        log,
        seed,
        base,
        deliveries=deliveries,
        perturbation={"batches_before_column": starts},
    )


REGISTRY: dict[str, ScheduleKind] = {
    kind.name: kind
    for kind in (
        ScheduleKind("snapshot", "visible", snapshot, "snap"),
        ScheduleKind("single_batch", "hidden", single_batch, "single"),
        ScheduleKind("in_order_stream", "hidden", in_order_stream, "stream"),
        ScheduleKind("late_arrival", "hidden", late_arrival, "late"),
        ScheduleKind("out_of_order", "hidden", out_of_order, "order"),
        ScheduleKind("duplicate_delivery", "hidden", duplicate_delivery, "dup"),
        ScheduleKind("crash_retry", "hidden", crash_retry, "crash"),
        ScheduleKind("backfill", "hidden", backfill, "backfill"),
        ScheduleKind("schema_evolution", "hidden", schema_evolution, "schema"),
    )
}
assert tuple(REGISTRY) == SCHEDULE_NAMES, "schedules.REGISTRY must build hazards.REGISTRY's names"


def get_kind(name: str) -> ScheduleKind:
    if name not in REGISTRY:
        raise UnknownNameError("schedule", name, REGISTRY)
    return REGISTRY[name]


def default_schedules(task: Task) -> list[str]:
    """The snapshot, both benign controls and the task's declared hazards, in registry order."""
    return [n for n in SCHEDULE_NAMES if not ROLES[n].is_hazard or n in task.spec.hazards]


def resolve_schedules(task: Task, selection: str | None) -> list[str]:
    """Parse a --schedules value: None/'default', 'all', or a comma-separated list of names."""
    if selection in (None, "", "default"):
        return default_schedules(task)
    if selection.strip() == "all":
        return list(SCHEDULE_NAMES)
    names = list(dict.fromkeys(s.strip() for s in selection.split(",") if s.strip()))
    if not names:
        raise UsageError(
            f"--schedules {selection!r}: names no schedule; give 'all' or comma-separated names "
            f"({', '.join(SCHEDULE_NAMES)}), or leave it out for the task's default set."
        )
    for name in names:
        get_kind(name)
    return names


def graded_schedules(task: Task, selection: str | None) -> list[str]:
    """What grading a stored run grades for a cell of `task`: the run's selection, and never less
    than the task's declared set (snapshot, benign controls, declared hazards), in registry order.

    A run's selection comes from its manifest, which anyone can edit; a cell graded on fewer
    schedules than its task declares would show a gap of 0% for a pipeline that fails them.
    """
    wanted = set(default_schedules(task)) | set(resolve_schedules(task, selection))
    return [n for n in SCHEDULE_NAMES if n in wanted]


def build_schedule(
    task: Task, name: str, base_seed: int, private: PrivateSeed | None = None
) -> tuple[Schedule, Log]:
    """The named schedule of a task for a base seed, with the log it delivers.

    With a private seed, schedules of the hidden log descend from it instead of `base_seed`; the
    snapshot (the visible log) always descends from `base_seed`.
    """
    kind = get_kind(name)
    if private is not None and kind.log_kind == "hidden":
        log = task_log(task, kind.log_kind, private.seed)
        built = kind.build(log, derive_seed(task.id, name, private.seed))
        return dataclasses.replace(built, seed_commitment=private.commitment), log
    log = task_log(task, kind.log_kind, base_seed)
    return kind.build(log, derive_seed(task.id, name, base_seed)), log


_FILE_FORMAT = frozenset({"load_schedule_file", "schedule_from_json", "schedule_to_json"})


def __getattr__(name: str) -> object:
    """The file format lives in `schedule_files` (which builds on this module); its functions
    are importable from here too."""
    if name in _FILE_FORMAT:
        from arrivalbench import schedule_files

        return getattr(schedule_files, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
