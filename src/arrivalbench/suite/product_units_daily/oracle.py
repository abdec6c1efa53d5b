"""Units and revenue per product and calendar day (date of `ts_event`) with at least one order:
`units` sums the orders' `quantity` and `revenue` their `amount`."""

from collections import defaultdict
from decimal import Decimal

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    units: dict[tuple, int] = defaultdict(int)
    revenue: dict[tuple, Decimal] = defaultdict(Decimal)
    for sale in tables["sales"].to_pylist():
        key = (sale["product_id"], sale["ts_event"].date())
        units[key] += sale["quantity"]
        revenue[key] += sale["amount"]
    keys = list(units)
    return pa.table(
        {
            "product_id": pa.array([k[0] for k in keys], pa.int32()),
            "day": pa.array([k[1] for k in keys], pa.date32()),
            "units": pa.array([units[k] for k in keys], pa.int64()),
            "revenue": pa.array([revenue[k] for k in keys], pa.decimal128(18, 2)),
        }
    )
