-- Stages the rows of batches not yet marked as loaded, marks the batch as loaded, then folds the
-- staged rows into the state; the mark and the fold are separate statements.
CREATE TABLE IF NOT EXISTS loaded_batches (batch_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS customer_first (
    customer_id INTEGER PRIMARY KEY,
    ts_event    TIMESTAMP,
    event_id    BIGINT,
    store_id    INTEGER
);

CREATE TABLE IF NOT EXISTS customer_days (
    customer_id INTEGER,
    day         DATE,
    PRIMARY KEY (customer_id, day)
);

CREATE TEMP TABLE staged AS
SELECT * FROM sales_batch
WHERE _batch_id NOT IN (SELECT batch_id FROM loaded_batches);

INSERT INTO loaded_batches
SELECT DISTINCT _batch_id FROM staged;

INSERT INTO customer_first
SELECT customer_id, ts_event, event_id, store_id
FROM staged
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event, event_id) = 1
ON CONFLICT (customer_id) DO UPDATE
SET ts_event = excluded.ts_event,
    event_id = excluded.event_id,
    store_id = excluded.store_id
WHERE excluded.ts_event < customer_first.ts_event
   OR (excluded.ts_event = customer_first.ts_event AND excluded.event_id < customer_first.event_id);

INSERT INTO customer_days
SELECT DISTINCT customer_id, CAST(ts_event AS DATE)
FROM staged
ON CONFLICT DO NOTHING;

CREATE OR REPLACE TABLE first_purchase AS
SELECT f.customer_id, f.ts_event AS first_purchase_at, f.store_id AS first_store_id, count(*) AS purchase_days
FROM customer_first f
JOIN customer_days d USING (customer_id)
GROUP BY ALL;
