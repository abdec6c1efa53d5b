-- Extends the merge in place: tier rides along and each batch adds its number of distinct change
-- ids to the stored count.
CREATE TABLE IF NOT EXISTS customer_latest (
    customer_id INTEGER PRIMARY KEY,
    status      VARCHAR,
    tier        VARCHAR,
    ts_event    TIMESTAMP,
    event_id    BIGINT,
    changes     BIGINT
);

MERGE INTO customer_latest AS cur
USING (
    SELECT customer_id, status, tier, ts_event, event_id,
           count(DISTINCT event_id) OVER (PARTITION BY customer_id) AS n_changes
    FROM customers_batch
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

CREATE OR REPLACE TABLE customer_state AS
SELECT customer_id, status, tier, ts_event AS updated_at, changes
FROM customer_latest;
