"""Second oracle for store_max_order: per store with an order, its extreme amounts.

`largest_amount` and `smallest_amount` are the store's largest and smallest order amounts;
`largest_at` is the ts_event of the largest order, of equal amounts the one with the smallest event_id.
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    largest: dict[int, dict] = {}
    smallest: dict[int, Decimal] = {}
    for order in tables["sales"].to_pylist():
        store, amount = order["store_id"], order["amount"]
        held = largest.get(store)
        if held is None or (amount, -order["event_id"]) > (held["amount"], -held["event_id"]):
            largest[store] = order
        smallest[store] = min(amount, smallest.get(store, amount))
    stores = list(largest)
    return pa.table(
        {
            "store_id": pa.array(stores, pa.int32()),
            "largest_amount": pa.array(
                [largest[s]["amount"] for s in stores], pa.decimal128(12, 2)
            ),
            "smallest_amount": pa.array([smallest[s] for s in stores], pa.decimal128(12, 2)),
            "largest_at": pa.array([largest[s]["ts_event"] for s in stores], pa.timestamp("us")),
        }
    )
