"""`arrivalbench new-task NAME`: a new task folder that already passes the gate, to edit from.

The scaffold is a small working task (events per day over the chosen generator's log, with one
negative control), so an author changes a task that works rather than filling in blanks.
"""

from __future__ import annotations

import re
from pathlib import Path

from arrivalbench.errors import UsageError
from arrivalbench.generators import get_generator, make_log  # noqa: F401  (registry side effect)
from arrivalbench.spec import SUITE_DIR, load_task

TASK_YAML = """\
schema_version: 1
id: {name}
title: Events per day (edit me)
mode: {mode}
difficulty: easy
difficulty_reason: one additive count over one source (edit me)
scenario: {name}
description: |
  Every row of `{source}` is one event. Maintain `{target}` with one row per calendar
  day (the date of `ts_event`) and `events`, the number of events of that day.
source:
  name: {source}
  columns:
    event_id: BIGINT
    ts_event: TIMESTAMP
  generator:
    kind: {generator}
    params: {{}}
target:
  name: {target}
  columns:
    day: DATE
    events: BIGINT
  key: [day]
hazards: [late_arrival, out_of_order, duplicate_delivery, crash_retry, backfill]
controls:
  - file: controls/dedup_history_only.sql
    fails: [duplicate_delivery]
  - file: controls/broken_watermark_drop.sql
    fails: [late_arrival, out_of_order, backfill]
"""
ORACLE = """\
-- Expected {target}: a batch query over the complete log (table `{source}`).
SELECT CAST(ts_event AS DATE) AS day, COUNT(*) AS events
FROM {source}
GROUP BY ALL
"""
GOLD = """\
-- Keep every event once, then derive the target from that history.
CREATE TABLE IF NOT EXISTS {source}_history (event_id BIGINT PRIMARY KEY, ts_event TIMESTAMP);

INSERT OR IGNORE INTO {source}_history
SELECT DISTINCT ON (event_id) event_id, ts_event
FROM {source}_batch
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE {target} AS
SELECT CAST(ts_event AS DATE) AS day, COUNT(*) AS events
FROM {source}_history
GROUP BY ALL;
"""
CONTROL_DEDUP = """\
-- Stages an event unless its id is already stored: an event sent again within one batch is kept twice.
CREATE TABLE IF NOT EXISTS {source}_history (event_id BIGINT, ts_event TIMESTAMP);

INSERT INTO {source}_history
SELECT event_id, ts_event FROM {source}_batch b
WHERE NOT EXISTS (SELECT 1 FROM {source}_history h WHERE h.event_id = b.event_id);

CREATE OR REPLACE TABLE {target} AS
SELECT CAST(ts_event AS DATE) AS day, COUNT(*) AS events
FROM {source}_history
GROUP BY ALL;
"""
CONTROL_WATERMARK = """\
-- Loads only events at or after the newest event time already stored.
CREATE TABLE IF NOT EXISTS {source}_history (event_id BIGINT PRIMARY KEY, ts_event TIMESTAMP);

INSERT OR IGNORE INTO {source}_history
SELECT DISTINCT ON (event_id) event_id, ts_event
FROM {source}_batch
WHERE ts_event >= (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM {source}_history)
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE {target} AS
SELECT CAST(ts_event AS DATE) AS day, COUNT(*) AS events
FROM {source}_history
GROUP BY ALL;
"""
EXISTING = """\
-- The pipeline the agent starts from (modify and repair tasks). Edit me: it must not already pass
-- the snapshot (for a repair task, give it the bug the description reports; here: it skips
-- events with an odd id).
CREATE OR REPLACE TABLE {target} AS
SELECT CAST(ts_event AS DATE) AS day, COUNT(*) AS events
FROM {source}_batch
WHERE event_id % 2 = 0
GROUP BY ALL;
"""


def new_task(
    name: str, mode: str = "create", generator: str = "sales", suite_dir: Path = SUITE_DIR
) -> Path:
    """Write a working task folder and return its path; refuse to overwrite anything."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise UsageError(
            f"task name {name!r}: use lower-case letters, digits and underscores, starting with a letter."
        )
    if mode not in ("create", "modify", "repair"):
        raise UsageError(f"mode {mode!r}: expected create, modify or repair.")
    get_generator(generator)
    folder = Path(suite_dir) / name
    if folder.exists():
        raise UsageError(f"{folder} already exists; choose another name or edit that task.")
    values = {
        "name": name,
        "mode": mode,
        "generator": generator,
        "source": "events",
        "target": name,
    }
    files = {
        "task.yaml": TASK_YAML,
        "oracle.sql": ORACLE,
        "gold.sql": GOLD,
        "controls/dedup_history_only.sql": CONTROL_DEDUP,
        "controls/broken_watermark_drop.sql": CONTROL_WATERMARK,
    }
    if mode != "create":
        files["existing.sql"] = EXISTING
    (folder / "controls").mkdir(parents=True)
    for relative, template in files.items():
        (folder / relative).write_text(template.format(**values), encoding="utf-8")
    load_task(folder)  # the scaffold must itself be a valid spec
    return folder
