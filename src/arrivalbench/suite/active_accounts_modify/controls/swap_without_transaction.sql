-- Computes every account's newest change from the stored newest changes plus the load, then empties
-- the stored table and refills it, as separate statements with no transaction; counts per plan.
CREATE TABLE IF NOT EXISTS account_latest (
    account_id INTEGER PRIMARY KEY,
    op         VARCHAR,
    plan       VARCHAR,
    ts_event   TIMESTAMP,
    event_id   BIGINT
);

CREATE TEMP TABLE next_latest AS
SELECT DISTINCT ON (account_id) account_id, op, plan, ts_event, event_id
FROM (
    SELECT account_id, op, plan, ts_event, event_id FROM account_latest
    UNION ALL
    SELECT account_id, op, plan, ts_event, event_id FROM accounts_batch
) AS candidates
ORDER BY account_id, ts_event DESC, event_id DESC;

DELETE FROM account_latest;

INSERT INTO account_latest SELECT * FROM next_latest;

CREATE OR REPLACE TABLE active_accounts_by_plan AS
SELECT plan, count(*) AS active_accounts
FROM account_latest
WHERE op <> 'delete'
GROUP BY plan;
