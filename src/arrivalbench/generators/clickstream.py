"""Clickstream: users' page events in bursts (visits) separated by idle gaps, with funnel actions."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

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
    return {
        "ts_event": ts_array(visit_start[visit_of] + offsets),
        "user_id": pa.array(visit_user[visit_of], pa.int32()),
        "page": pa.array(PAGES[random.integers(0, len(PAGES), n)], pa.string()),
        "action": pa.array(ACTIONS[action], pa.string()),
    }


register(Generator(kind="clickstream", params=ClickstreamParams, columns=_columns, build=_build))
