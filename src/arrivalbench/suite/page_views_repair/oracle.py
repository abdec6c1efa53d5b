"""Daily page views: one row per page and calendar day (date of `ts_event`) with at least one
event whose `action` is 'view'; `views` is the number of such events. Other actions do not count."""

from collections import Counter

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    views = Counter(
        (click["page"], click["ts_event"].date())
        for click in tables["clicks"].to_pylist()
        if click["action"] == "view"
    )
    keys = list(views)
    return pa.table(
        {
            "page": pa.array([k[0] for k in keys], pa.string()),
            "day": pa.array([k[1] for k in keys], pa.date32()),
            "views": pa.array([views[k] for k in keys], pa.int64()),
        }
    )
