-- Rule control: the gold, except that of two rows of an account with the same ts_event the smaller
-- event_id is the more recent (the text says the larger).
CREATE TABLE IF NOT EXISTS account_latest (
    account_id INTEGER PRIMARY KEY,
    op         VARCHAR,
    plan       VARCHAR,
    region     VARCHAR,
    ts_event   TIMESTAMP,
    event_id   BIGINT
);

MERGE INTO account_latest t
USING (
    SELECT account_id, op, plan, region, ts_event, event_id
    FROM accounts_batch
    QUALIFY row_number() OVER (PARTITION BY account_id ORDER BY ts_event DESC, event_id ASC) = 1
) s
ON t.account_id = s.account_id
WHEN MATCHED AND (s.ts_event > t.ts_event OR (s.ts_event = t.ts_event AND s.event_id < t.event_id)) THEN UPDATE SET
    op         = s.op,
    plan       = s.plan,
    region     = s.region,
    ts_event   = s.ts_event,
    event_id   = s.event_id
WHEN NOT MATCHED THEN INSERT (account_id, op, plan, region, ts_event, event_id)
    VALUES (s.account_id, s.op, s.plan, s.region, s.ts_event, s.event_id);

CREATE OR REPLACE TABLE account_state AS
SELECT account_id, plan, region, ts_event AS updated_at
FROM account_latest
WHERE op <> 'delete';
