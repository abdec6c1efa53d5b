"""Delta debugging over a failing schedule: the smallest delivery that still fails the same way.

Designing the passes (after Hypothesis's shrinker): each pass proposes smaller candidates of one
kind and keeps the first that still fails with the same verdict (a FAIL stays a FAIL; an ERROR
keeps its class); the passes repeat until none makes progress, so the result is 1-minimal for
every move they know. Events go first (removing an event removes all its copies, so a duplicate
stays a duplicate and a late event stays late relative to what remains), by ddmin's halving
and then one at a time; then single copies of an event delivered more than once; then whole
batches (dropped, or merged with the next); then crash points. Each candidate is graded against
the oracle over the distinct events it delivers. The search is deterministic (no randomness:
candidates are tried in a fixed order) and stops at the budget with the best schedule found.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from arrivalbench.explain.runner import Deliveries, Runner, Verdict
from arrivalbench.schedules import Delivery

DEFAULT_BUDGET_SECONDS = 60.0
DEFAULT_MAX_REPLAYS = 5000


class _OutOfBudget(Exception):
    pass


@dataclass(frozen=True)
class Shrunk:
    deliveries: Deliveries
    replays: int
    seconds: float
    exhausted: bool
    """True when the budget (time or replays) ran out before the schedule was 1-minimal."""


def _without(deliveries: Deliveries, drop: set[int]) -> Deliveries:
    kept = (
        dataclasses.replace(d, rows=tuple(r for r in d.rows if r not in drop)) for d in deliveries
    )
    return tuple(d for d in kept if d.rows)


def _events(deliveries: Deliveries) -> list[int]:
    """Distinct events in first-arrival order."""
    return list(dict.fromkeys(r for d in deliveries for r in d.rows))


def shrink(
    runner: Runner,
    deliveries: Deliveries,
    verdict: Verdict,
    budget_seconds: float = DEFAULT_BUDGET_SECONDS,
    max_replays: int = DEFAULT_MAX_REPLAYS,
) -> Shrunk:
    """A 1-minimal sub-schedule of `deliveries` with the same verdict (or the best within budget)."""
    started = time.monotonic()
    first_replay = runner.replays

    def fails(candidate: Deliveries) -> bool:
        if not candidate:
            return False
        if (
            time.monotonic() - started > budget_seconds
            or runner.replays - first_replay >= max_replays
        ):
            raise _OutOfBudget
        return runner.run(candidate).verdict == verdict

    best = deliveries
    exhausted = False
    try:
        progress = True
        while progress:
            progress = False
            for move in (_ddmin_events, _single_copies, _batches, _crashes):
                smaller = move(best, fails)
                if smaller is not None:
                    best, progress = smaller, True
    except _OutOfBudget:
        exhausted = True
    return Shrunk(best, runner.replays - first_replay, time.monotonic() - started, exhausted)


Fails = Callable[[Deliveries], bool]


def _ddmin_events(deliveries: Deliveries, fails: Fails) -> Deliveries | None:
    """ddmin over distinct events (complements first, then granularity doubled); None: no change."""
    events = _events(deliveries)
    current, n, changed = deliveries, 2, False
    while len(events) >= 2:
        size = -(-len(events) // n)
        chunks = [events[i : i + size] for i in range(0, len(events), size)]
        for chunk in chunks:
            candidate = _without(current, set(chunk))
            if fails(candidate):
                current, changed = candidate, True
                events = _events(current)
                n = max(n - 1, 2)
                break
        else:
            if n >= len(events):
                break
            n = min(2 * n, len(events))
    return current if changed else None


def _single_copies(deliveries: Deliveries, fails: Fails) -> Deliveries | None:
    """Drop one copy of an event delivered more than once."""
    counts: dict[int, int] = {}
    for d in deliveries:
        for r in d.rows:
            counts[r] = counts.get(r, 0) + 1
    for b, d in enumerate(deliveries):
        for i, r in enumerate(d.rows):
            if counts[r] < 2:
                continue
            rows = d.rows[:i] + d.rows[i + 1 :]
            candidate = _replace_batch(
                deliveries, b, [dataclasses.replace(d, rows=rows)] if rows else []
            )
            if fails(candidate):
                return candidate
    return None


def _replace_batch(deliveries: Deliveries, b: int, new: list[Delivery]) -> Deliveries:
    return (*deliveries[:b], *new, *deliveries[b + 1 :])


def _merges(deliveries: Deliveries) -> Iterator[Deliveries]:
    for b in range(len(deliveries)):
        yield _replace_batch(deliveries, b, [])
    for b in range(len(deliveries) - 1):
        a, c = deliveries[b], deliveries[b + 1]
        if a.omit_columns != c.omit_columns or a.add_synthetic != c.add_synthetic:
            continue
        merged = dataclasses.replace(c, rows=a.rows + c.rows, crash=a.crash or c.crash)
        yield (*deliveries[:b], merged, *deliveries[b + 2 :])


def _batches(deliveries: Deliveries, fails: Fails) -> Deliveries | None:
    """Drop a whole batch, or merge it into the next."""
    if len(deliveries) < 2:
        return None
    for candidate in _merges(deliveries):
        if fails(candidate):
            return candidate
    return None


def _crashes(deliveries: Deliveries, fails: Fails) -> Deliveries | None:
    """Remove one crash point."""
    for b, d in enumerate(deliveries):
        if d.crash is not None:
            candidate = _replace_batch(deliveries, b, [dataclasses.replace(d, crash=None)])
            if fails(candidate):
                return candidate
    return None
