"""Distinct customers and revenue per store and calendar day (date of `ts_event`) with at least
one order: `customers` counts the different customers with an order there that day (several
orders count once) and `revenue` sums the amounts of the store's orders that day."""

from collections import defaultdict
from decimal import Decimal

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    customers: dict[tuple, set] = defaultdict(set)
    revenue: dict[tuple, Decimal] = defaultdict(Decimal)
    for sale in tables["sales"].to_pylist():
        key = (sale["store_id"], sale["ts_event"].date())
        revenue[key] += sale["amount"]
        if sale["customer_id"] is not None:
            customers[key].add(sale["customer_id"])
    keys = list(revenue)
    return pa.table(
        {
            "store_id": pa.array([k[0] for k in keys], pa.int32()),
            "day": pa.array([k[1] for k in keys], pa.date32()),
            "customers": pa.array([len(customers[k]) for k in keys], pa.int64()),
            "revenue": pa.array([revenue[k] for k in keys], pa.decimal128(18, 2)),
        }
    )
