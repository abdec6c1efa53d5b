-- Keeps the last received copy of every change in a history table and takes each account's last
-- received change (by _arrival_seq) as its current state, dropping accounts whose last received
-- change is a delete.
CREATE TABLE IF NOT EXISTS account_changes (
    event_id     BIGINT PRIMARY KEY,
    arrival_seq  BIGINT,
    ts_event     TIMESTAMP,
    account_id   INTEGER,
    op           VARCHAR,
    plan         VARCHAR,
    region       VARCHAR
);

INSERT OR REPLACE INTO account_changes
SELECT DISTINCT ON (event_id) event_id, _arrival_seq, ts_event, account_id, op, plan, region
FROM accounts_batch
ORDER BY event_id, _arrival_seq DESC;

CREATE OR REPLACE TABLE account_state AS
SELECT account_id, plan, region, ts_event AS updated_at
FROM (
    SELECT *
    FROM account_changes
    QUALIFY row_number() OVER (PARTITION BY account_id ORDER BY arrival_seq DESC) = 1
)
WHERE op <> 'delete';
