"""Store revenue per day, small orders included: one row per store and calendar day (date of
`ts_event`) with at least one order; `revenue` sums the amounts of all that store's orders that
day and `orders` counts them. No order is filtered out, whatever its amount."""

from collections import defaultdict
from decimal import Decimal

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    revenue: dict[tuple, Decimal] = defaultdict(Decimal)
    orders: dict[tuple, int] = defaultdict(int)
    for sale in tables["sales"].to_pylist():
        key = (sale["store_id"], sale["ts_event"].date())
        revenue[key] += sale["amount"]
        orders[key] += 1
    keys = list(orders)
    return pa.table(
        {
            "store_id": pa.array([k[0] for k in keys], pa.int32()),
            "day": pa.array([k[1] for k in keys], pa.date32()),
            "revenue": pa.array([revenue[k] for k in keys], pa.decimal128(18, 2)),
            "orders": pa.array([orders[k] for k in keys], pa.int64()),
        }
    )
