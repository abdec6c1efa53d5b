"""Second oracle for refund_rate_modify: per store with any row, the exact sums of sale amounts
(gross) and refund amounts (refunds), and refund_rate = refunds / gross as a double, NULL when
gross is 0.
"""

from __future__ import annotations

from decimal import Decimal, localcontext

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    gross: dict[int, Decimal] = {}
    refunds: dict[int, Decimal] = {}
    for row in tables["orders"].to_pylist():
        store = row["store_id"]
        gross.setdefault(store, Decimal(0))
        refunds.setdefault(store, Decimal(0))
        if row["kind"] == "sale":
            gross[store] += row["amount"]
        elif row["kind"] == "refund":
            refunds[store] += row["amount"]
    stores = sorted(gross)
    rates = []
    with localcontext() as ctx:
        ctx.prec = 40  # the exact quotient, rounded once to a double below
        for store in stores:
            rates.append(None if gross[store] == 0 else float(refunds[store] / gross[store]))
    money = pa.decimal128(18, 2)
    return pa.table(
        {
            "store_id": pa.array(stores, pa.int32()),
            "gross": pa.array([gross[s] for s in stores], money),
            "refunds": pa.array([refunds[s] for s in stores], money),
            "refund_rate": pa.array(rates, pa.float64()),
        }
    )
