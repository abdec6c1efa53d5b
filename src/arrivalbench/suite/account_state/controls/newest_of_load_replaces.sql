-- Keeps one latest-change row per account (a delete kept as a marker) and lets each load's newest
-- change of an account replace the stored row, without comparing it to the stored one.
CREATE TABLE IF NOT EXISTS account_latest (
    account_id INTEGER PRIMARY KEY,
    op         VARCHAR,
    plan       VARCHAR,
    region     VARCHAR,
    ts_event   TIMESTAMP
);

INSERT OR REPLACE INTO account_latest
SELECT account_id, op, plan, region, ts_event
FROM accounts_batch
QUALIFY row_number() OVER (PARTITION BY account_id ORDER BY ts_event DESC, event_id DESC) = 1;

CREATE OR REPLACE TABLE account_state AS
SELECT account_id, plan, region, ts_event AS updated_at
FROM account_latest
WHERE op <> 'delete';
