-- Rule control: the gold, except that of two rows of an account with the same ts_event the smaller
-- event_id is the more recent (the text says the larger).
CREATE TABLE IF NOT EXISTS account_changes (
    event_id   BIGINT PRIMARY KEY,
    ts_event   TIMESTAMP,
    account_id INTEGER,
    op         VARCHAR,
    plan       VARCHAR,
    region     VARCHAR
);

INSERT OR IGNORE INTO account_changes
SELECT DISTINCT ON (event_id) event_id, ts_event, account_id, op, plan, region
FROM accounts_batch
ORDER BY event_id, _arrival_seq;

CREATE OR REPLACE TABLE account_state AS
SELECT account_id, plan, region, ts_event AS updated_at
FROM (
    SELECT DISTINCT ON (account_id) account_id, op, plan, region, ts_event
    FROM account_changes
    ORDER BY account_id, ts_event DESC, event_id ASC
) AS newest
WHERE op <> 'delete';
