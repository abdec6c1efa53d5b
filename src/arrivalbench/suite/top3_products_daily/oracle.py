"""Second oracle for top3_products_daily: per calendar day with orders, the three products with
the most revenue that day (exact sums), ranked 1..3 with ties going to the smaller product_id;
a day with fewer products ordered has fewer rows.
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    revenue: dict[date, dict[int, Decimal]] = {}
    for row in tables["sales"].to_pylist():
        per_product = revenue.setdefault(row["ts_event"].date(), {})
        product = row["product_id"]
        per_product[product] = per_product.get(product, Decimal(0)) + row["amount"]
    out: dict[str, list] = {"day": [], "rank": [], "product_id": [], "revenue": []}
    for day in sorted(revenue):
        ranked = sorted(revenue[day].items(), key=lambda item: (-item[1], item[0]))
        for rank, (product, amount) in enumerate(ranked[:3], start=1):
            out["day"].append(day)
            out["rank"].append(rank)
            out["product_id"].append(product)
            out["revenue"].append(amount)
    return pa.table(
        {
            "day": pa.array(out["day"], pa.date32()),
            "rank": pa.array(out["rank"], pa.int64()),
            "product_id": pa.array(out["product_id"], pa.int32()),
            "revenue": pa.array(out["revenue"], pa.decimal128(18, 2)),
        }
    )
