"""Second oracle for first_purchase: per customer with a purchase, the earliest purchase.

The first purchase is the smallest (ts_event, event_id); it gives `first_purchase_at` and
`first_store_id`; `purchase_days` counts the distinct dates of the customer's purchases.
"""

from __future__ import annotations

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    first: dict[int, tuple] = {}
    days: dict[int, set] = {}
    for sale in tables["sales"].to_pylist():
        customer = sale["customer_id"]
        candidate = (sale["ts_event"], sale["event_id"], sale["store_id"])
        if customer not in first or candidate[:2] < first[customer][:2]:
            first[customer] = candidate
        days.setdefault(customer, set()).add(sale["ts_event"].date())
    customers = list(first)
    return pa.table(
        {
            "customer_id": pa.array(customers, pa.int32()),
            "first_purchase_at": pa.array([first[c][0] for c in customers], pa.timestamp("us")),
            "first_store_id": pa.array([first[c][2] for c in customers], pa.int32()),
            "purchase_days": pa.array([len(days[c]) for c in customers], pa.int64()),
        }
    )
