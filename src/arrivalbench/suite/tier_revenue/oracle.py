"""Second oracle for tier_revenue: each order counts under the tier its customer held at the sale.

That tier comes from the customer's latest `customers` row at or before the sale's ts_event (ties
on ts_event: larger event_id), 'unknown' without one; per (tier, sale date), revenue and orders.
"""

from __future__ import annotations

from bisect import bisect_right
from decimal import Decimal

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    history: dict[int, list[tuple]] = {}
    for change in tables["customers"].to_pylist():
        history.setdefault(change["customer_id"], []).append(
            (change["ts_event"], change["event_id"], change["tier"])
        )
    times: dict[int, list] = {}
    for customer, changes in history.items():
        changes.sort(key=lambda c: (c[0], c[1]))
        times[customer] = [c[0] for c in changes]
    revenue: dict[tuple, Decimal] = {}
    orders: dict[tuple, int] = {}
    for sale in tables["sales"].to_pylist():
        customer = sale["customer_id"]
        # The last change at or before the sale; among changes at one time, the largest event_id.
        at = bisect_right(times.get(customer, []), sale["ts_event"])
        tier = history[customer][at - 1][2] if at > 0 else "unknown"
        key = (tier, sale["ts_event"].date())
        revenue[key] = revenue.get(key, Decimal(0)) + sale["amount"]
        orders[key] = orders.get(key, 0) + 1
    return pa.table(
        {
            "tier": pa.array([k[0] for k in revenue], pa.string()),
            "day": pa.array([k[1] for k in revenue], pa.date32()),
            "revenue": pa.array(list(revenue.values()), pa.decimal128(18, 2)),
            "orders": pa.array([orders[k] for k in revenue], pa.int64()),
        }
    )
