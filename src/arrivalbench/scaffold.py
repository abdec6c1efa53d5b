"""`arrivalbench new-task NAME`: a new task folder that already passes the gate, to edit from.

The scaffold is a small working task (events per day over the chosen generator's log, with its
second oracle in oracle.py and a negative control that earns each declared hazard), so an author
changes a task that works rather than filling in blanks.
It is written only into a folder the author names: writing into the installed suite would
silently change the suite hash of every later run, so that takes `--builtin`, in a source
checkout only.
"""

from __future__ import annotations

import re
from pathlib import Path

from arrivalbench.errors import UsageError
from arrivalbench.generators import describe_generator
from arrivalbench.spec import SUITE_DIR, SUITE_PATH_ENV, env_suite_dirs, load_task

TASK_YAML = """\
schema_version: 1
id: {name}
title: Events per day (edit me)
mode: {mode}
difficulty: easy
difficulty_reason: one additive count over one source (edit me)
scenario: {name}
order_sensitive: false
description: |
  Every row of `{source}` is one event. Maintain `{target}` with one row per calendar
  day (the date of `ts_event`) and `events`, the number of events of that day.
source:
  name: {source}
  # The {generator} generator produces these columns; declare the ones the task reads
  # (`arrivalbench generators` lists every generator's columns and params):
{produced}  columns:
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
  - file: controls/ledger_before_apply.sql
    fails: [crash_retry]
"""
ORACLE = """\
-- Expected {target}: a batch query over the complete log (table `{source}`).
SELECT CAST(ts_event AS DATE) AS day, COUNT(*) AS events
FROM {source}
GROUP BY ALL
"""
ORACLE_PY = '''\
"""Events per day: one row per calendar day (the date of `ts_event`) with its number of events.

The task's second oracle, written from the description and never from oracle.sql: `arrivalbench
audit --tasks {name}` checks that the two agree. Edit it together with the description.
"""

from collections import Counter

import pyarrow as pa


def oracle(tables: dict[str, pa.Table]) -> pa.Table:
    events = Counter(event["ts_event"].date() for event in tables["{source}"].to_pylist())
    return pa.table(
        {{
            "day": pa.array(list(events), pa.date32()),
            "events": pa.array(list(events.values()), pa.int64()),
        }}
    )
'''
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
CONTROL_LEDGER = """\
-- Records the load as processed first, so that a load seen before is skipped; the record and the
-- storing of its events are separate statements.
CREATE TABLE IF NOT EXISTS processed_batches (batch_id BIGINT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS {source}_history (event_id BIGINT PRIMARY KEY, ts_event TIMESTAMP);

CREATE TEMP TABLE this_batch AS
SELECT * FROM {source}_batch
WHERE _batch_id NOT IN (SELECT batch_id FROM processed_batches);

INSERT INTO processed_batches
SELECT DISTINCT _batch_id FROM {source}_batch
ON CONFLICT DO NOTHING;

INSERT OR IGNORE INTO {source}_history
SELECT DISTINCT ON (event_id) event_id, ts_event
FROM this_batch
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


CHANGE_TOGETHER: tuple[tuple[str, str], ...] = (
    (
        "task.yaml's description, oracle.sql, oracle.py",
        "the description says what the target holds, and both oracles compute exactly that "
        "(audit checks they agree)",
    ),
    (
        "task.yaml's source and target columns, and every .sql file",
        "the SQL reads the declared source columns and writes exactly the target's",
    ),
    (
        "gold.sql, controls/*.sql",
        "they maintain the same target from the same source, so a change to its shape goes "
        "into every one",
    ),
    (
        "task.yaml's hazards and controls, controls/*.sql",
        "each control is listed with the hazards it fails, and each hazard is earned by one",
    ),
    (
        "existing.sql",
        "the starting pipeline (modify and repair) reads and writes the same columns, and must "
        "not already pass the snapshot",
    ),
)
"""The files of a task that change together: what new-task prints after writing one."""


def change_together(mode: str) -> tuple[tuple[str, str], ...]:
    """CHANGE_TOGETHER for a task of `mode` (a create task has no existing.sql)."""
    return tuple(e for e in CHANGE_TOGETHER if mode != "create" or "existing.sql" not in e[0])


def builtin_is_source_checkout() -> bool:
    """True when the built-in suite is `src/arrivalbench/suite` of a checkout, not an installed copy."""
    package = SUITE_DIR.resolve().parent
    return package.parent.name == "src" and (package.parent.parent / "pyproject.toml").is_file()


def new_task_dir(suite_dir: Path | None = None, builtin: bool = False) -> Path:
    """The folder new-task writes into: `suite_dir`, else the first entry of ARRIVALBENCH_SUITE_PATH;
    the built-in suite only with `builtin`, in a source checkout. Never a default."""
    if builtin and suite_dir is not None:
        raise UsageError("new-task: pass --suite-dir DIR or --builtin, not both.")
    if builtin:
        if not builtin_is_source_checkout():
            raise UsageError(
                f"new-task --builtin writes into the built-in suite, which only a source checkout "
                f"may do; this one is installed at {SUITE_DIR}. Pass --suite-dir DIR instead."
            )
        return SUITE_DIR
    if suite_dir is None:
        entries = env_suite_dirs()
        if not entries:
            raise UsageError(
                "new-task writes only into a folder you name: pass --suite-dir DIR (created if "
                f"missing) or set {SUITE_PATH_ENV}; nothing was written."
            )
        suite_dir = Path(entries[0])
    if Path(suite_dir).resolve() == SUITE_DIR.resolve():
        raise UsageError(
            f"{suite_dir} is the built-in suite, and a task written there changes the suite hash; "
            "pass another --suite-dir, or --builtin to do it on purpose (source checkouts only)."
        )
    return Path(suite_dir)


def _taken(name: str) -> Path | None:
    """A task folder of this id already in the built-in suite or an ARRIVALBENCH_SUITE_PATH folder."""
    for folder in (SUITE_DIR, *map(Path, env_suite_dirs())):
        if (folder / name / "task.yaml").is_file():
            return folder / name
    return None


def new_task(name: str, mode: str = "create", generator: str = "sales", *, suite_dir: Path) -> Path:
    """Write a working task folder into `suite_dir` and return its path; refuse to overwrite anything
    or to reuse an id of the suite path (the built-in suite and ARRIVALBENCH_SUITE_PATH)."""
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise UsageError(
            f"task name {name!r}: use lower-case letters, digits and underscores, starting with a letter."
        )
    if mode not in ("create", "modify", "repair"):
        raise UsageError(f"mode {mode!r}: expected create, modify or repair.")
    produced = describe_generator(generator)["columns"]
    suite_dir = Path(suite_dir)
    if suite_dir.exists() and not suite_dir.is_dir():
        raise UsageError(f"{suite_dir}: not a folder; pass a folder to hold task folders.")
    if (suite_dir / "task.yaml").is_file():
        raise UsageError(
            f"{suite_dir} is itself a task folder; pass the folder that holds task folders, "
            f"e.g. --suite-dir {suite_dir.parent}"
        )
    folder = suite_dir / name
    if folder.exists():
        raise UsageError(f"{folder} already exists; choose another name or edit that task.")
    taken = _taken(name)
    if taken is not None:
        raise UsageError(
            f"task '{name}' already exists at {taken}; task ids are unique across the suite path, "
            "so choose another name."
        )
    values = {
        "name": name,
        "mode": mode,
        "generator": generator,
        "produced": "".join(f"  #   {c}: {t}\n" for c, t in produced.items()),
        "source": "events",
        "target": name,
    }
    files = {
        "task.yaml": TASK_YAML,
        "oracle.sql": ORACLE,
        "oracle.py": ORACLE_PY,
        "gold.sql": GOLD,
        "controls/dedup_history_only.sql": CONTROL_DEDUP,
        "controls/broken_watermark_drop.sql": CONTROL_WATERMARK,
        "controls/ledger_before_apply.sql": CONTROL_LEDGER,
    }
    if mode != "create":
        files["existing.sql"] = EXISTING
    (folder / "controls").mkdir(parents=True)
    for relative, template in files.items():
        (folder / relative).write_text(template.format(**values), encoding="utf-8")
    load_task(folder)  # the scaffold must itself be a valid spec
    return folder
