-- SQLite form of gold.sql: arg_max over (ts_event, event_id) is the newest row by row_number.
/* Every change is stored once (ON CONFLICT DO NOTHING on the event id); account_state and the */
/* per-plan count are both recomputed from that history with arg_max over (ts_event, event_id). */
CREATE TABLE IF NOT EXISTS account_history (
  event_id INTEGER PRIMARY KEY,
  ts_event TIMESTAMPNTZ,
  account_id INTEGER,
  op TEXT,
  plan TEXT,
  region TEXT
);
INSERT INTO account_history
SELECT
  event_id,
  ts_event,
  account_id,
  op,
  plan,
  region
FROM (
  SELECT
    event_id,
    ts_event,
    account_id,
    op,
    plan,
    region,
    ROW_NUMBER() OVER (PARTITION BY event_id ORDER BY _arrival_seq IS NULL ASC, _arrival_seq) AS _w
  FROM accounts_batch
  WHERE
    TRUE
) AS _t
WHERE
  _w = 1 ON CONFLICT DO NOTHING;
SAVEPOINT arrivalbench_replace;
DROP TABLE IF EXISTS account_state;
CREATE TABLE account_state AS
SELECT
  account_id,
  plan,
  region,
  updated_at
FROM (
  SELECT
    account_id,
    op,
    plan,
    region,
    ts_event AS updated_at
  FROM (
    SELECT
      *,
      ROW_NUMBER() OVER (PARTITION BY account_id ORDER BY ts_event DESC, event_id DESC) AS _w
    FROM account_history
  )
  WHERE
    _w = 1
) AS newest
WHERE
  op <> 'delete';
RELEASE arrivalbench_replace;
SAVEPOINT arrivalbench_replace;
DROP TABLE IF EXISTS active_accounts_by_plan;
CREATE TABLE active_accounts_by_plan AS
SELECT
  plan,
  COUNT(*) AS active_accounts
FROM account_state
GROUP BY
  plan;
RELEASE arrivalbench_replace;
