"""Orders and refunds: a refund event subtracts (part of) an earlier order's amount.

Edge cases (off by default, so a task's log changes only when it asks): `refund_only_stores`
adds that many stores (ids after `stores`) whose only rows are refunds of orders placed before the
log begins, so their sales sum to 0: a zero denominator for any rate over a store's sales. The
refunds are taken from the log's refunds, so the number of events is unchanged.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, model_validator

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
    refund_only_stores: int = Field(0, ge=0, le=100)
    """Extra stores whose only rows are refunds (two each) of orders placed before the log."""

    @model_validator(mode="after")
    def _enough_refunds(self) -> OrdersRefundsParams:
        n_refunds = int(self.events * self.refund_share)
        if n_refunds < 2 * self.refund_only_stores:
            raise ValueError(
                f"refund_only_stores={self.refund_only_stores} needs "
                f"{2 * self.refund_only_stores} refunds but the log has {n_refunds}; "
                "raise events or refund_share"
            )
        return self


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
    ts = np.concatenate([order_ts, order_ts[refunded] + lag])
    order_of, store_of = order_ids[pick], stores[pick]
    if p.refund_only_stores:  # drawn last: the other columns stay as they were
        _refund_only_stores(p, random, n_orders, ts, order_of, store_of)
    return {
        "ts_event": ts_array(ts),
        "order_id": pa.array(order_of, pa.int64()),
        "store_id": pa.array(store_of, pa.int32()),
        "customer_id": pa.array(customers[pick], pa.int32()),
        "kind": pa.array(["sale"] * n_orders + ["refund"] * n_refunds, pa.string()),
        "amount": cents_to_decimal(np.concatenate([cents, refund_cents])),
    }


def _refund_only_stores(
    p: OrdersRefundsParams,
    random: np.random.Generator,
    n_orders: int,
    ts: np.ndarray,
    order_of: np.ndarray,
    store_of: np.ndarray,
) -> None:
    """Turn two refunds per extra store into refunds of that store's orders from before the log."""
    n_refunds = len(ts) - n_orders
    moved = n_orders + random.choice(n_refunds, size=2 * p.refund_only_stores, replace=False)
    origin = np.datetime64(p.start, "us").astype(np.int64)
    lag = random.integers(60, p.max_refund_lag_hours * 3600, len(moved)).astype(np.int64)
    ts[moved] = origin + lag * 1_000_000
    order_of[moved] = np.arange(1, len(moved) + 1) + 1_000  # the log's own orders start at 5_001
    store_of[moved] = p.stores + 1 + np.arange(len(moved)) // 2


register(
    Generator(kind="orders_refunds", params=OrdersRefundsParams, columns=_columns, build=_build)
)
