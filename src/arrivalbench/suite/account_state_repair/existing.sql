-- account_state: the current plan and region of every account, kept up to date by merging in the
-- newest change of each account from every load.
CREATE TABLE IF NOT EXISTS account_state (
    account_id INTEGER PRIMARY KEY,
    plan       VARCHAR,
    region     VARCHAR,
    updated_at TIMESTAMP
);

MERGE INTO account_state t
USING (
    SELECT account_id, plan, region, ts_event
    FROM accounts_batch
    WHERE op IN ('insert', 'update')
    QUALIFY row_number() OVER (PARTITION BY account_id ORDER BY ts_event DESC, event_id DESC) = 1
) s
ON t.account_id = s.account_id
WHEN MATCHED AND s.ts_event >= t.updated_at THEN UPDATE SET
    plan       = s.plan,
    region     = s.region,
    updated_at = s.ts_event
WHEN NOT MATCHED THEN INSERT (account_id, plan, region, updated_at)
    VALUES (s.account_id, s.plan, s.region, s.ts_event);
