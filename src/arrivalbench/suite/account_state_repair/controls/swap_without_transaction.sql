-- Computes the new latest change per account from the stored latest changes plus the batch, then
-- empties the stored table and refills it, as separate statements with no transaction.
CREATE TABLE IF NOT EXISTS account_latest (
    account_id INTEGER PRIMARY KEY,
    op         VARCHAR,
    plan       VARCHAR,
    region     VARCHAR,
    ts_event   TIMESTAMP,
    event_id   BIGINT
);

CREATE TEMP TABLE next_latest AS
SELECT account_id, op, plan, region, ts_event, event_id
FROM (
    SELECT account_id, op, plan, region, ts_event, event_id FROM account_latest
    UNION ALL
    SELECT account_id, op, plan, region, ts_event, event_id FROM accounts_batch
)
QUALIFY row_number() OVER (PARTITION BY account_id ORDER BY ts_event DESC, event_id DESC) = 1;

DELETE FROM account_latest;

INSERT INTO account_latest SELECT * FROM next_latest;

CREATE OR REPLACE TABLE account_state AS
SELECT account_id, plan, region, ts_event AS updated_at
FROM account_latest
WHERE op <> 'delete';
