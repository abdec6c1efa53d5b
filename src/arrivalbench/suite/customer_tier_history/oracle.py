"""Second oracle for customer_tier_history: every tier change as an interval from its own ts_event
to the ts_event of the customer's next change in (ts_event, event_id) order, open (NULL) for the
customer's last change; changes are never merged.
"""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa

SCHEMA = pa.schema(
    [
        ("event_id", pa.int64()),
        ("customer_id", pa.int32()),
        ("tier", pa.string()),
        ("valid_from", pa.timestamp("us")),
        ("valid_to", pa.timestamp("us")),
    ]
)


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    """Sort each customer's changes, then pair every change with the one after it."""
    by_customer: dict[int, list[dict]] = defaultdict(list)
    for change in tables["customers"].to_pylist():
        by_customer[change["customer_id"]].append(change)
    rows = []
    for changes in by_customer.values():
        changes.sort(key=lambda c: (c["ts_event"], c["event_id"]))
        following = [c["ts_event"] for c in changes[1:]] + [None]
        for change, valid_to in zip(changes, following, strict=True):
            rows.append(
                {
                    "event_id": change["event_id"],
                    "customer_id": change["customer_id"],
                    "tier": change["tier"],
                    "valid_from": change["ts_event"],
                    "valid_to": valid_to,
                }
            )
    return pa.Table.from_pylist(rows, schema=SCHEMA)
