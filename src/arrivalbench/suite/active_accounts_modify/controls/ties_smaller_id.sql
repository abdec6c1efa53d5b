-- Rule control: the gold, except that of two rows of an account with the same ts_event the smaller
-- event_id is the more recent (the text says the larger).
CREATE TABLE IF NOT EXISTS account_history (
    event_id   BIGINT PRIMARY KEY,
    ts_event   TIMESTAMP,
    account_id INTEGER,
    op         VARCHAR,
    plan       VARCHAR,
    region     VARCHAR
);

INSERT INTO account_history
SELECT event_id, ts_event, account_id, op, plan, region
FROM accounts_batch
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE account_state AS
SELECT account_id, plan, region, updated_at
FROM (
    SELECT account_id,
           arg_max(op, (ts_event, -event_id))     AS op,
           arg_max(plan, (ts_event, -event_id))   AS plan,
           arg_max(region, (ts_event, -event_id)) AS region,
           max(ts_event)                         AS updated_at
    FROM account_history
    GROUP BY account_id
) AS newest
WHERE op <> 'delete';

CREATE OR REPLACE TABLE active_accounts_by_plan AS
SELECT plan, count(*) AS active_accounts
FROM account_state
GROUP BY plan;
