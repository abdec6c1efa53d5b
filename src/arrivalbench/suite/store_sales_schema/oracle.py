"""Daily sales per store while `quantity` is new to the feed: one row per store and calendar day
(date of `ts_event`) with at least one order; `revenue` sums the amounts, `orders` counts the
orders and `units` sums `quantity`, an order without one (NULL) counting as 0."""

from collections import defaultdict
from decimal import Decimal

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    sales = tables["sales"]
    has_quantity = "quantity" in sales.column_names
    revenue: dict[tuple, Decimal] = defaultdict(Decimal)
    orders: dict[tuple, int] = defaultdict(int)
    units: dict[tuple, int] = defaultdict(int)
    for sale in sales.to_pylist():
        key = (sale["store_id"], sale["ts_event"].date())
        revenue[key] += sale["amount"]
        orders[key] += 1
        units[key] += (sale["quantity"] or 0) if has_quantity else 0
    keys = list(orders)
    return pa.table(
        {
            "store_id": pa.array([k[0] for k in keys], pa.int32()),
            "day": pa.array([k[1] for k in keys], pa.date32()),
            "revenue": pa.array([revenue[k] for k in keys], pa.decimal128(18, 2)),
            "orders": pa.array([orders[k] for k in keys], pa.int64()),
            "units": pa.array([units[k] for k in keys], pa.int64()),
        }
    )
