"""Daily page views while `page` is new to the feed: one row per page and calendar day (date of
`ts_event`) with at least one 'view' event; an event without a page (NULL in the complete log,
or a row sent before the column existed) counts under 'unknown'; each `event_id` counts once."""

from collections import Counter

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    clicks = tables["clicks"]
    has_page = "page" in clicks.column_names
    views: Counter[tuple] = Counter()
    seen: set[int] = set()
    for click in clicks.to_pylist():
        if click["action"] != "view" or click["event_id"] in seen:
            continue
        seen.add(click["event_id"])
        page = click["page"] if has_page and click["page"] is not None else "unknown"
        views[(page, click["ts_event"].date())] += 1
    keys = list(views)
    return pa.table(
        {
            "page": pa.array([k[0] for k in keys], pa.string()),
            "day": pa.array([k[1] for k in keys], pa.date32()),
            "views": pa.array([views[k] for k in keys], pa.int64()),
        }
    )
