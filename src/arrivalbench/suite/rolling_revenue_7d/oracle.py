"""Second oracle for rolling_revenue_7d: per store and order day with at least one order, the
exact sum of the store's order amounts dated in the seven calendar days ending on that day, and
the number of orders dated on the day itself.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    revenue: dict[tuple, Decimal] = {}
    count: dict[tuple, int] = {}
    for row in tables["sales"].to_pylist():
        key = (row["store_id"], row["ts_event"].date())
        revenue[key] = revenue.get(key, Decimal(0)) + row["amount"]
        count[key] = count.get(key, 0) + 1
    keys = sorted(count)
    trailing = [
        sum(
            (revenue.get((store, day - timedelta(days=back)), Decimal(0)) for back in range(7)),
            Decimal(0),
        )
        for store, day in keys
    ]
    return pa.table(
        {
            "store_id": pa.array([k[0] for k in keys], pa.int32()),
            "day": pa.array([k[1] for k in keys], pa.date32()),
            "revenue_7d": pa.array(trailing, pa.decimal128(18, 2)),
            "orders": pa.array([count[k] for k in keys], pa.int64()),
        }
    )
