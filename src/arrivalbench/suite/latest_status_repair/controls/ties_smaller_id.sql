-- Rule control: the gold, except that of two changes with the same ts_event the smaller event_id
-- is the more recent (the text says the larger).
CREATE TABLE IF NOT EXISTS customer_latest_status (
    customer_id INTEGER PRIMARY KEY,
    status      VARCHAR,
    ts_event    TIMESTAMP,
    event_id    BIGINT
);

INSERT INTO customer_latest_status
SELECT customer_id, status, ts_event, event_id
FROM customers_batch
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id ASC) = 1
ON CONFLICT (customer_id) DO UPDATE
SET status = excluded.status, ts_event = excluded.ts_event, event_id = excluded.event_id
WHERE excluded.ts_event > customer_latest_status.ts_event
   OR (excluded.ts_event = customer_latest_status.ts_event
       AND excluded.event_id < customer_latest_status.event_id);

CREATE OR REPLACE TABLE customer_status AS
SELECT customer_id, status, ts_event AS updated_at
FROM customer_latest_status;
