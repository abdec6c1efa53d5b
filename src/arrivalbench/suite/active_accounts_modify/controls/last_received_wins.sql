-- Treats the feed as arriving in change order: the last row received for an account in a load
-- replaces its stored latest change (a delete kept as a marker); counts per plan from that.
CREATE TABLE IF NOT EXISTS account_latest (
    account_id INTEGER PRIMARY KEY,
    op         VARCHAR,
    plan       VARCHAR,
    region     VARCHAR,
    ts_event   TIMESTAMP
);

INSERT OR REPLACE INTO account_latest
SELECT account_id, op, plan, region, ts_event
FROM accounts_batch
QUALIFY row_number() OVER (PARTITION BY account_id ORDER BY _arrival_seq DESC) = 1;

CREATE OR REPLACE TABLE active_accounts_by_plan AS
SELECT plan, count(*) AS active_accounts
FROM account_latest
WHERE op <> 'delete'
GROUP BY plan;
