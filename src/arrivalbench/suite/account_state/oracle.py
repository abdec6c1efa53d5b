"""Second oracle for account_state: every account whose most recent change (greatest ts_event,
then greatest event_id) is not a 'delete', with that change's plan, region and time.
"""

from __future__ import annotations

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    latest: dict[int, dict] = {}
    for row in tables["accounts"].to_pylist():
        held = latest.get(row["account_id"])
        if held is None or (row["ts_event"], row["event_id"]) > (
            held["ts_event"],
            held["event_id"],
        ):
            latest[row["account_id"]] = row
    open_now = sorted(
        (row for row in latest.values() if row["op"] != "delete"), key=lambda r: r["account_id"]
    )
    return pa.table(
        {
            "account_id": pa.array([r["account_id"] for r in open_now], pa.int32()),
            "plan": pa.array([r["plan"] for r in open_now], pa.string()),
            "region": pa.array([r["region"] for r in open_now], pa.string()),
            "updated_at": pa.array([r["ts_event"] for r in open_now], pa.timestamp("us")),
        }
    )
