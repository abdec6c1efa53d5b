"""Second oracle for net_revenue_repair: per store and calendar day of the row's own ts_event
with any sale or refund, the exact sum of sale amounts minus the sum of refund amounts.
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    sign = {"sale": 1, "refund": -1}
    net: dict[tuple, Decimal] = {}
    for row in tables["orders"].to_pylist():
        key = (row["store_id"], row["ts_event"].date())
        net[key] = net.get(key, Decimal(0)) + sign[row["kind"]] * row["amount"]
    keys = sorted(net)
    return pa.table(
        {
            "store_id": pa.array([k[0] for k in keys], pa.int32()),
            "day": pa.array([k[1] for k in keys], pa.date32()),
            "net_revenue": pa.array([net[k] for k in keys], pa.decimal128(18, 2)),
        }
    )
