-- The repaired pipeline: an upsert that keeps the newest change per customer by (ts_event,
-- event_id), remembering the event_id so that ties across loads are settled the same way.
CREATE TABLE IF NOT EXISTS customer_latest_status (
    customer_id INTEGER PRIMARY KEY,
    status      VARCHAR,
    ts_event    TIMESTAMP,
    event_id    BIGINT
);

INSERT INTO customer_latest_status
SELECT customer_id, status, ts_event, event_id
FROM customers_batch
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id DESC) = 1
ON CONFLICT (customer_id) DO UPDATE
SET status = excluded.status, ts_event = excluded.ts_event, event_id = excluded.event_id
WHERE excluded.ts_event > customer_latest_status.ts_event
   OR (excluded.ts_event = customer_latest_status.ts_event
       AND excluded.event_id > customer_latest_status.event_id);

CREATE OR REPLACE TABLE customer_status AS
SELECT customer_id, status, ts_event AS updated_at
FROM customer_latest_status;
