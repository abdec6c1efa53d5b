"""Second oracle for top_stores_repair: for every day with an order, the two stores with the
largest summed order amount that day (equal revenue: the smaller store_id first), ranked 1 and 2.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date
from decimal import Decimal

import pyarrow as pa

SCHEMA = pa.schema(
    [
        ("day", pa.date32()),
        ("rank", pa.int64()),
        ("store_id", pa.int32()),
        ("revenue", pa.decimal128(18, 2)),
    ]
)


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    """Revenue per (day, store) from every order, then the top two stores of each day."""
    revenue: dict[date, dict[int, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for order in tables["sales"].to_pylist():
        revenue[order["ts_event"].date()][order["store_id"]] += order["amount"]
    rows = []
    for day, by_store in revenue.items():
        leaders = sorted(by_store.items(), key=lambda item: (-item[1], item[0]))[:2]
        for rank, (store_id, total) in enumerate(leaders, start=1):
            rows.append({"day": day, "rank": rank, "store_id": store_id, "revenue": total})
    return pa.Table.from_pylist(rows, schema=SCHEMA)
