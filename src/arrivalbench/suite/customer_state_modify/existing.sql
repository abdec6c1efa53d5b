-- Keeps the newest change of each customer in customer_latest (newest by ts_event, then event_id)
-- and publishes customer_state from it after every batch.
CREATE TABLE IF NOT EXISTS customer_latest (
    customer_id INTEGER PRIMARY KEY,
    status      VARCHAR,
    ts_event    TIMESTAMP,
    event_id    BIGINT
);

MERGE INTO customer_latest AS cur
USING (
    SELECT customer_id, status, ts_event, event_id
    FROM customers_batch
    QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id DESC) = 1
) AS chg
ON cur.customer_id = chg.customer_id
WHEN MATCHED AND (chg.ts_event > cur.ts_event
                  OR (chg.ts_event = cur.ts_event AND chg.event_id > cur.event_id)) THEN
    UPDATE SET status = chg.status, ts_event = chg.ts_event, event_id = chg.event_id
WHEN NOT MATCHED THEN
    INSERT (customer_id, status, ts_event, event_id)
    VALUES (chg.customer_id, chg.status, chg.ts_event, chg.event_id);

CREATE OR REPLACE TABLE customer_state AS
SELECT customer_id, status, ts_event AS updated_at
FROM customer_latest;
