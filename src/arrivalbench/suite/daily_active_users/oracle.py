"""Daily activity: one row per calendar day (date of `ts_event`) with at least one event;
`active_users` is the number of distinct users with an event that day and `events` the number
of events, of every action and page."""

from collections import defaultdict

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    users: dict[object, set] = defaultdict(set)
    events: dict[object, int] = defaultdict(int)
    for click in tables["clicks"].to_pylist():
        day = click["ts_event"].date()
        events[day] += 1
        if click["user_id"] is not None:
            users[day].add(click["user_id"])
    days = list(events)
    return pa.table(
        {
            "day": pa.array(days, pa.date32()),
            "active_users": pa.array([len(users[d]) for d in days], pa.int64()),
            "events": pa.array([events[d] for d in days], pa.int64()),
        }
    )
