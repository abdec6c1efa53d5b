-- Rule control: the gold, except that an account with any delete is left out, even when it was
-- opened again afterwards (the text says an account can be opened again after it was closed).
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
    ORDER BY account_id, ts_event DESC, event_id DESC
) AS newest
WHERE account_id NOT IN (SELECT account_id FROM account_changes WHERE op = 'delete');
