"""Second oracle for rolling_orders_3d_modify: per store and order day with at least one order,
the orders dated that day and the orders dated in the three calendar days ending on it.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    orders = Counter(
        (row["store_id"], row["ts_event"].date()) for row in tables["sales"].to_pylist()
    )
    keys = sorted(orders)
    window = [
        sum(orders.get((store, day - timedelta(days=back)), 0) for back in range(3))
        for store, day in keys
    ]
    return pa.table(
        {
            "store_id": pa.array([k[0] for k in keys], pa.int32()),
            "day": pa.array([k[1] for k in keys], pa.date32()),
            "orders": pa.array([orders[k] for k in keys], pa.int64()),
            "orders_3d": pa.array(window, pa.int64()),
        }
    )
