"""Second oracle for region_revenue: every order counts under its customer's current region.

The current region is the one of the customer's latest `customers` row by (ts_event, event_id),
'unknown' for a customer with no row; per region, the summed amount and the number of orders.
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    latest: dict[int, tuple[tuple, str]] = {}
    for change in tables["customers"].to_pylist():
        rank = (change["ts_event"], change["event_id"])
        held = latest.get(change["customer_id"])
        if held is None or rank > held[0]:
            latest[change["customer_id"]] = (rank, change["region"])
    revenue: dict[str, Decimal] = {}
    orders: dict[str, int] = {}
    for sale in tables["sales"].to_pylist():
        held = latest.get(sale["customer_id"])
        region = held[1] if held is not None else "unknown"
        revenue[region] = revenue.get(region, Decimal(0)) + sale["amount"]
        orders[region] = orders.get(region, 0) + 1
    return pa.table(
        {
            "region": pa.array(list(revenue), pa.string()),
            "revenue": pa.array(list(revenue.values()), pa.decimal128(18, 2)),
            "orders": pa.array([orders[r] for r in revenue], pa.int64()),
        }
    )
