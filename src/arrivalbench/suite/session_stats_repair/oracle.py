"""Second oracle for session_stats_repair: each user's clicks in time order are cut into sessions
wherever a click comes more than 30 minutes after the previous one; per user, the number of
sessions, of clicks, and the longest session's first-to-last span in whole seconds.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

import pyarrow as pa

GAP = timedelta(minutes=30)
SCHEMA = pa.schema(
    [
        ("user_id", pa.int32()),
        ("sessions", pa.int64()),
        ("events", pa.int64()),
        ("longest_session_seconds", pa.int64()),
    ]
)


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    """Sessionise every user's sorted click times, tracking the widest session span."""
    times: dict[int, list[datetime]] = defaultdict(list)
    for click in tables["clicks"].to_pylist():
        times[click["user_id"]].append(click["ts_event"])
    rows = []
    for user_id, stamps in times.items():
        stamps.sort()
        sessions, longest = 0, timedelta(0)
        start = previous = None
        for ts in stamps:
            if previous is None or ts - previous > GAP:
                sessions += 1
                start = ts
            longest = max(longest, ts - start)
            previous = ts
        rows.append(
            {
                "user_id": user_id,
                "sessions": sessions,
                "events": len(stamps),
                "longest_session_seconds": longest // timedelta(seconds=1),
            }
        )
    return pa.Table.from_pylist(rows, schema=SCHEMA)
