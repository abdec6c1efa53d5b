"""Second oracle for daily_sessions: each user's clicks in time order are cut into sessions
wherever a click comes more than 30 minutes after the previous one; per day on which a session
starts, the number of sessions starting then and of distinct users starting one.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime, timedelta

import pyarrow as pa

GAP = timedelta(minutes=30)
SCHEMA = pa.schema([("day", pa.date32()), ("sessions", pa.int64()), ("users", pa.int64())])


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    """Find each user's session starts, then count them and their users by the start's date."""
    times: dict[int, list[datetime]] = defaultdict(list)
    for click in tables["clicks"].to_pylist():
        times[click["user_id"]].append(click["ts_event"])
    sessions: dict[date, int] = defaultdict(int)
    users: dict[date, set[int]] = defaultdict(set)
    for user_id, stamps in times.items():
        stamps.sort()
        previous = None
        for ts in stamps:
            if previous is None or ts - previous > GAP:
                sessions[ts.date()] += 1
                users[ts.date()].add(user_id)
            previous = ts
    rows = [{"day": d, "sessions": n, "users": len(users[d])} for d, n in sessions.items()]
    return pa.Table.from_pylist(rows, schema=SCHEMA)
