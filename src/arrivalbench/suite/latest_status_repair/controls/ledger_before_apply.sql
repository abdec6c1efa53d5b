-- Records the load as processed first, so that a load seen before is skipped; the record and the
-- upsert of the newest changes are separate statements.
CREATE TABLE IF NOT EXISTS loaded_batches (batch_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS customer_latest_status (
    customer_id INTEGER PRIMARY KEY,
    status      VARCHAR,
    ts_event    TIMESTAMP,
    event_id    BIGINT
);

CREATE TEMP TABLE unseen AS
SELECT * FROM customers_batch
WHERE _batch_id NOT IN (SELECT batch_id FROM loaded_batches);

INSERT INTO loaded_batches
SELECT DISTINCT _batch_id FROM customers_batch
ON CONFLICT DO NOTHING;

INSERT INTO customer_latest_status
SELECT customer_id, status, ts_event, event_id
FROM unseen
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC, event_id DESC) = 1
ON CONFLICT (customer_id) DO UPDATE
SET status = excluded.status, ts_event = excluded.ts_event, event_id = excluded.event_id
WHERE excluded.ts_event > customer_latest_status.ts_event
   OR (excluded.ts_event = customer_latest_status.ts_event
       AND excluded.event_id > customer_latest_status.event_id);

CREATE OR REPLACE TABLE customer_status AS
SELECT customer_id, status, ts_event AS updated_at
FROM customer_latest_status;
