"""Second oracle for daily_funnel: per day with any event, distinct users per action.

`viewers`, `cart_users` and `purchasers` count distinct users with a 'view', 'add_to_cart' and
'purchase' event that day, independently; `conversion` is purchasers / viewers, NULL without viewers.
"""

from __future__ import annotations

from datetime import date

import pyarrow as pa

ACTIONS = ("view", "add_to_cart", "purchase")


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    users: dict[date, dict[str, set[int]]] = {}
    for click in tables["clicks"].to_pylist():
        per_action = users.setdefault(click["ts_event"].date(), {a: set() for a in ACTIONS})
        if click["action"] in per_action and click["user_id"] is not None:
            per_action[click["action"]].add(click["user_id"])
    days = list(users)
    viewers = [len(users[d]["view"]) for d in days]
    purchasers = [len(users[d]["purchase"]) for d in days]
    return pa.table(
        {
            "day": pa.array(days, pa.date32()),
            "viewers": pa.array(viewers, pa.int64()),
            "cart_users": pa.array([len(users[d]["add_to_cart"]) for d in days], pa.int64()),
            "purchasers": pa.array(purchasers, pa.int64()),
            "conversion": pa.array(
                [p / v if v else None for p, v in zip(purchasers, viewers, strict=True)],
                pa.float64(),
            ),
        }
    )
