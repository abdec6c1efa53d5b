"""Append-only facts: sales events with a store, a customer, a product and an amount.

Edge cases (off by default, so a task's log changes only when it asks): `calendar_gaps` closes a
share of (store, day) cells, moving their sales to other stores open that day, so some stores
have days without sales and a window of the last N order days is not the last N calendar days.
`time_grain_seconds` rounds event times down to a grain (no random draw), so some share a time:
within the feed, and with another feed on the same grain ("at or before" a change).
`narrow_days` leaves the latest days with only `narrow_keys` stores (or products) ("a day with
only one store has a single row"); `tie_days` makes the two best stores (or products) of some days
earn exactly the same ("the smaller id ranks first").
"""

from __future__ import annotations

from typing import Literal

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


class SalesParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    events: int = Field(300, ge=10, le=10_000_000)
    stores: int = Field(5, ge=1)
    customers: int = Field(40, ge=1)
    products: int = Field(12, ge=1)
    days: int = Field(10, ge=2)
    start: str = "2026-03-01"
    min_cents: int = Field(100, ge=0)
    max_cents: int = Field(25_000, ge=1)
    calendar_gaps: float = Field(0.0, ge=0.0, lt=1.0)
    """Share of (store, day) cells with no sales: their sales go to a store open that day."""
    narrow_days: int = Field(0, ge=0)
    """The latest this many days have every order at one of `narrow_keys` ids of `narrow_column`."""
    narrow_column: Literal["store_id", "product_id"] = "store_id"
    narrow_keys: int = Field(1, ge=1)
    tie_days: int = Field(0, ge=0)
    """On this many days (the ones before the narrow days), one order of the day's second-best
    `tie_column` id is raised so that its revenue that day ties the best one's."""
    tie_column: Literal["store_id", "product_id"] = "store_id"
    time_grain_seconds: int = Field(1, ge=1, le=86_400)
    """Event times rounded down to a multiple of this many seconds (from `start`), so events of
    one feed, or of two feeds on the same grain, share a `ts_event`."""


def _columns(_: SalesParams) -> dict[str, str]:
    return {
        "ts_event": "TIMESTAMP",
        "store_id": "INTEGER",
        "customer_id": "INTEGER",
        "product_id": "INTEGER",
        "quantity": "INTEGER",
        "amount": "DECIMAL(12,2)",
    }


def _build(p: SalesParams, random: np.random.Generator) -> dict[str, pa.Array]:
    n = p.events
    ts = timestamps(random, n, p.start, p.days)
    stores = random.integers(1, p.stores + 1, n)
    customers = random.integers(1, p.customers + 1, n)
    products = random.integers(1, p.products + 1, n)
    quantities = random.integers(1, 6, n)
    cents = random.integers(p.min_cents, p.max_cents + 1, n)
    if p.calendar_gaps > 0:  # drawn last, so every other value matches the log without gaps
        stores = _close_cells(p, random, ts, stores)
    keys = {"store_id": stores, "product_id": products}
    day = (ts - np.datetime64(p.start, "us").astype(np.int64)) // 86_400_000_000
    if p.narrow_days:  # drawn last: the other columns stay as they were
        _narrow(p, random, day, keys[p.narrow_column])
    if p.tie_days:
        cents = _tie(p, day, keys[p.tie_column], cents)
    ts = round_down(ts, p.start, p.time_grain_seconds)
    return {
        "ts_event": ts_array(ts),
        "store_id": pa.array(keys["store_id"], pa.int32()),
        "customer_id": pa.array(customers, pa.int32()),
        "product_id": pa.array(keys["product_id"], pa.int32()),
        "quantity": pa.array(quantities, pa.int32()),
        "amount": cents_to_decimal(cents),
    }


def _close_cells(
    p: SalesParams, random: np.random.Generator, ts: np.ndarray, stores: np.ndarray
) -> np.ndarray:
    """Move the sales of closed (store, day) cells to a store open that day; one store stays open."""
    origin = np.datetime64(p.start, "us").astype(np.int64)
    day = (ts - origin) // 86_400_000_000
    closed = random.random((p.days, p.stores)) < p.calendar_gaps
    closed[np.arange(p.days), random.integers(0, p.stores, p.days)] = False
    stores = stores.copy()
    for i in np.flatnonzero(closed[day, stores - 1]):
        open_stores = np.flatnonzero(~closed[day[i]]) + 1
        stores[i] = open_stores[random.integers(0, len(open_stores))]
    return stores


def _narrow(p: SalesParams, random: np.random.Generator, day: np.ndarray, key: np.ndarray) -> None:
    """On the latest `narrow_days` days, move every order to one of `narrow_keys` of its day's ids."""
    for d in np.unique(day)[-p.narrow_days :]:
        rows = np.flatnonzero(day == d)
        present = np.unique(key[rows])
        kept = random.choice(present, size=min(p.narrow_keys, len(present)), replace=False)
        key[rows] = kept[random.integers(0, len(kept), len(rows))]


def _tie(p: SalesParams, day: np.ndarray, key: np.ndarray, cents: np.ndarray) -> np.ndarray:
    """On `tie_days` days before the narrow ones, raise one order of the day's second-best id so
    that its revenue equals the best id's (no random draw)."""
    cents = cents.copy()
    days = np.unique(day)
    for d in days[: len(days) - p.narrow_days][-p.tie_days :]:
        rows = np.flatnonzero(day == d)
        ids, totals = np.unique(key[rows], return_inverse=True)
        if len(ids) < 2:
            continue
        sums = np.bincount(totals, weights=cents[rows]).astype(np.int64)
        best, second = np.argsort(-sums, kind="stable")[:2]
        raised = rows[np.flatnonzero(totals == second)[0]]
        cents[raised] += sums[best] - sums[second]
    return cents


register(Generator(kind="sales", params=SalesParams, columns=_columns, build=_build))
