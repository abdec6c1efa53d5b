"""Clickstream: users' page events in bursts (visits) separated by idle gaps, with funnel actions.

Edge cases (off by default, so a task's log changes only when it asks), for a rule stated on the
gap between a user's consecutive events: `boundary_gaps` sets a share of those gaps to exactly
`boundary_seconds`, `equal_timestamps` a share to zero (the event shares its predecessor's time).
Every later event of that user shifts with it, so every other gap stays as it was.
`days_without_action` empties whole days of one action (a day with no viewers, no purchases), for
a rate's zero denominator and counts that are 0, not NULL.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, model_validator

from arrivalbench.generators import Generator, register, ts_array

PAGES = np.array(["home", "search", "product", "cart", "checkout", "help"], dtype=object)
ACTIONS = np.array(["view", "add_to_cart", "purchase"], dtype=object)


class ClickstreamParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    events: int = Field(400, ge=10, le=10_000_000)
    users: int = Field(30, ge=1)
    days: int = Field(7, ge=1)
    start: str = "2026-03-01"
    mean_visit_events: float = Field(5.0, ge=1.0)
    mean_step_seconds: int = Field(120, ge=1)
    """Mean time between two events of one visit; visits start at uniform times over the days."""
    add_to_cart_share: float = Field(0.2, ge=0.0, le=1.0)
    purchase_share: float = Field(0.08, ge=0.0, le=1.0)
    boundary_gaps: float = Field(0.0, ge=0.0, le=1.0)
    """Share of a user's gaps between consecutive events set to exactly `boundary_seconds`."""
    boundary_seconds: int = Field(1800, ge=1)
    equal_timestamps: float = Field(0.0, ge=0.0, le=1.0)
    """Share of a user's events stamped with exactly the time of that user's previous event."""
    days_without_action: dict[Literal["view", "add_to_cart", "purchase"], int] = Field(
        default_factory=dict
    )
    """Per action, how many of the latest days (distinct ones) have no event of it: on each such day
    every event of that action becomes another ('view' becomes 'add_to_cart', the others 'view')."""

    @model_validator(mode="after")
    def _shares(self) -> ClickstreamParams:
        if self.boundary_gaps + self.equal_timestamps > 1:
            raise ValueError("boundary_gaps + equal_timestamps must be at most 1")
        if sum(self.days_without_action.values()) > self.days:
            raise ValueError("days_without_action asks for more days than the log has")
        return self


def _columns(_: ClickstreamParams) -> dict[str, str]:
    return {"ts_event": "TIMESTAMP", "user_id": "INTEGER", "page": "VARCHAR", "action": "VARCHAR"}


def _build(p: ClickstreamParams, random: np.random.Generator) -> dict[str, pa.Array]:
    n = p.events
    # Cut the events into visits, each one user's burst of activity.
    visit_sizes: list[int] = []
    while sum(visit_sizes) < n:
        visit_sizes.append(int(random.geometric(1.0 / p.mean_visit_events)))
    visit_sizes[-1] -= sum(visit_sizes) - n
    visits = len(visit_sizes)
    visit_of = np.repeat(np.arange(visits), visit_sizes)
    visit_user = random.integers(1, p.users + 1, visits)
    origin = np.datetime64(p.start, "us").astype(np.int64)
    visit_start = origin + random.integers(0, p.days * 86_400, visits).astype(np.int64) * 1_000_000
    steps = np.maximum(1, random.exponential(p.mean_step_seconds, n)).astype(np.int64) * 1_000_000
    first_of_visit = np.r_[True, visit_of[1:] != visit_of[:-1]]
    steps[first_of_visit] = 0
    offsets = np.cumsum(steps)
    offsets -= np.maximum.accumulate(np.where(first_of_visit, offsets, 0))
    draw = random.random(n)
    action = np.where(
        draw < p.purchase_share, 2, np.where(draw < p.purchase_share + p.add_to_cart_share, 1, 0)
    )
    pages = PAGES[random.integers(0, len(PAGES), n)]
    ts = visit_start[visit_of] + offsets
    users = visit_user[visit_of]
    if p.boundary_gaps or p.equal_timestamps:  # drawn last: the other columns stay as they were
        ts = _edge_gaps(p, random, ts, users)
    if p.days_without_action:  # after the gaps: times and users stay as they were
        action = _days_without(p, ts, action)
    return {
        "ts_event": ts_array(ts),
        "user_id": pa.array(users, pa.int32()),
        "page": pa.array(pages, pa.string()),
        "action": pa.array(ACTIONS[action], pa.string()),
    }


def _edge_gaps(
    p: ClickstreamParams, random: np.random.Generator, ts: np.ndarray, users: np.ndarray
) -> np.ndarray:
    """Set a share of each user's gaps to the boundary and a share to zero, keeping the others."""
    order = np.lexsort((ts, users))
    sorted_ts, sorted_users = ts[order], users[order]
    first = np.r_[True, sorted_users[1:] != sorted_users[:-1]]
    gaps = np.diff(sorted_ts, prepend=sorted_ts[0])
    draw = random.random(len(ts))
    gaps = np.where(draw < p.boundary_gaps, p.boundary_seconds * 1_000_000, gaps)
    gaps = np.where(
        (draw >= p.boundary_gaps) & (draw < p.boundary_gaps + p.equal_timestamps), 0, gaps
    )
    gaps[first] = 0
    # Each user's times restart from their first event: the cumulative sum less what came before.
    total = np.cumsum(gaps)
    base = np.maximum.accumulate(np.where(first, np.arange(len(ts)), 0))
    shifted = sorted_ts[base] + total - total[base]
    out = np.empty_like(ts)
    out[order] = shifted
    return out


def _days_without(p: ClickstreamParams, ts: np.ndarray, action: np.ndarray) -> np.ndarray:
    """Clear each listed action from that many of the log's latest days (distinct per action), by
    turning its events into another action. The latest days, so that a redelivered past day
    still has every action."""
    origin = np.datetime64(p.start, "us").astype(np.int64)
    day = (ts - origin) // 86_400_000_000
    free = list(np.unique(day))
    action = action.copy()
    for name, count in sorted(p.days_without_action.items()):
        code = list(ACTIONS).index(name)
        for d in free[len(free) - count :]:
            action[(day == d) & (action == code)] = 1 if code == 0 else 0
        free = free[: len(free) - count]
    return action


register(Generator(kind="clickstream", params=ClickstreamParams, columns=_columns, build=_build))
