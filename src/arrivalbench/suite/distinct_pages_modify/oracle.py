"""Distinct users and views per page and calendar day (date of `ts_event`) on which the page had
at least one event of any action: `users` counts the distinct users with any event there that
day, `views` the events whose `action` is 'view' (0 when there are none)."""

from collections import defaultdict

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    users: dict[tuple, set] = defaultdict(set)
    views: dict[tuple, int] = {}
    for click in tables["clicks"].to_pylist():
        key = (click["page"], click["ts_event"].date())
        views[key] = views.get(key, 0) + (click["action"] == "view")
        if click["user_id"] is not None:
            users[key].add(click["user_id"])
    keys = list(views)
    return pa.table(
        {
            "page": pa.array([k[0] for k in keys], pa.string()),
            "day": pa.array([k[1] for k in keys], pa.date32()),
            "users": pa.array([len(users[k]) for k in keys], pa.int64()),
            "views": pa.array([views[k] for k in keys], pa.int64()),
        }
    )
