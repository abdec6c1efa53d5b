-- The existing merge unchanged, plus the per-plan count taken from account_state after it.
CREATE TABLE IF NOT EXISTS account_state (
    account_id INTEGER PRIMARY KEY,
    plan       VARCHAR,
    region     VARCHAR,
    updated_at TIMESTAMP
);

MERGE INTO account_state AS t
USING (
    SELECT account_id, op, plan, region, ts_event
    FROM accounts_batch
    QUALIFY row_number() OVER (PARTITION BY account_id ORDER BY ts_event DESC, event_id DESC) = 1
) AS s
ON t.account_id = s.account_id
WHEN MATCHED AND s.op = 'delete' THEN DELETE
WHEN MATCHED AND s.ts_event >= t.updated_at THEN UPDATE SET
    plan       = s.plan,
    region     = s.region,
    updated_at = s.ts_event
WHEN NOT MATCHED AND s.op <> 'delete' THEN INSERT (account_id, plan, region, updated_at)
    VALUES (s.account_id, s.plan, s.region, s.ts_event);

CREATE OR REPLACE TABLE active_accounts_by_plan AS
SELECT plan, count(*) AS active_accounts
FROM account_state
GROUP BY plan;
