-- Keeps a running count of purchase days per customer: each batch, once, adds its distinct days
-- that differ from the last day counted for that customer (batch and its ledger entry in one
-- transaction); the earliest purchase is kept with a min-merge.
CREATE TABLE IF NOT EXISTS loaded_batches (batch_id BIGINT PRIMARY KEY);

CREATE TABLE IF NOT EXISTS customer_progress (
    customer_id   INTEGER PRIMARY KEY,
    first_ts      TIMESTAMP,
    first_event   BIGINT,
    first_store   INTEGER,
    purchase_days BIGINT,
    last_day      DATE
);

BEGIN TRANSACTION;

MERGE INTO customer_progress p
USING (
    SELECT customer_id,
           min(ts_event)                                    AS first_ts,
           arg_min(event_id, (ts_event, event_id))          AS first_event,
           arg_min(store_id, (ts_event, event_id))          AS first_store,
           list(DISTINCT CAST(ts_event AS DATE))            AS days,
           max(CAST(ts_event AS DATE))                      AS last_day
    FROM sales_batch
    WHERE _batch_id NOT IN (SELECT batch_id FROM loaded_batches)
    GROUP BY customer_id
) b
ON p.customer_id = b.customer_id
WHEN MATCHED THEN UPDATE SET
    purchase_days = p.purchase_days + len(list_filter(b.days, lambda d: d <> p.last_day)),
    last_day      = b.last_day,
    first_ts      = CASE WHEN (b.first_ts, b.first_event) < (p.first_ts, p.first_event) THEN b.first_ts ELSE p.first_ts END,
    first_store   = CASE WHEN (b.first_ts, b.first_event) < (p.first_ts, p.first_event) THEN b.first_store ELSE p.first_store END,
    first_event   = CASE WHEN (b.first_ts, b.first_event) < (p.first_ts, p.first_event) THEN b.first_event ELSE p.first_event END
WHEN NOT MATCHED THEN INSERT
    (customer_id, first_ts, first_event, first_store, purchase_days, last_day)
    VALUES (b.customer_id, b.first_ts, b.first_event, b.first_store, len(b.days), b.last_day);

INSERT INTO loaded_batches
SELECT DISTINCT _batch_id FROM sales_batch
ON CONFLICT DO NOTHING;

COMMIT;

CREATE OR REPLACE TABLE first_purchase AS
SELECT customer_id, first_ts AS first_purchase_at, first_store AS first_store_id, purchase_days
FROM customer_progress;
