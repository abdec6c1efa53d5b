"""Second oracle for customer_net_spend: per customer with any row, the exact sums of sale and
refund amounts, their difference, and the number of sale rows (each 0 when there are none).
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    totals: dict[int, list] = {}  # customer -> [gross, refunds, sale rows]
    for row in tables["orders"].to_pylist():
        entry = totals.setdefault(row["customer_id"], [Decimal(0), Decimal(0), 0])
        if row["kind"] == "sale":
            entry[0] += row["amount"]
            entry[2] += 1
        elif row["kind"] == "refund":
            entry[1] += row["amount"]
    customers = sorted(totals)
    money = pa.decimal128(18, 2)
    return pa.table(
        {
            "customer_id": pa.array(customers, pa.int32()),
            "gross": pa.array([totals[c][0] for c in customers], money),
            "refunds": pa.array([totals[c][1] for c in customers], money),
            "net": pa.array([totals[c][0] - totals[c][1] for c in customers], money),
            "orders": pa.array([totals[c][2] for c in customers], pa.int64()),
        }
    )
