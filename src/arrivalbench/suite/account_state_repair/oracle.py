"""Second oracle for account_state_repair: one row per account that exists now, that is whose
latest row (by ts_event, ties broken by the larger event_id) is an insert or update, carrying
that row's plan, region and ts_event as updated_at.
"""

from __future__ import annotations

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    history: dict[int, list[dict]] = {}
    for row in tables["accounts"].to_pylist():
        history.setdefault(row["account_id"], []).append(row)
    rows = []
    for account_id in sorted(history):
        last = max(history[account_id], key=lambda r: (r["ts_event"], r["event_id"]))
        if last["op"] in ("insert", "update"):
            rows.append((account_id, last["plan"], last["region"], last["ts_event"]))
    return pa.table(
        {
            "account_id": pa.array([r[0] for r in rows], pa.int32()),
            "plan": pa.array([r[1] for r in rows], pa.string()),
            "region": pa.array([r[2] for r in rows], pa.string()),
            "updated_at": pa.array([r[3] for r in rows], pa.timestamp("us")),
        }
    )
