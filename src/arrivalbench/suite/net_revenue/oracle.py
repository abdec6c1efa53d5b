"""Second oracle for net_revenue: per store and calendar day of ts_event with any row, the exact
sum of that day's sale amounts (gross), of that day's refund amounts (refunds, dated by the
refund's own ts_event) and gross minus refunds (net).
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    days: dict[tuple, dict[str, Decimal]] = {}
    for row in tables["orders"].to_pylist():
        key = (row["store_id"], row["ts_event"].date())
        sums = days.setdefault(key, {"sale": Decimal(0), "refund": Decimal(0)})
        sums[row["kind"]] += row["amount"]
    keys = sorted(days)
    money = pa.decimal128(18, 2)
    return pa.table(
        {
            "store_id": pa.array([k[0] for k in keys], pa.int32()),
            "day": pa.array([k[1] for k in keys], pa.date32()),
            "gross": pa.array([days[k]["sale"] for k in keys], money),
            "refunds": pa.array([days[k]["refund"] for k in keys], money),
            "net": pa.array([days[k]["sale"] - days[k]["refund"] for k in keys], money),
        }
    )
