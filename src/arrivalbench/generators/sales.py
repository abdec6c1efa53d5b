"""Append-only facts: sales events with a store, a customer, a product and an amount."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from arrivalbench.generators import Generator, cents_to_decimal, register, timestamps, ts_array


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
    return {
        "ts_event": ts_array(timestamps(random, n, p.start, p.days)),
        "store_id": pa.array(random.integers(1, p.stores + 1, n), pa.int32()),
        "customer_id": pa.array(random.integers(1, p.customers + 1, n), pa.int32()),
        "product_id": pa.array(random.integers(1, p.products + 1, n), pa.int32()),
        "quantity": pa.array(random.integers(1, 6, n), pa.int32()),
        "amount": cents_to_decimal(random.integers(p.min_cents, p.max_cents + 1, n)),
    }


register(Generator(kind="sales", params=SalesParams, columns=_columns, build=_build))
