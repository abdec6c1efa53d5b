"""Second oracle for first_purchase_modify: per customer with a purchase, the span and the stores.

`first_purchase_at` and `last_purchase_at` are the earliest and latest ts_event of the customer's
purchases; `stores_visited` is the number of distinct store_id values among them.
"""

from __future__ import annotations

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    times: dict[int, list] = {}
    stores: dict[int, set] = {}
    for sale in tables["sales"].to_pylist():
        customer = sale["customer_id"]
        times.setdefault(customer, []).append(sale["ts_event"])
        visited = stores.setdefault(customer, set())
        if sale["store_id"] is not None:
            visited.add(sale["store_id"])
    customers = list(times)
    return pa.table(
        {
            "customer_id": pa.array(customers, pa.int32()),
            "first_purchase_at": pa.array([min(times[c]) for c in customers], pa.timestamp("us")),
            "last_purchase_at": pa.array([max(times[c]) for c in customers], pa.timestamp("us")),
            "stores_visited": pa.array([len(stores[c]) for c in customers], pa.int64()),
        }
    )
