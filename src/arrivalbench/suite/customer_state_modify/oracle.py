"""Second oracle for customer_state_modify: per customer, the latest state and the change count.

`status`, `tier` and `updated_at` come from the change with the greatest (ts_event, event_id);
`changes` is the number of distinct event_id values of the customer's changes in the whole log.
"""

from __future__ import annotations

import pyarrow as pa


def _recency(change: dict) -> tuple:
    """Compares recency: the greater ts_event, and at one ts_event the larger event_id, is later."""
    return (change["ts_event"], change["event_id"])


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    latest: dict[int, dict] = {}
    ids: dict[int, set] = {}
    for change in tables["customers"].to_pylist():
        customer = change["customer_id"]
        ids.setdefault(customer, set()).add(change["event_id"])
        held = latest.get(customer)
        if held is None or _recency(change) > _recency(held):
            latest[customer] = change
    rows = list(latest.values())
    return pa.table(
        {
            "customer_id": pa.array([r["customer_id"] for r in rows], pa.int32()),
            "status": pa.array([r["status"] for r in rows], pa.string()),
            "tier": pa.array([r["tier"] for r in rows], pa.string()),
            "updated_at": pa.array([r["ts_event"] for r in rows], pa.timestamp("us")),
            "changes": pa.array([len(ids[r["customer_id"]]) for r in rows], pa.int64()),
        }
    )
