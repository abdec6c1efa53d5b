"""Orders and refunds: a refund event subtracts (part of) an earlier order's amount."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from arrivalbench.generators import Generator, cents_to_decimal, register, timestamps, ts_array


class OrdersRefundsParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    events: int = Field(300, ge=10, le=10_000_000)
    stores: int = Field(4, ge=1)
    customers: int = Field(30, ge=1)
    days: int = Field(10, ge=2)
    start: str = "2026-03-01"
    refund_share: float = Field(0.2, ge=0.0, le=0.9)
    max_refund_lag_hours: int = Field(72, ge=1)


def _columns(_: OrdersRefundsParams) -> dict[str, str]:
    return {
        "ts_event": "TIMESTAMP",
        "order_id": "BIGINT",
        "store_id": "INTEGER",
        "customer_id": "INTEGER",
        "kind": "VARCHAR",
        "amount": "DECIMAL(12,2)",
    }


def _build(p: OrdersRefundsParams, random: np.random.Generator) -> dict[str, pa.Array]:
    n_refunds = int(p.events * p.refund_share)
    n_orders = p.events - n_refunds
    order_ts = timestamps(random, n_orders, p.start, p.days)
    order_ids = np.arange(1, n_orders + 1, dtype=np.int64) + 5_000
    stores = random.integers(1, p.stores + 1, n_orders)
    customers = random.integers(1, p.customers + 1, n_orders)
    cents = random.integers(500, 30_000, n_orders)
    refunded = random.choice(n_orders, size=n_refunds, replace=False)
    lag = random.integers(60, p.max_refund_lag_hours * 3600, n_refunds).astype(np.int64) * 1_000_000
    refund_cents = np.maximum(
        1, (cents[refunded] * random.uniform(0.2, 1.0, n_refunds)).astype(np.int64)
    )
    pick = np.concatenate([np.arange(n_orders), refunded])
    return {
        "ts_event": ts_array(np.concatenate([order_ts, order_ts[refunded] + lag])),
        "order_id": pa.array(order_ids[pick], pa.int64()),
        "store_id": pa.array(stores[pick], pa.int32()),
        "customer_id": pa.array(customers[pick], pa.int32()),
        "kind": pa.array(["sale"] * n_orders + ["refund"] * n_refunds, pa.string()),
        "amount": cents_to_decimal(np.concatenate([cents, refund_cents])),
    }


register(
    Generator(kind="orders_refunds", params=OrdersRefundsParams, columns=_columns, build=_build)
)
