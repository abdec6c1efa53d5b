"""Second oracle for funnel_conversion_modify: the daily funnel with cart users and conversion.

Per day with any event: distinct users per action; a viewer converted when a purchase of theirs
that day is at or after their earliest view that day; `view_to_purchase` = converted / viewers.
"""

from __future__ import annotations

from datetime import date, datetime

import pyarrow as pa

ACTIONS = ("view", "add_to_cart", "purchase")


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    users: dict[date, dict[str, set[int]]] = {}
    first_view: dict[tuple, datetime] = {}
    last_purchase: dict[tuple, datetime] = {}
    for click in tables["clicks"].to_pylist():
        ts, user, action = click["ts_event"], click["user_id"], click["action"]
        per_action = users.setdefault(ts.date(), {a: set() for a in ACTIONS})
        if action not in per_action or user is None:
            continue
        per_action[action].add(user)
        key = (ts.date(), user)
        if action == "view":
            first_view[key] = min(ts, first_view.get(key, ts))
        elif action == "purchase":
            last_purchase[key] = max(ts, last_purchase.get(key, ts))
    days = list(users)
    ratios = []
    for day in days:
        viewers = users[day]["view"]
        converted = [
            u for u in viewers if last_purchase.get((day, u), datetime.min) >= first_view[day, u]
        ]
        ratios.append(len(converted) / len(viewers) if viewers else None)
    return pa.table(
        {
            "day": pa.array(days, pa.date32()),
            "viewers": pa.array([len(users[d]["view"]) for d in days], pa.int64()),
            "cart_users": pa.array([len(users[d]["add_to_cart"]) for d in days], pa.int64()),
            "purchasers": pa.array([len(users[d]["purchase"]) for d in days], pa.int64()),
            "view_to_purchase": pa.array(ratios, pa.float64()),
        }
    )
