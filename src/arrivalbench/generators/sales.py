"""Append-only facts: sales events with a store, a customer, a product and an amount.

Edge cases (off by default, so a task's log changes only when it asks): `calendar_gaps` closes a
share of (store, day) cells, moving their sales to other stores open that day, so some stores
have days without sales and a window of the last N order days is not the last N calendar days.
`time_grain_seconds` rounds event times down to a grain (no random draw), so some share a time:
within the feed, and with another feed on the same grain ("at or before" a change).
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
    ts = round_down(ts, p.start, p.time_grain_seconds)
    return {
        "ts_event": ts_array(ts),
        "store_id": pa.array(stores, pa.int32()),
        "customer_id": pa.array(customers, pa.int32()),
        "product_id": pa.array(products, pa.int32()),
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


register(Generator(kind="sales", params=SalesParams, columns=_columns, build=_build))
