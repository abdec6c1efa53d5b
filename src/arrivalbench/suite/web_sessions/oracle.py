"""Second oracle for web_sessions: each user's clicks in time order, cut into sessions wherever a
click comes more than 30 minutes after the previous one; one row per session with its first and
last ts_event and its number of clicks.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

import pyarrow as pa

GAP = timedelta(minutes=30)
SCHEMA = pa.schema(
    [
        ("user_id", pa.int32()),
        ("session_start", pa.timestamp("us")),
        ("session_end", pa.timestamp("us")),
        ("events", pa.int64()),
    ]
)


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    """Walk every user's sorted click times, opening a session after each gap over 30 minutes."""
    times: dict[int, list[datetime]] = defaultdict(list)
    for click in tables["clicks"].to_pylist():
        times[click["user_id"]].append(click["ts_event"])
    rows = []
    for user_id, stamps in times.items():
        stamps.sort()
        session = None
        for ts in stamps:
            if session is None or ts - session["session_end"] > GAP:
                session = {"user_id": user_id, "session_start": ts, "session_end": ts, "events": 0}
                rows.append(session)
            session["session_end"] = ts
            session["events"] += 1
    return pa.Table.from_pylist(rows, schema=SCHEMA)
