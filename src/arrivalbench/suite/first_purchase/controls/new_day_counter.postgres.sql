-- PostgreSQL form of new_day_counter.sql (by hand: DuckDB's arg_min over a tuple, lists and lambdas
-- have no SQLite form). Same mistake: a running count of purchase days per customer, each batch
-- adding once its distinct days that differ from the last day counted; the earliest purchase is
-- kept with a min-merge.
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

CREATE TEMP TABLE fresh AS
SELECT * FROM sales_batch WHERE _batch_id NOT IN (SELECT batch_id FROM loaded_batches);

CREATE TEMP TABLE batch_first AS
SELECT customer_id, ts_event AS first_ts, event_id AS first_event, store_id AS first_store,
       (SELECT max(CAST(f2.ts_event AS DATE)) FROM fresh AS f2 WHERE f2.customer_id = f.customer_id)
           AS last_day
FROM (
    SELECT *, row_number() OVER (PARTITION BY customer_id ORDER BY ts_event, event_id) AS _w
    FROM fresh
) AS f
WHERE _w = 1;

CREATE TEMP TABLE batch_days AS SELECT DISTINCT customer_id, CAST(ts_event AS DATE) AS day FROM fresh;

UPDATE customer_progress AS p SET
    purchase_days = p.purchase_days + (
        SELECT count(*) FROM batch_days AS d
        WHERE d.customer_id = p.customer_id AND d.day <> p.last_day
    ),
    last_day      = b.last_day,
    first_ts      = CASE WHEN (b.first_ts, b.first_event) < (p.first_ts, p.first_event) THEN b.first_ts ELSE p.first_ts END,
    first_store   = CASE WHEN (b.first_ts, b.first_event) < (p.first_ts, p.first_event) THEN b.first_store ELSE p.first_store END,
    first_event   = CASE WHEN (b.first_ts, b.first_event) < (p.first_ts, p.first_event) THEN b.first_event ELSE p.first_event END
FROM batch_first AS b
WHERE p.customer_id = b.customer_id;

INSERT INTO customer_progress (customer_id, first_ts, first_event, first_store, purchase_days, last_day)
SELECT b.customer_id, b.first_ts, b.first_event, b.first_store,
       (SELECT count(*) FROM batch_days AS d WHERE d.customer_id = b.customer_id), b.last_day
FROM batch_first AS b
WHERE b.customer_id NOT IN (SELECT customer_id FROM customer_progress);

INSERT INTO loaded_batches SELECT DISTINCT _batch_id FROM sales_batch ON CONFLICT DO NOTHING;

COMMIT;

DROP TABLE IF EXISTS first_purchase;
CREATE TABLE first_purchase AS
SELECT customer_id, first_ts AS first_purchase_at, first_store AS first_store_id, purchase_days
FROM customer_progress;
