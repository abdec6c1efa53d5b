-- Merges each account's newest change of the batch straight into account_state: a delete removes
-- the row, an insert or update replaces it or adds it.
CREATE TABLE IF NOT EXISTS account_state (
    account_id INTEGER PRIMARY KEY,
    plan       VARCHAR,
    region     VARCHAR,
    updated_at TIMESTAMP
);

MERGE INTO account_state t
USING (
    SELECT account_id, op, plan, region, ts_event
    FROM accounts_batch
    QUALIFY row_number() OVER (PARTITION BY account_id ORDER BY ts_event DESC, event_id DESC) = 1
) s
ON t.account_id = s.account_id
WHEN MATCHED AND s.op = 'delete' THEN DELETE
WHEN MATCHED THEN UPDATE SET
    plan       = s.plan,
    region     = s.region,
    updated_at = s.ts_event
WHEN NOT MATCHED AND s.op <> 'delete' THEN INSERT (account_id, plan, region, updated_at)
    VALUES (s.account_id, s.plan, s.region, s.ts_event);
