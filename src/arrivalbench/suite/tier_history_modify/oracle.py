"""Second oracle for tier_history_modify: every tier change as an interval from its ts_event to the
ts_event of the customer's next change in (ts_event, event_id) order (NULL for the last one),
with is_current true exactly on each customer's last change.
"""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa

SCHEMA = pa.schema(
    [
        ("customer_id", pa.int32()),
        ("event_id", pa.int64()),
        ("tier", pa.string()),
        ("valid_from", pa.timestamp("us")),
        ("valid_to", pa.timestamp("us")),
        ("is_current", pa.bool_()),
    ]
)


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    """Sort each customer's changes; each closes at the next one, the last stays current."""
    by_customer: dict[int, list[dict]] = defaultdict(list)
    for change in tables["customers"].to_pylist():
        by_customer[change["customer_id"]].append(change)
    rows = []
    for changes in by_customer.values():
        changes.sort(key=lambda c: (c["ts_event"], c["event_id"]))
        for position, change in enumerate(changes):
            last = position == len(changes) - 1
            rows.append(
                {
                    "customer_id": change["customer_id"],
                    "event_id": change["event_id"],
                    "tier": change["tier"],
                    "valid_from": change["ts_event"],
                    "valid_to": None if last else changes[position + 1]["ts_event"],
                    "is_current": last,
                }
            )
    return pa.Table.from_pylist(rows, schema=SCHEMA)
