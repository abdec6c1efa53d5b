-- Merges each account's newest change of the load into the stored row: a delete removes the row,
-- any other change replaces it or adds it.
CREATE TABLE IF NOT EXISTS open_accounts (
    account_id INTEGER PRIMARY KEY,
    plan       VARCHAR,
    region     VARCHAR,
    ts_event   TIMESTAMP,
    event_id   BIGINT
);

CREATE TEMP TABLE newest AS
SELECT account_id, op, plan, region, ts_event, event_id
FROM accounts_batch
QUALIFY row_number() OVER (PARTITION BY account_id ORDER BY ts_event DESC, event_id DESC) = 1;

DELETE FROM open_accounts
WHERE account_id IN (SELECT account_id FROM newest WHERE op = 'delete');

INSERT INTO open_accounts
SELECT account_id, plan, region, ts_event, event_id
FROM newest
WHERE op <> 'delete'
ON CONFLICT (account_id) DO UPDATE
SET plan = excluded.plan, region = excluded.region,
    ts_event = excluded.ts_event, event_id = excluded.event_id;

CREATE OR REPLACE TABLE account_state AS
SELECT account_id, plan, region, ts_event AS updated_at
FROM open_accounts;
