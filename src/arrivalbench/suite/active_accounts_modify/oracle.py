"""Second oracle for active_accounts_modify: the number of active accounts per plan, an account
being active when its most recent row (greatest ts_event, then larger event_id) is not a
'delete', and counting under that row's plan; plans with no active account are absent.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    log = tables["accounts"]
    accounts = log.column("account_id").to_pylist()
    times = log.column("ts_event").to_pylist()
    ids = log.column("event_id").to_pylist()
    ops = log.column("op").to_pylist()
    plans = log.column("plan").to_pylist()
    order = sorted(range(log.num_rows), key=lambda i: (times[i], ids[i]))
    most_recent: dict[int, int] = {}
    for i in order:  # oldest first, so the last assignment per account is its most recent row
        most_recent[accounts[i]] = i
    per_plan = Counter(plans[i] for i in most_recent.values() if ops[i] != "delete")
    names = sorted(per_plan)
    return pa.table(
        {
            "plan": pa.array(names, pa.string()),
            "active_accounts": pa.array([per_plan[p] for p in names], pa.int64()),
        }
    )
