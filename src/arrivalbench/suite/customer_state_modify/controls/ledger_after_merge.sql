-- Merges the changes whose ids are not yet recorded, adding their number to the stored count, and
-- records the ids afterwards in a separate statement.
CREATE TABLE IF NOT EXISTS customer_latest (
    customer_id INTEGER PRIMARY KEY,
    status      VARCHAR,
    tier        VARCHAR,
    ts_event    TIMESTAMP,
    event_id    BIGINT,
    changes     BIGINT
);

CREATE TABLE IF NOT EXISTS customer_change_ids (event_id BIGINT PRIMARY KEY);

CREATE TEMP TABLE fresh AS
SELECT DISTINCT ON (event_id) *
FROM customers_batch
WHERE event_id NOT IN (SELECT event_id FROM customer_change_ids)
ORDER BY event_id, _arrival_seq;

MERGE INTO customer_latest AS cur
USING (
    SELECT customer_id, status, tier, ts_event, event_id,
           count(*) OVER (PARTITION BY customer_id) AS n_changes
    FROM fresh
    QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id DESC) = 1
) AS chg
ON cur.customer_id = chg.customer_id
WHEN MATCHED AND (chg.ts_event > cur.ts_event
                  OR (chg.ts_event = cur.ts_event AND chg.event_id > cur.event_id)) THEN
    UPDATE SET status = chg.status, tier = chg.tier, ts_event = chg.ts_event, event_id = chg.event_id,
               changes = cur.changes + chg.n_changes
WHEN MATCHED THEN
    UPDATE SET changes = cur.changes + chg.n_changes
WHEN NOT MATCHED THEN
    INSERT (customer_id, status, tier, ts_event, event_id, changes)
    VALUES (chg.customer_id, chg.status, chg.tier, chg.ts_event, chg.event_id, chg.n_changes);

INSERT INTO customer_change_ids SELECT event_id FROM fresh;

CREATE OR REPLACE TABLE customer_state AS
SELECT customer_id, status, tier, ts_event AS updated_at, changes
FROM customer_latest;
