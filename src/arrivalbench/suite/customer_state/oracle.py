"""Second oracle for customer_state: per customer, the state of the most recent change.

The most recent change is the one with the greatest (ts_event, event_id); its status and tier are
the customer's state and its ts_event is `updated_at`.
"""

from __future__ import annotations

import pyarrow as pa


def _recency(change: dict) -> tuple:
    """Compares recency: the greater ts_event, and at one ts_event the larger event_id, is later."""
    return (change["ts_event"], change["event_id"])


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    latest: dict[int, dict] = {}
    for change in tables["customers"].to_pylist():
        held = latest.get(change["customer_id"])
        if held is None or _recency(change) > _recency(held):
            latest[change["customer_id"]] = change
    rows = list(latest.values())
    return pa.table(
        {
            "customer_id": pa.array([r["customer_id"] for r in rows], pa.int32()),
            "status": pa.array([r["status"] for r in rows], pa.string()),
            "tier": pa.array([r["tier"] for r in rows], pa.string()),
            "updated_at": pa.array([r["ts_event"] for r in rows], pa.timestamp("us")),
        }
    )
