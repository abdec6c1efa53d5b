-- Notes the ids of the load's unseen changes first, then merges the newest of those changes per
-- account (a delete kept as a marker) into the latest-change table, in separate statements.
CREATE TABLE IF NOT EXISTS seen_changes (event_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS account_latest (
    account_id INTEGER PRIMARY KEY,
    op         VARCHAR,
    plan       VARCHAR,
    region     VARCHAR,
    ts_event   TIMESTAMP,
    event_id   BIGINT
);

CREATE TEMP TABLE unseen AS
SELECT DISTINCT ON (event_id) event_id, ts_event, account_id, op, plan, region
FROM accounts_batch
WHERE event_id NOT IN (SELECT event_id FROM seen_changes)
ORDER BY event_id, _arrival_seq;

INSERT INTO seen_changes SELECT event_id FROM unseen;

MERGE INTO account_latest AS t
USING (
    SELECT * FROM unseen
    QUALIFY row_number() OVER (PARTITION BY account_id ORDER BY ts_event DESC, event_id DESC) = 1
) AS s
ON t.account_id = s.account_id
WHEN MATCHED AND (s.ts_event > t.ts_event OR (s.ts_event = t.ts_event AND s.event_id > t.event_id)) THEN
    UPDATE SET op = s.op, plan = s.plan, region = s.region, ts_event = s.ts_event, event_id = s.event_id
WHEN NOT MATCHED THEN
    INSERT (account_id, op, plan, region, ts_event, event_id)
    VALUES (s.account_id, s.op, s.plan, s.region, s.ts_event, s.event_id);

CREATE OR REPLACE TABLE account_state AS
SELECT account_id, plan, region, ts_event AS updated_at
FROM account_latest
WHERE op <> 'delete';
