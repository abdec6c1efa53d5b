-- The existing upsert widened to keep the earliest and the latest purchase time (each replaced
-- only by a more extreme one), plus the set of (customer, store) pairs the store count comes from;
-- every statement can run again on the same batch without changing the result.
CREATE TABLE IF NOT EXISTS customer_first (
    customer_id INTEGER PRIMARY KEY,
    first_at    TIMESTAMP,
    last_at     TIMESTAMP
);

CREATE TABLE IF NOT EXISTS customer_stores (
    customer_id INTEGER,
    store_id    INTEGER,
    PRIMARY KEY (customer_id, store_id)
);

INSERT INTO customer_first
SELECT customer_id, min(ts_event), max(ts_event)
FROM sales_batch
GROUP BY customer_id
ON CONFLICT (customer_id) DO UPDATE
SET first_at = least(customer_first.first_at, excluded.first_at),
    last_at  = greatest(customer_first.last_at, excluded.last_at);

INSERT OR IGNORE INTO customer_stores
SELECT DISTINCT customer_id, store_id FROM sales_batch WHERE store_id IS NOT NULL;

CREATE OR REPLACE TABLE customer_first_purchase AS
SELECT f.customer_id,
       f.first_at AS first_purchase_at,
       f.last_at  AS last_purchase_at,
       (SELECT count(*) FROM customer_stores s WHERE s.customer_id = f.customer_id) AS stores_visited
FROM customer_first f;
